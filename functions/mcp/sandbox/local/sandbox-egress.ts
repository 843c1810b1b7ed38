/**
 * A local sandbox's way out, when its policy lets anything out (egress/policy.ts): its network namespace keeps no
 * route out, its supervisor listens on 127.0.0.1:EGRESS_PROXY_PORT inside it, and every process of it finds that
 * listener in the proxy variables that curl, pip, npm, git, Python and Node read. Connections to it are carried
 * to the server's egress proxy (egress/proxy.ts), which judges and makes them.
 *
 * A sandbox with secrets (egress/secrets.ts) also trusts its own certificate authority (egress/authority.ts),
 * made anew at each start of its supervisor: a trust bundle of the host's authorities and that one is written
 * beside the workspace, where the sandbox cannot change it, and bound read-only over the system bundles and at
 * TRUST_BUNDLE, which the usual variables name. Only the authority's certificate enters the sandbox.
 */
import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { createAuthority, type SandboxAuthority } from '../../egress/authority';
import type { EgressPolicy } from '../../egress/policy';
import { type SandboxSecret, secretDomains } from '../../egress/secrets';
import { AppError, toErrnoCode } from '../../errors';
import type { SandboxStream } from './supervisor-streams';

/** The port of the supervisor's egress listener, inside the sandbox's own network. */
export const EGRESS_PROXY_PORT = 3128;

/** Where the trust bundle is inside the sandbox (the root is bubblewrap's own, so the path can always be made). */
export const TRUST_BUNDLE = '/etc-sandbox-trust.pem';
/** The system trust bundles of the usual distributions: each one present on the host is covered by the bundle. */
export const SYSTEM_BUNDLES = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/cert.pem',
];

/** What a sandbox with egress needs: its policy (shown by sandbox_status) and where its connections go. */
export interface SandboxEgress {
  readonly policy: EgressPolicy;
  /** The secrets its requests get at the egress point (never inside it). */
  readonly secrets: readonly SandboxSecret[];
  /** Takes one connection from inside, carried by the supervisor that trusts `authority`. */
  serve(stream: SandboxStream, authority: SandboxAuthority | undefined): void;
}

/** What one start of a supervisor needs for egress: its authority, and the files bound for it. */
export interface EgressLaunch {
  readonly authority?: SandboxAuthority;
  /** Host file, and where it is bound read-only inside. */
  readonly files: readonly (readonly [string, string])[];
}

/**
 * A new authority and its trust bundle in `dir` (the workspace's server-side directory) when the sandbox has
 * secrets; nothing otherwise.
 */
export async function prepareEgressLaunch(
  egress: SandboxEgress,
  sandboxId: string,
  dir: string,
): Promise<EgressLaunch> {
  if (egress.secrets.length === 0) return { files: [] };
  const authority = createAuthority(sandboxId, secretDomains(egress.secrets));
  const found = await Promise.all(
    SYSTEM_BUNDLES.map((path) =>
      access(path).then(
        () => path,
        () => undefined,
      ),
    ),
  );
  const present = found.filter((path): path is string => path !== undefined);
  // One bundle holds the host's authorities; the others present are the same list under other names.
  const hostBundle = present[0] === undefined ? '' : await readFile(present[0], 'utf8').catch(() => '');
  const bundle = join(dir, 'egress-trust.pem');
  // Rewritten in place: no process of the sandbox runs while its supervisor starts, and on a workspace whose disk
  // the sandbox filled, the old bundle's blocks are what the new one (the same size, to a few bytes) is written to.
  await writeFile(bundle, `${hostBundle.trimEnd()}\n${authority.certificatePem}`, { mode: 0o644 }).catch((err) => {
    const code = toErrnoCode(err) ?? 'error';
    const message = `Could not write the sandbox's trust bundle (${code}); nothing was run.`;
    throw new AppError('sandbox_error', message, { cause: err });
  });
  return { authority, files: [[bundle, TRUST_BUNDLE], ...present.map((path) => [bundle, path] as const)] };
}

/**
 * The variables that name the trust bundle at `path` (inside the sandbox) for the clients that do not read the
 * system one (or not only it).
 */
export function trustEnv(path = TRUST_BUNDLE): Record<string, string> {
  return {
    SSL_CERT_FILE: path,
    CURL_CA_BUNDLE: path,
    REQUESTS_CA_BUNDLE: path,
    PIP_CERT: path,
    GIT_SSL_CAINFO: path,
    NODE_EXTRA_CA_CERTS: path,
  };
}

/**
 * The variables that point every usual client at the listener on 127.0.0.1:`port`; the sandbox's own addresses
 * stay direct.
 */
export function proxyEnv(port = EGRESS_PROXY_PORT): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  const direct = 'localhost,127.0.0.1,::1';
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    ALL_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    all_proxy: url,
    NO_PROXY: direct,
    no_proxy: direct,
    // Node 24 reads the variables above only when asked to.
    NODE_USE_ENV_PROXY: '1',
  };
}
