/**
 * Disk follows what can still be reached. A workspace with a sandbox record (sandbox/records.ts) sleeps and wakes
 * by it, and the record catalog deletes it at the end of its retention (sandbox/record-catalog.ts); the sweep here
 * runs that, and deletes what has no record: workspaces of earlier versions, which no session comes back to once
 * unused for the idle TTL (a call may run on for the longest tool timeout after its last touch). So such a
 * workspace not open on this instance whose last-used marker (else its directory) is older than that is deleted:
 * on a sweep at start-up (leftovers of earlier processes), then at most once a minute, on requests (FC freezes
 * timers between them); and at once when a session tries to re-attach it.
 */
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

import { describeError } from '../../errors';
import type { Logger } from '../../log';
import { killUserProcesses } from './host-processes';
import { recordedUid } from './sandbox-users';
import { sweepTombstones } from '../tombstones';
import { removeWorkspace } from './workspace';
import { imageOf, openWorkspaceDisk } from './workspace-disk';

/** What every workspace directory's name starts with (workspace.ts `toWorkspaceName`). */
const WORKSPACE_PREFIX = 'mcp-sandbox-';

/**
 * When the workspace in `dir` was last used, in ms since the epoch: its marker; else (a workspace let go, whose
 * marker is on its unmounted image) the later of the directory's and the image's times. The image's time moves
 * with every write through its loop device, the unmount's last of all, so it is never earlier than the last use.
 */
export async function lastUsedMs(dir: string): Promise<number | undefined> {
  const marker = await lstat(join(dir, 'last-used')).catch(() => undefined);
  if (marker !== undefined) return marker.mtimeMs;
  const [own, image] = await Promise.all([
    lstat(dir).catch(() => undefined),
    lstat(imageOf(dir)).catch(() => undefined),
  ]);
  if (own === undefined) return undefined;
  return Math.max(own.mtimeMs, image?.mtimeMs ?? -Infinity);
}

/** True when the workspace in `dir` has gone unused for longer than `staleAfterMs`. */
export async function isStale(dir: string, nowMs: number, staleAfterMs: number): Promise<boolean> {
  const used = await lastUsedMs(dir);
  return used !== undefined && nowMs - used > staleAfterMs;
}

/** Deletes the workspace in `dir` that no sandbox here has open: its user's processes, its files, its uid claim. */
export async function removeAbandonedWorkspace(dir: string): Promise<void> {
  // A workspace let go is unmounted, and its uid record is on its image: mounted again to read it (one that
  // cannot be mounted is deleted all the same; its uid claim then stays).
  const disk = await openWorkspaceDisk(dir).catch(() => undefined);
  const uid = await recordedUid(dir);
  // Only without bubblewrap can a process outlive the server that started it (bubblewrap dies with its parent).
  if (uid !== undefined) await killUserProcesses(uid);
  await removeWorkspace({ dir, owner: uid === undefined ? undefined : { uid, gid: uid }, disk });
}

export interface SweepOptions {
  root: string;
  nowMs: number;
  /** The idle TTL plus the longest tool call. */
  staleAfterMs: number;
  /** True for a workspace a sandbox of this instance has open (never deleted here). */
  isOpen: (name: string) => boolean;
  /** The tags of the workspaces that have sandbox records (kept by their records' rules, not by staleness). */
  recorded?: ReadonlySet<string>;
}

/**
 * One sweep: deletes stale workspaces without a record and tombstones past their time; returns the workspaces
 * deleted.
 */
export async function sweepWorkspaces({
  root,
  nowMs,
  staleAfterMs,
  isOpen,
  recorded,
}: SweepOptions): Promise<string[]> {
  const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
  const removed: string[] = [];
  for (const entry of entries) {
    if (!entry.isDirectory() || !entry.name.startsWith(WORKSPACE_PREFIX) || isOpen(entry.name)) continue;
    if (recorded?.has(entry.name.slice(WORKSPACE_PREFIX.length)) === true) continue;
    const dir = join(root, entry.name);
    if (!(await isStale(dir, nowMs, staleAfterMs))) continue;
    await removeAbandonedWorkspace(dir);
    removed.push(entry.name);
  }
  await sweepTombstones(root, nowMs);
  return removed;
}

/** Sweeps at most this often (on requests). */
const SWEEP_EVERY_MS = 60_000;

/** Keeps track of the workspaces open here and sweeps the others. */
export interface WorkspaceJanitor {
  /** Makes the sandbox of workspace `name` with `make`; the workspace counts as open here while it lives. */
  track<S extends { isGone(): boolean }>(name: string, make: () => Promise<S>): Promise<S>;
  /** True while a sandbox of this instance has the workspace `name` open. */
  isOpen(name: string): boolean;
  /** Starts a sweep unless one ran within the last minute (callers do not wait for it). */
  maybeSweep(): void;
  /** Deletes the workspace `name` if it is stale and not open here; true when it was. */
  removeIfStale(name: string): Promise<boolean>;
  /** The sweep under way, if any (tests and shutdown wait for it). */
  settled(): Promise<void>;
}

export interface JanitorOptions {
  root: string;
  staleAfterMs: number;
  now: () => number;
  logger: Logger;
  /** Runs first on every sweep: deletes recorded sandboxes past their retention (record-catalog.ts). */
  sweepRecords?: () => Promise<unknown>;
  /** The tags of the workspaces that have records. @default none */
  recordedTags?: () => Promise<Set<string>>;
}

/** Creates the janitor of one provider. */
export function createWorkspaceJanitor({
  root,
  staleAfterMs,
  now,
  logger,
  sweepRecords,
  recordedTags,
}: JanitorOptions): WorkspaceJanitor {
  const open = new Map<string, { isGone(): boolean } | 'opening'>();
  let lastSweepMs = -Infinity;
  let running: Promise<void> = Promise.resolve();
  const isOpen = (name: string): boolean => {
    const held = open.get(name);
    if (held === undefined) return false;
    if (held !== 'opening' && held.isGone()) {
      open.delete(name);
      return false;
    }
    return true;
  };
  return {
    isOpen,
    async track(name, make) {
      open.set(name, 'opening');
      try {
        const sandbox = await make();
        open.set(name, sandbox);
        return sandbox;
      } catch (err: unknown) {
        open.delete(name);
        throw err;
      }
    },
    maybeSweep() {
      const nowMs = now();
      if (nowMs - lastSweepMs < SWEEP_EVERY_MS) return;
      lastSweepMs = nowMs;
      const sweep = async (): Promise<string[]> => {
        await sweepRecords?.();
        return sweepWorkspaces({ root, nowMs, staleAfterMs, isOpen, recorded: await recordedTags?.() });
      };
      running = sweep().then(
        (removed) => {
          if (removed.length > 0) logger.info('abandoned workspaces deleted', { count: removed.length });
        },
        (err: unknown) => logger.warn('workspace sweep failed', { error: describeError(err) }),
      );
    },
    async removeIfStale(name) {
      const dir = join(root, name);
      if (isOpen(name) || !(await isStale(dir, now(), staleAfterMs))) return false;
      await removeAbandonedWorkspace(dir);
      return true;
    },
    settled: () => running,
  };
}
