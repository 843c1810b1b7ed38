/**
 * Making the URLs of `get_file_url`: the backend's own signed URL where it has one and the settings allow
 * (E2B's, for sandboxes created `secure`: the bytes then never pass through this server or FC), else one the
 * server serves itself at `/files/<name>?t=<token>` (http/file-route.ts), signed for exactly this sandbox, path,
 * method, size cap and expiry.
 */
import { posix } from 'node:path';

import type { FileUrlConfig } from '../config-files';
import type { IncomingRequest } from '../http/context';
import { AppError } from '../errors';
import type { Sandbox } from '../sandbox/types';
import type { SandboxPlace } from '../sessions/sandbox-access';
import { toUriComponent } from '../uri-component';
import type { FileUrlSigner } from './file-url-token';

/** The path every file URL the server serves starts with (http/file-route.ts serves them). */
export const FILES_PATH = '/files/';

/** How long a URL lives when the call does not say. */
export const DEFAULT_EXPIRES_S = 15 * 60;

/** The longest URL handed out: FC takes at most 4 KB of path and query, and so do many proxies. */
const MAX_URL_CHARS = 4000;

export interface FileUrlRequest {
  readonly path: string;
  readonly mode: 'download' | 'upload';
  /** @default DEFAULT_EXPIRES_S, at most MCP_FILE_URL_MAX_S */
  readonly expiresS?: number;
}

/** A URL made for a file. */
export interface IssuedFileUrl {
  readonly url: string;
  readonly method: 'GET' | 'PUT' | 'POST';
  readonly expiresAt: Date;
  /** The file as the sandbox sees it. */
  readonly path: string;
  /** A download's size now; an upload's cap (`null`: no cap this server enforces). */
  readonly maxBytes: number | null;
  /** Who serves it: this server, or the backend (E2B) directly. */
  readonly servedBy: 'server' | 'backend';
  /** How to use it, beyond a plain GET or PUT. */
  readonly note?: string;
}

/** Makes file URLs for one call's sandbox. */
export interface FileUrls {
  readonly maxExpiresS: number;
  issue(sandbox: Sandbox, req: FileUrlRequest): Promise<IssuedFileUrl>;
}

/** Where a request came to, as its headers say: its Host, and the scheme a proxy in front names. */
export interface RequestOrigin {
  readonly host: string;
  readonly scheme?: 'http' | 'https';
}

/** Makes a call's `FileUrls` from its sandbox's place and where its request came to. */
export type FileUrlFactory = (place: SandboxPlace, origin: RequestOrigin) => FileUrls;

export interface FileUrlFactoryOptions {
  readonly signer: FileUrlSigner;
  readonly config: FileUrlConfig;
  readonly now: () => number;
}

export function createFileUrlFactory({ signer, config, now }: FileUrlFactoryOptions): FileUrlFactory {
  return (place, requestOrigin) => ({
    maxExpiresS: config.maxExpiresS,
    async issue(sandbox, req) {
      const expiresS = Math.min(req.expiresS ?? DEFAULT_EXPIRES_S, config.maxExpiresS);
      const expiresAtS = Math.floor(now() / 1000) + expiresS;
      const expiresAt = new Date(expiresAtS * 1000);
      let path: string;
      let sizeBytes: number | undefined;
      if (req.mode === 'download') {
        // The file must be there now, and a regular one: a URL that could only fail is not handed out.
        const source = await sandbox.openFile(req.path);
        await source.close();
        path = source.path;
        sizeBytes = source.sizeBytes;
      } else {
        path = posix.resolve(sandbox.info().workdir, req.path);
      }
      if (config.source !== 'server') {
        const native = await sandbox.nativeFileUrl?.(path, req.mode, expiresS);
        if (native !== undefined) {
          const maxBytes = req.mode === 'download' ? (sizeBytes ?? null) : null;
          const note = native.note === undefined ? {} : { note: native.note };
          return { url: native.url, method: native.method, expiresAt, path, maxBytes, servedBy: 'backend', ...note };
        }
        if (config.source === 'backend') {
          throw new AppError(
            'invalid_input',
            "This sandbox has no signed file URLs of the backend's own (MCP_FILE_URLS=backend); the operator can " +
              'set MCP_FILE_URLS=auto to have the server serve them.',
          );
        }
      }
      const uploadCap = Math.min(config.maxBytes, config.platformMaxBodyBytes ?? Number.POSITIVE_INFINITY);
      const maxBytes = req.mode === 'download' ? (sizeBytes ?? 0) : uploadCap;
      const token = signer.sign({
        place,
        sandboxId: sandbox.info().id,
        path,
        mode: req.mode,
        expiresAtS,
        maxBytes,
      });
      // FC's front end speaks https to clients, and plain http to the function.
      const scheme = requestOrigin.scheme ?? (config.platformMaxBodyBytes === undefined ? 'http' : 'https');
      const origin = config.publicOrigin ?? `${scheme}://${requestOrigin.host}`;
      const url = `${origin}${FILES_PATH}${toUriComponent(posix.basename(path))}?t=${token}`;
      if (url.length > MAX_URL_CHARS) {
        throw new AppError(
          'invalid_input',
          `The path is too long for a URL (${url.length} characters); use a shorter one.`,
        );
      }
      return { url, method: req.mode === 'download' ? 'GET' : 'PUT', expiresAt, path, maxBytes, servedBy: 'server' };
    },
  });
}

/** Where `req` came to, by its Host and X-Forwarded-Proto. */
export function originOf(req: IncomingRequest): RequestOrigin {
  const host = req.headers.get('host') ?? 'localhost';
  const forwarded = req.headers.get('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase();
  return forwarded === 'https' || forwarded === 'http' ? { host, scheme: forwarded } : { host };
}
