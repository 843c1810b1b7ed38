/** A child process's peak resident memory on Linux (VmHWM), with the reset that starts a measurement. */
import { readFileSync, writeFileSync } from 'node:fs';

/** Writing 5 to clear_refs resets the process's peak RSS (VmHWM) to its current RSS. */
export function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/** The process's peak RSS since the last reset, in MiB. */
export function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]);
  return Math.round(kib / 1024);
}
