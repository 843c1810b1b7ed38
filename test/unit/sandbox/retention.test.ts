/** The rules of retention and of the caps on sleeping sandboxes (sandbox/retention.ts). */
import { deleteAtMs, isPastRetention, toMakeRoom } from '../../../functions/mcp/sandbox/retention';

const DAY = 86_400_000;
const sleeping = (lastUsedMs: number, diskBytes?: number) => ({
  lastUsedMs,
  state: 'sleeping' as const,
  ...(diskBytes !== undefined && { diskBytes }),
});

it('deletes a sandbox its retention after its last use, an unnamed one sooner once nothing can name it', () => {
  expect(deleteAtMs({ lastUsedMs: 0 }, 7 * DAY)).toBe(7 * DAY);
  expect(deleteAtMs({ lastUsedMs: 0, reachableUntilMs: DAY / 4 }, 7 * DAY)).toBe(DAY / 4);
  expect(deleteAtMs({ lastUsedMs: 0, reachableUntilMs: 9 * DAY }, 7 * DAY)).toBe(7 * DAY);
  expect(isPastRetention({ lastUsedMs: 0 }, DAY, DAY - 1)).toBe(false);
  expect(isPastRetention({ lastUsedMs: 0 }, DAY, DAY)).toBe(true);
});

it('makes room from the least recently used sleeping sandboxes, never a running one', () => {
  const policy = { retentionMs: DAY, maxSleeping: 2 };
  const a = sleeping(1);
  const b = sleeping(2);
  const c = sleeping(3);
  const running = { lastUsedMs: 0, state: 'running' as const };
  expect(toMakeRoom([c, a, running, b], policy, 0)).toEqual({
    deleted: [a],
    setting: 'MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL',
  });
  // Two running ones and one to be made will sleep too: only one sleeping may stay.
  expect(toMakeRoom([c, a, b], policy, 1).deleted).toEqual([a, b]);
  expect(toMakeRoom([running, running, running], policy, 3)).toEqual({ deleted: [] });
  expect(toMakeRoom([a], policy, 1)).toEqual({ deleted: [] });
});

it('makes room for the disk cap too, naming it when only the disk was past its cap', () => {
  const policy = { retentionMs: DAY, maxSleeping: 10, maxSleepingDiskBytes: 100 };
  const big = sleeping(1, 80);
  const small = sleeping(2, 30);
  const unknown = sleeping(0);
  expect(toMakeRoom([small, big, unknown], policy, 0)).toEqual({
    deleted: [big],
    setting: 'MCP_MAX_SLEEPING_DISK_MB_PER_CREDENTIAL',
  });
  expect(toMakeRoom([small], policy, 0)).toEqual({ deleted: [] });
});
