/**
 * The file-URL part of the configuration (MCP_FILE_URL_*, MCP_FILE_URLS): how long and how large the URLs of
 * `get_file_url` may be, and whose URLs they are (docs/files.md).
 */
import { readPublicUrl } from './config-oauth';

/** File URL settings. */
export interface FileUrlConfig {
  /** MCP_FILE_URL_MAX_S: the longest a URL may live. @default 86400 (a day) */
  readonly maxExpiresS: number;
  /** MCP_FILE_URL_MAX_BYTES: the largest upload a URL takes. @default 1 GiB */
  readonly maxBytes: number;
  /**
   * MCP_FILE_URLS: `auto` (E2B's own signed URLs for sandboxes that have them, else the server's; the server's on
   * Alibaba Cloud's service, which signs no URLs of secure sandboxes), `server` (always the server's), or `backend`
   * (E2B's, refusing where there are none). Here `auto` is already resolved for Alibaba Cloud. @default auto
   */
  readonly source: 'auto' | 'server' | 'backend';
  /** MCP_MAX_FILE_TRANSFERS: transfers through the server's URLs in flight on one instance at most. @default 32 */
  readonly maxTransfers: number;
  /** MCP_PUBLIC_URL: the origin file URLs start with. @default the origin each request came to */
  readonly publicOrigin: string | undefined;
  /**
   * The largest request body that reaches the server: FC takes 32 MB per synchronous request; elsewhere no limit
   * but `maxBytes`. @default unlimited
   */
  readonly platformMaxBodyBytes: number | undefined;
}

type Env = Record<string, string | undefined>;

/** FC's cap on a synchronous request's body (32 MB), counted in decimal to stay under it whatever the unit. */
export const FC_MAX_REQUEST_BYTES = 32_000_000;

const DEFAULT_MAX_BYTES = 2 ** 30;

export function loadFileUrlConfig(
  env: Env,
  problems: string[],
  int: (name: string, fallback: number, min: number, max: number) => number,
  where: { onFc: boolean; onAlibaba: boolean },
): FileUrlConfig {
  const { onFc, onAlibaba } = where;
  const source = env.MCP_FILE_URLS?.trim() || 'auto';
  if (source !== 'auto' && source !== 'server' && source !== 'backend')
    problems.push(`MCP_FILE_URLS must be auto, server or backend (got "${source}")`);
  return {
    maxExpiresS: int('MCP_FILE_URL_MAX_S', 86_400, 60, 7 * 86_400),
    maxBytes: int('MCP_FILE_URL_MAX_BYTES', DEFAULT_MAX_BYTES, 1024, 2 ** 40),
    maxTransfers: int('MCP_MAX_FILE_TRANSFERS', 32, 1, 10_000),
    source: source === 'server' || source === 'backend' ? source : onAlibaba ? 'server' : 'auto',
    publicOrigin: readPublicUrl(env, []),
    platformMaxBodyBytes: onFc ? FC_MAX_REQUEST_BYTES : undefined,
  };
}
