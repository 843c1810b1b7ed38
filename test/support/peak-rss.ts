/**
 * For the flood tests (test/reliability/): a server's peak resident memory on Linux (VmHWM), with the reset that
 * starts a measurement, and another tenant's calls made while an attack runs.
 */
import { readFileSync, writeFileSync } from 'node:fs';

import type { TestClient } from './clients';

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

/** Runs `victim`'s calls one after another until `attack` settles; resolves to how many came back right. */
export async function victimCallsWhile(victim: TestClient, attack: Promise<unknown>): Promise<number> {
  let settled = false;
  void attack.finally(() => (settled = true)).catch(() => undefined);
  let served = 0;
  while (!settled) {
    const result = await victim.callTool('run_command', { command: 'echo alive' });
    if (result.structuredContent?.stdout === 'alive\n' && !settled) served += 1;
  }
  return served;
}
