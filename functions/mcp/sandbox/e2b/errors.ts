/**
 * The one mapping from E2B SDK errors to AppErrors. Every message is ours; where an E2B detail is worth
 * showing it is redacted first, since SDK texts may quote request data.
 */
import { AppError, toErrnoCode } from '../../errors';
import type { E2BErrorClasses } from './sdk';

/** What was being done, for the message. */
export interface E2BErrorContext {
  /** e.g. "creating the sandbox", "reading /home/user/a.txt". */
  operation: string;
  /** E2B_TEMPLATE, for template errors. */
  template: string;
  /** The API key, to be scrubbed from any detail. */
  apiKey: string | undefined;
}

/** The sandbox ran out its lease or was killed outside this server: the SDK reports it as a timeout. */
const SANDBOX_ENDED = /sandbox timeout|end of life|sandbox was killed|is not running/i;
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);

/** Removes anything that could be a credential from an SDK message, and bounds its length. */
export function redact(text: string, apiKey: string | undefined): string {
  let out = apiKey === undefined || apiKey === '' ? text : text.split(apiKey).join('[redacted]');
  out = out
    .replace(/e2b_[A-Za-z0-9_]+/g, '[redacted]')
    .replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi, '$1 [redacted]')
    .replace(
      /(x-api-key|authorization|access[-_]token|x-access-token)(["']?\s*[:=]\s*["']?)[^\s"',;}]+/gi,
      '$1$2[redacted]',
    )
    .replace(/\b[A-Za-z0-9_-]{40,}\b/g, '[redacted]');
  return out.length > 300 ? `${out.slice(0, 300)}…` : out;
}

/** Whether `err` or one of its causes (four deep: fetch wraps the socket's error) is what `is` looks for. */
export function someCause(err: unknown, is: (e: unknown) => boolean): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 4; depth += 1) {
    if (is(e)) return true;
    e = typeof e === 'object' && 'cause' in e ? e.cause : undefined;
  }
  return false;
}

/** True for errors that mean the network path to E2B failed (DNS, refused, reset, fetch failure). */
export function isNetworkError(err: unknown): boolean {
  return someCause(
    err,
    (e) =>
      NETWORK_CODES.has(toErrnoCode(e) ?? '') || (e instanceof TypeError && /fetch failed|network/i.test(e.message)),
  );
}

/** A fetch aborted by its timeout (DOMException TimeoutError / AbortError), in any realm. */
function isAbortLike(err: unknown): boolean {
  const name = typeof err === 'object' && err !== null && 'name' in err ? err.name : undefined;
  return name === 'TimeoutError' || name === 'AbortError';
}

/** Maps an SDK error to an AppError; anything unrecognized is returned as is (logged upstream as internal). */
export function toE2BAppError(err: unknown, classes: E2BErrorClasses, ctx: E2BErrorContext): unknown {
  if (err instanceof AppError) return err;
  const detail = err instanceof Error ? redact(err.message, ctx.apiKey) : '';
  if (err instanceof classes.AuthenticationError) {
    return new AppError(
      'backend_auth',
      'E2B rejected the server’s credentials: the operator should check E2B_API_KEY (and E2B_DOMAIN / ' +
        'E2B_API_URL for Alibaba Cloud).',
      { cause: err },
    );
  }
  if (err instanceof classes.RateLimitError) {
    return new AppError(
      'rate_limited',
      `E2B is rate-limiting this account (HTTP 429) while ${ctx.operation}; retry in a minute.`,
      { cause: err },
    );
  }
  if (err instanceof classes.ServiceBusyError) {
    return new AppError(
      'backend_busy',
      `E2B is temporarily unavailable (HTTP 503) while ${ctx.operation}; retry in a few seconds.`,
      { cause: err },
    );
  }
  if (
    err instanceof classes.SandboxNotFoundError ||
    (err instanceof classes.TimeoutError && SANDBOX_ENDED.test(err.message))
  ) {
    return new AppError(
      'sandbox_gone',
      'The sandbox has expired or was shut down outside this server, so files and state from it are gone. ' +
        'The next call starts a fresh sandbox.',
      { cause: err },
    );
  }
  // The SDK's own timeouts are TimeoutErrors; a fetch that hit its request timeout is a DOMException named so.
  if (err instanceof classes.TimeoutError || isAbortLike(err)) {
    return new AppError(
      'sandbox_timeout',
      `E2B did not answer in time while ${ctx.operation}; retry, or split the work.`,
      { cause: err },
    );
  }
  if (err instanceof classes.NotEnoughSpaceError) {
    return new AppError('disk_full', 'The sandbox is out of disk space; delete files and retry.', { cause: err });
  }
  if (err instanceof classes.FileNotFoundError || err instanceof classes.NotFoundError) {
    return new AppError('not_found', `Not found while ${ctx.operation}.`, { cause: err });
  }
  if (err instanceof classes.InvalidArgumentError) {
    return new AppError('invalid_input', `E2B refused ${ctx.operation}: ${detail}`, { cause: err });
  }
  if (err instanceof classes.TemplateError) {
    return new AppError(
      'sandbox_error',
      `The E2B template "${ctx.template}" cannot be used (E2B_TEMPLATE): ${detail}`,
      { cause: err },
    );
  }
  if (isNetworkError(err)) {
    return new AppError(
      'backend_unreachable',
      `Cannot reach E2B while ${ctx.operation}; check E2B_DOMAIN / E2B_API_URL and the function's internet ` +
        'access, then retry.',
      { cause: err },
    );
  }
  if (err instanceof classes.SandboxError) {
    return new AppError('sandbox_error', `The E2B sandbox failed while ${ctx.operation}: ${detail}`, { cause: err });
  }
  // Anything else is a bug or an error nobody classified: it is logged as such, so only a redacted copy goes on.
  return err instanceof Error ? redactedCopy(err, detail) : err;
}

/** `err` with its message (and the message line of its stack) replaced by `detail`, its frames kept. */
function redactedCopy(err: Error, detail: string): Error {
  const copy = new Error(detail);
  copy.name = err.name;
  const frames = (err.stack ?? '').split('\n').filter((line) => /^\s+at /.test(line));
  copy.stack = [`${err.name}: ${detail}`, ...frames].join('\n');
  return copy;
}
