/**
 * get_preview_url for a local sandbox. With a network of its own, its ports are reached through a forwarder on
 * the host whose connections its supervisor carries in, behind a capability (preview-forwarder.ts); on the host's
 * network its ports are the host's, with nothing in front of them.
 */
import type { Clock } from '../../clock';
import { AppError, toErrnoCode } from '../../errors';
import type { PreviewInfo } from '../types';
import { isListening } from './host-processes';
import { PreviewForwarder, PreviewPortsBusy } from './preview-forwarder';
import type { PreviewSigner } from './preview-token';
import type { Supervisor } from './supervisor';

/** Where previews of a sandbox with its own network are served (preview-forwarder.ts). */
export interface PreviewSettings {
  /** The address the forwarders listen on (LOCAL_SANDBOX_PREVIEW_HOST). */
  readonly host: string;
  /**
   * Whether the server's clients reach that address: it is public on purpose, or the server itself listens
   * only on loopback (its clients are on this host).
   */
  readonly reachable: boolean;
  /** Signs the capability tokens of preview URLs (preview-token.ts). */
  readonly signer: PreviewSigner;
  /** LOCAL_SANDBOX_PREVIEW_DOMAIN: URLs then name `<sandbox id>.<domain>`, the sandbox's own host name. */
  readonly domain?: string;
}

export interface SandboxPreviewOptions {
  /** The sandbox's id, which its tokens are bound to. */
  readonly id: string;
  /** False on the host's network (isolation none, or LOCAL_SANDBOX_NETWORK=on). */
  readonly ownNetwork: boolean;
  readonly settings: PreviewSettings;
  readonly clock: Clock;
  /** The sandbox's supervisor while one runs; never starts one. */
  readonly supervisor: () => Promise<Supervisor | undefined>;
  /** The sandbox has ended. */
  readonly isGone: () => boolean;
}

/** The error of a call on a sandbox that ended. */
export const SANDBOX_ENDED = 'This sandbox has been shut down; the next call starts a new one.';

const HOST_NETWORK_NOTE =
  "This sandbox shares the host's network (LOCAL_SANDBOX_ISOLATION=none or LOCAL_SANDBOX_NETWORK=on), so the port " +
  "is the host's own and no preview front can gate it: anyone who can reach the port on this host opens it, " +
  'without a token, and other hosts too if the app listens beyond 127.0.0.1.';

export class SandboxPreview {
  /** Preview listeners on the host, when the sandbox has a network of its own. */
  private readonly forwarder: PreviewForwarder | undefined;

  constructor(private readonly options: SandboxPreviewOptions) {
    const { id, settings, clock, supervisor } = options;
    const auth = { signer: settings.signer, sandbox: id, now: () => clock.now() };
    // A sandbox id (`local-` and 16 hex digits) is a DNS label: the sandbox's own host name, and so its own
    // cookie jar.
    const name = settings.domain === undefined ? {} : { name: `${id}.${settings.domain}` };
    this.forwarder = options.ownNetwork
      ? new PreviewForwarder({ host: settings.host, ...name, supervisor, auth })
      : undefined;
  }

  /** The URL that opens `port`, whether something listens there, and what the caller should know. */
  async open(port: number): Promise<PreviewInfo> {
    if (this.forwarder === undefined) {
      // No network of its own: its ports are the host's, which no forwarder stands in front of.
      const url = `http://127.0.0.1:${port}`;
      return { url, listening: await isListening(port), reachable: true, note: HOST_NETWORK_NOTE };
    }
    // The sandbox's own network: only its processes reach the port, so only they can say whether it listens,
    // and the URL is a forwarder's on the host, whose connections its supervisor carries in.
    const supervisor = await this.options.supervisor();
    const listening = supervisor === undefined ? false : await supervisor.probe(port);
    const { host, reachable } = this.options.settings;
    const url = await this.forwarder.open(port).catch((err: unknown) => {
      throw this.openError(err);
    });
    const access = accessNote(port);
    if (reachable) return { url, listening, reachable, note: access };
    return { url, listening, reachable: false, note: `${elsewhereNote(url, host)} ${access}` };
  }

  /** Closes every listener and connection. */
  close(): void {
    this.forwarder?.close();
  }

  private openError(err: unknown): AppError {
    if (this.options.isGone()) return new AppError('sandbox_error', SANDBOX_ENDED);
    if (err instanceof PreviewPortsBusy) {
      return new AppError(
        'sandbox_error',
        `This sandbox already previews ${err.maxPorts} ports, each with connections open: close those ` +
          'connections, and the least recently asked-for port makes room.',
      );
    }
    const { host } = this.options.settings;
    return new AppError(
      'sandbox_error',
      `Could not open a preview port on ${host} (${toErrnoCode(err) ?? 'error'}; LOCAL_SANDBOX_PREVIEW_HOST).`,
      { cause: err },
    );
  }
}

/** The token is the whole of the access: a model that trims the URL, or a script that drops the cookie, is shut out. */
function accessNote(port: number): string {
  return (
    "The URL carries an access token for this sandbox's port: give it whole. A browser trades it for a cookie on " +
    "a redirect; a script must follow the redirect with cookies on (e.g. curl -L -b '' '<url>'). Inside the " +
    `sandbox the app is at http://127.0.0.1:${port}.`
  );
}

/** The note of a preview on the server's host whose clients are elsewhere. */
function elsewhereNote(url: string, host: string): string {
  const { hostname, port: hostPort } = new URL(url);
  const named = hostname === host ? '' : `, then open it with ${hostname} still in the URL`;
  return (
    `It listens on the server's host only (${host}), and this server's clients are elsewhere: open it on that ` +
    `host, or forward it to your machine (e.g. ssh -L ${hostPort}:${host}:${hostPort} <server>${named}). The ` +
    'operator can serve previews on an address clients reach with LOCAL_SANDBOX_PREVIEW_HOST and ' +
    'LOCAL_SANDBOX_PREVIEW_PUBLIC=on.'
  );
}
