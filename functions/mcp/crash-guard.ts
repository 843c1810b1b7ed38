/** Keeps a bug reached from one request from taking every session down with the process. */
import type { Logger } from './log';

function describe(err: unknown): { error: string; stack: string | undefined } {
  return err instanceof Error ? { error: `${err.name}: ${err.message}`, stack: err.stack } : { error: 'non-error thrown', stack: undefined };
}

/** Logs uncaught exceptions and unhandled rejections instead of exiting. */
export function installCrashGuards(logger: Logger): void {
  process.on('uncaughtException', (err) => logger.error('uncaught exception', describe(err)));
  process.on('unhandledRejection', (reason) => logger.error('unhandled rejection', describe(reason)));
}
