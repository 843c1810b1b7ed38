/**
 * The URIs of sandbox files as MCP resources: `sandbox://<sandbox>/<path>`, the path absolute in the sandbox, each
 * segment percent-encoded. `<sandbox>` names whose sandbox: `session` (the 2025 session's, or the stdio
 * connection's, whichever sandbox it works in) or a 2026-07-28 sandbox handle, checked like a tool call's.
 */

import { toUriComponent } from '../uri-component';

/** The `<sandbox>` of a 2025 session's (or a stdio connection's) own sandbox. */
export const SESSION_SANDBOX = 'session';

/** The resource template every lane lists. */
export const SANDBOX_FILE_TEMPLATE = 'sandbox://{sandbox}/{+path}';

/** The URI of `path` (absolute) in the sandbox `sandbox` names. */
export function toSandboxUri(sandbox: string, path: string): string {
  const segments = path.split('/').filter((segment) => segment !== '');
  return `sandbox://${sandbox}/${segments.map(toUriComponent).join('/')}`;
}

/** What a sandbox URI names, or `undefined` when it is not one. */
export function parseSandboxUri(uri: string): { sandbox: string; path: string } | undefined {
  const match = /^sandbox:\/\/([A-Za-z0-9._-]+)\/([^?#]*)$/.exec(uri);
  if (match === null) return undefined;
  const [, sandbox = '', rest = ''] = match;
  let segments: string[];
  try {
    segments = rest.split('/').map(decodeURIComponent);
  } catch {
    return undefined;
  }
  if (segments.some((segment) => segment.includes('/') || segment.includes('\0'))) return undefined;
  return { sandbox, path: `/${segments.join('/')}` };
}
