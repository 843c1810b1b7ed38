/** Keeps a bug reached from one request from taking every session down with the process. */
import { toFaultFields } from './errors';
import type { Logger } from './log';

/** Logs uncaught exceptions and unhandled rejections instead of exiting. */
export function installCrashGuards(logger: Logger): void {
  process.on('uncaughtException', (err) => logger.error('uncaught exception', toFaultFields(err)));
  process.on('unhandledRejection', (reason) => logger.error('unhandled rejection', toFaultFields(reason)));
}
