/** One JSON object per line, for FC's log service. Fields are flat and never carry secrets. */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, string | number | boolean | null | undefined>;

const LEVEL_RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A structured logger; `flush` resolves once everything written so far has left the process. */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  flush(): Promise<void>;
}

/** Where log lines go: a writable stream such as `process.stdout` (HTTP) or `process.stderr` (stdio). */
export interface LogSink {
  write(chunk: string, callback?: (err?: Error | null) => void): boolean;
}

/** The stream side of a sink: `process.stdout` or `process.stderr`. */
export interface LogStream {
  write(chunk: string, callback?: (err?: Error | null) => void): boolean;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/**
 * A sink over a stream that can fail (EPIPE once the reader went away, ENOSPC on a full disk, a closed
 * pipe): logging must never endanger serving. The first failure is handed to `onBroken` once (to say so on
 * another stream, if that one works); from then on lines are dropped. The stream's errors never reach the
 * process as uncaught exceptions, so the crash guard cannot loop through a broken sink.
 */
export function createStreamSink(stream: LogStream, onBroken: (err: Error) => void = () => undefined): LogSink {
  let broken = false;
  const fail = (err: Error): void => {
    if (broken) return;
    broken = true;
    try {
      onBroken(err);
    } catch {
      // Nowhere left to say it.
    }
  };
  stream.on('error', fail);
  return {
    write(chunk, callback) {
      if (!broken) {
        try {
          return stream.write(chunk, (err) => {
            if (err) fail(err);
            callback?.();
          });
        } catch (err: unknown) {
          fail(err instanceof Error ? err : new Error(String(err)));
        }
      }
      callback?.();
      return true;
    },
  };
}

/**
 * The sink for the server's log on `stream`, with a failure reported once on `fallback` (itself guarded:
 * an error there is ignored).
 */
export function createProcessLogSink(stream: LogStream, fallback: LogStream, name: string): LogSink {
  fallback.on('error', () => undefined);
  return createStreamSink(stream, (err) => {
    const code = (err as NodeJS.ErrnoException).code ?? err.message;
    fallback.write(`Log output on ${name} failed (${code}); log lines are dropped from now on, and serving goes on.\n`);
  });
}

/** True for the names LOG_LEVEL accepts. */
export function isLogLevel(value: string): value is LogLevel {
  return value in LEVEL_RANK;
}

/** Creates a logger that writes lines at or above `level` to `sink`. */
export function createLogger(sink: LogSink, level: LogLevel = 'info', now: () => Date = () => new Date()): Logger {
  const threshold = LEVEL_RANK[level];
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields): void => {
    if (LEVEL_RANK[lvl] < threshold) return;
    sink.write(`${JSON.stringify({ time: now().toISOString(), level: lvl, msg, ...fields })}\n`);
  };
  return {
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
    flush: () => new Promise((resolve) => sink.write('', () => resolve())),
  };
}

/** A logger that drops everything (tests, benchmarks). */
export const SILENT_LOGGER: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  flush: async () => undefined,
};
