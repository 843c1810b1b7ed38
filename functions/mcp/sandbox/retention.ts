/**
 * How long sandboxes are kept, and which go when an owner has too many asleep: the rules both backends' catalogs
 * apply, as pure functions of what they know of each sandbox.
 *
 * - A named sandbox is deleted MCP_SANDBOX_RETENTION_S after its last use.
 * - An unnamed one goes at that time too, or sooner: once no session id or handle can name it any more.
 * - An owner keeps at most MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL asleep and, on the local backend, at most
 *   MCP_MAX_SLEEPING_DISK_MB_PER_CREDENTIAL of their files: past a cap its least recently used sleeping sandbox goes,
 *   then the next (past the disk cap alone, the next whose disk is known). A running sandbox is never deleted to make
 *   room.
 */

/** The limits on what an owner keeps. */
export interface RetentionPolicy {
  /** MCP_SANDBOX_RETENTION_S in milliseconds. */
  readonly retentionMs: number;
  /** MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL. */
  readonly maxSleeping: number;
  /** MCP_MAX_SLEEPING_DISK_MB_PER_CREDENTIAL in bytes (the local backend); absent: no disk cap. */
  readonly maxSleepingDiskBytes?: number;
}

/** What the rules need to know of a sandbox. */
export interface Kept {
  readonly lastUsedMs: number;
  /** Unnamed sandboxes: until when an id or handle can name it. */
  readonly reachableUntilMs?: number;
  readonly state: 'running' | 'sleeping';
  readonly diskBytes?: number;
}

/** When a sandbox is deleted unless it is used before. */
export function deleteAtMs(sandbox: Omit<Kept, 'state'>, retentionMs: number): number {
  const byUse = sandbox.lastUsedMs + retentionMs;
  return sandbox.reachableUntilMs === undefined ? byUse : Math.min(byUse, sandbox.reachableUntilMs);
}

/** True when a sandbox that nothing uses now is past its time. */
export function isPastRetention(sandbox: Omit<Kept, 'state'>, retentionMs: number, nowMs: number): boolean {
  return deleteAtMs(sandbox, retentionMs) <= nowMs;
}

/** Which cap made room, for the result and the log. */
export type CapSetting = 'MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL' | 'MCP_MAX_SLEEPING_DISK_MB_PER_CREDENTIAL';

/**
 * The sleeping sandboxes of one owner to delete, least recently used first, so that with `reserve` more asleep
 * the owner keeps at most `maxSleeping`, and their disk stays within `maxSleepingDiskBytes`; and the cap that
 * decided (the count's, unless only the disk's was passed).
 */
export function toMakeRoom<S extends Kept>(
  sandboxes: readonly S[],
  policy: RetentionPolicy,
  reserve: number,
): { readonly deleted: S[]; readonly setting?: CapSetting } {
  const sleeping = sandboxes.filter((s) => s.state === 'sleeping').sort((a, b) => a.lastUsedMs - b.lastUsedMs);
  const deleted: S[] = [];
  let setting: CapSetting | undefined;
  let disk = sleeping.reduce((sum, s) => sum + (s.diskBytes ?? 0), 0);
  const maxDisk = policy.maxSleepingDiskBytes;
  for (const candidate of sleeping) {
    const overCount = sleeping.length - deleted.length + reserve > policy.maxSleeping;
    const overDisk = maxDisk !== undefined && disk > maxDisk;
    if (!overCount && !overDisk) break;
    // Past the disk cap only, a sandbox whose disk is not known frees nothing known: the next one goes.
    if (!overCount && (candidate.diskBytes ?? 0) === 0) continue;
    setting ??= overCount ? 'MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL' : 'MCP_MAX_SLEEPING_DISK_MB_PER_CREDENTIAL';
    deleted.push(candidate);
    disk -= candidate.diskBytes ?? 0;
  }
  return setting === undefined ? { deleted } : { deleted, setting };
}
