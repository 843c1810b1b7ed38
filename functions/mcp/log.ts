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
