/**
 * run_code on E2B, read bounded. The code interpreter SDK's `runCode` keeps every output line and result of an
 * execution in memory until the execution ends, and reads each line of its answer whole, so code in the sandbox
 * would decide how much this server holds. This sends the request the SDK sends (`POST /execute` on the
 * sandbox's interpreter port, with the same headers, body and deadlines) and reads the answer's JSON lines with
 * the bounded reader the local kernel's channel uses (bounded-lines.ts), handing each output line and result on
 * as it comes: nothing of an execution is kept here, and a line too long to hold is skipped and counted.
 */
import { toErrnoCode } from '../../errors';
import { BoundedLineReader, jsonObjectOf } from '../bounded-lines';
import { MAX_CODE_RESULT_BYTES } from '../code-results';
import { readStreamAtMost } from '../read-limit';
import type { CodeError } from '../types';
import { someCause } from './errors';

/** The SDK's error classes an execution's failures are made of. */
export type ExecuteErrors = Pick<typeof import('e2b'), 'TimeoutError' | 'NotFoundError' | 'SandboxError'>;

/** The longest line of an answer kept: a result that could fit the results' budget, and its JSON around it. */
export const MAX_EXECUTE_LINE_BYTES = MAX_CODE_RESULT_BYTES + 256 * 1024;
/** What the SDK waits by default for the answer's headers and for the whole execution, in milliseconds. */
const DEFAULT_TIMEOUT_MS = 60_000;

/** One rich result, in the formats this server uses (the interpreter sends more). */
export interface ExecuteResult {
  readonly text?: string;
  readonly png?: string;
  readonly jpeg?: string;
}

export interface ExecuteOptions {
  readonly language?: string;
  readonly envs?: Record<string, string>;
  /** The whole execution's deadline, from the answer's headers on. @default 60 s */
  readonly timeoutMs?: number;
  onStdout?(text: string): void;
  onStderr?(text: string): void;
  onResult?(result: ExecuteResult): void;
  /** A line over MAX_EXECUTE_LINE_BYTES went by (its length in bytes); nothing of it was kept. */
  onDropped?(bytes: number): void;
}

/** How an execution ended: its output and results went to the callbacks. */
export interface ExecutionOutcome {
  readonly error?: CodeError;
}

/** Where and how to send an execution: what the SDK's sandbox object knows (sdk.ts). */
export interface ExecuteTarget {
  /** `<jupyter url>/execute`, with the SDK's `source` parameter when it has one. */
  readonly url: string;
  readonly headers: Record<string, string>;
  /** The deadline for the answer's headers, in milliseconds. */
  readonly requestTimeoutMs: number | undefined;
  /** Whether the sandbox still runs (a connection closed mid-answer may mean it was killed). */
  isRunning(): Promise<boolean>;
}

/** Runs `code` at `target`; SDK error classes for what fails, as the SDK's own `runCode` throws them. */
export async function execute(
  target: ExecuteTarget,
  code: string,
  opts: ExecuteOptions,
  errors: ExecuteErrors,
): Promise<ExecutionOutcome> {
  const controller = new AbortController();
  const requestTimeoutMs = target.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  let phase: 'request' | 'execution' = 'request';
  /** Which deadline passed, if one did: what an error after it means. */
  let expired: 'request' | 'execution' | undefined;
  const expire = (): void => {
    expired = phase;
    controller.abort();
  };
  let deadline = requestTimeoutMs > 0 ? setTimeout(expire, requestTimeoutMs) : undefined;
  try {
    const res = await fetch(target.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...target.headers },
      body: JSON.stringify({ code, language: opts.language, env_vars: opts.envs }),
      signal: controller.signal,
      keepalive: true,
    });
    const failure = await statusError(res, errors);
    if (failure !== undefined) throw failure;
    if (res.body === null) throw new errors.SandboxError(`The interpreter answered ${res.status} without a body`);
    clearTimeout(deadline);
    phase = 'execution';
    const executionMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    deadline = executionMs > 0 ? setTimeout(expire, executionMs) : undefined;
    return await readAnswer(res.body, opts);
  } catch (err: unknown) {
    if (expired !== undefined) {
      throw new errors.TimeoutError(
        expired === 'execution'
          ? "Execution timed out — the 'timeoutMs' option can be used to increase this timeout"
          : "Request timed out — the 'requestTimeoutMs' option can be used to increase this timeout",
      );
    }
    if (isConnectionClosed(err) && (await target.isRunning().catch(() => true)) === false) {
      throw new errors.TimeoutError('The sandbox was killed while the request was in progress.');
    }
    throw err;
  } finally {
    clearTimeout(deadline);
    controller.abort();
  }
}

/** Reads the answer's lines, each to its callback. */
async function readAnswer(body: ReadableStream<Uint8Array>, opts: ExecuteOptions): Promise<ExecutionOutcome> {
  let error: CodeError | undefined;
  const lines = new BoundedLineReader({
    limitBytes: () => MAX_EXECUTE_LINE_BYTES,
    onLine: (line) => {
      const message = jsonObjectOf(line);
      switch (message?.type) {
        case 'stdout':
          if (typeof message.text === 'string') opts.onStdout?.(message.text);
          break;
        case 'stderr':
          if (typeof message.text === 'string') opts.onStderr?.(message.text);
          break;
        case 'result':
          opts.onResult?.({ text: stringOf(message.text), png: stringOf(message.png), jpeg: stringOf(message.jpeg) });
          break;
        case 'error':
          error = {
            name: stringOf(message.name) ?? 'Error',
            value: stringOf(message.value) ?? '',
            traceback: stringOf(message.traceback) ?? '',
          };
          break;
        default:
        // keepalive, number_of_executions, end_of_execution, and what this server does not use.
      }
    },
    onDropped: (bytes) => opts.onDropped?.(bytes),
  });
  for await (const chunk of body) lines.feed(chunk);
  lines.end();
  return error === undefined ? {} : { error };
}

const stringOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** The SDK's errors for an answer that is not 200 (its `extractError`); the body is read at most 4 KiB. */
async function statusError(res: Response, errors: ExecuteErrors): Promise<Error | undefined> {
  if (res.ok) return undefined;
  const body =
    res.body === null
      ? ''
      : Buffer.from(await readStreamAtMost(res.body, 4096).catch(() => new Uint8Array())).toString('utf8');
  if (res.status === 502) return new errors.TimeoutError(`${body}: This error is likely due to sandbox timeout.`);
  if (res.status === 404) return new errors.NotFoundError(body);
  return new errors.SandboxError(`${res.status} ${res.statusText}`);
}

/**
 * What a connection the sandbox's side closed throws (the SDK's check before it asks whether the sandbox still runs).
 */
const CONNECTION_CLOSED_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);
const isConnectionClosed = (err: unknown): boolean =>
  someCause(err, (e) => CONNECTION_CLOSED_CODES.has(toErrnoCode(e) ?? ''));
