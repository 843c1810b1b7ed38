/**
 * The typed errors of the server. Third-party errors are translated into these where they enter
 * (the sandbox adapters, the config loader). A tool call that throws an AppError becomes a tool result with
 * `isError: true` and the error's message (`tools/registry.ts`); anything else becomes a logged JSON-RPC internal
 * error.
 */

/** Machine-readable error codes, for the code that catches an AppError; the caller reads the message. */
export type ErrorCode =
  | 'invalid_input'
  | 'not_found'
  | 'sandbox_timeout'
  | 'sandbox_error'
  | 'sandbox_gone'
  /** The sandbox's disk (or its quota) is full. */
  | 'disk_full'
  /** More bytes than a limit allows (an upload past its cap). */
  | 'too_large'
  /** A client stopped sending what it started (an upload that stalled). */
  | 'request_timeout'
  | 'backend_auth'
  | 'backend_busy'
  | 'backend_unreachable'
  | 'rate_limited'
  | 'capacity'
  | 'internal';

/** An error whose message is safe to show to the caller: it names what was wrong and what to do. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'AppError';
  }
}

/** Start-up configuration problems, all of them at once. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** True when `err` is an AppError, optionally with the given code. */
export function isAppError(err: unknown, code?: ErrorCode): err is AppError {
  return err instanceof AppError && (code === undefined || err.code === code);
}

/** The `code` of a Node system error (`ENOENT`, `EACCES`, …), or `undefined`. */
export function toErrnoCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  return typeof err.code === 'string' ? err.code : undefined;
}

/** A thrown value in words for a log line or a problem report: an Error's message, a string as it is; never a stack. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === 'string' ? err : 'non-error thrown';
}

/** The log fields of an unexpected failure: `Name: message`, and the stack to find it by. */
export function toFaultFields(err: unknown): { error: string; stack: string | undefined } {
  return err instanceof Error
    ? { error: `${err.name}: ${err.message}`, stack: err.stack }
    : { error: describeError(err), stack: undefined };
}
