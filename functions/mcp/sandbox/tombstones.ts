/**
 * Tombstones of ended sessions (DELETEd, or expired and destroyed): records that an id stays refused until it
 * could no longer be valid. Every instance that shares the directory reads them (LOCAL_SANDBOX_ROOT for the local
 * backend, E2B_STATE_DIR for E2B, a NAS on FC), and they outlive restarts, so no instance revives an ended session.
 *
 * Layout, in `<root>/.ended/`: files `until-<first hour>-<hours>h-<writer>.rec` of fixed 47-byte records,
 * `<the name hashed: 32 hex> <until: ms since the epoch, 13 digits>\n`. A file holds the records of one writer (one
 * store, so one process) whose until time falls in its span of hours. Why:
 * - compact: 47 bytes a session, where a file each took a 4 KiB block and an inode;
 * - deleted whole: once its span has passed every record in a file has too, so a sweep goes by file names alone;
 * - one writer a file: appends from two hosts to one file on NFS can interleave (O_APPEND is not atomic there);
 * - few files: a span is an hour, or 8ⁿ hours for records that hold longer than 8ⁿ hours (a long
 *   MCP_SESSION_MAX_AGE_S), so a writer keeps at most about nine files per span length it uses (seven or eight with
 *   the default 6 h).
 * Readers keep an index in memory (tombstone-index.ts) and read only what each file gained since they looked.
 * Per-session files of earlier versions (`.ended/<name>`, holding the until time) are still honoured, and a sweep
 * turns them into records. What cannot be read holds: refusing a session too long is safe, reviving one is not.
 */
import { randomBytes } from 'node:crypto';
import { appendFile, mkdir, open, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';

import { toErrnoCode } from '../errors';
import { hashTag } from '../hash-tag';
import { TombstoneIndex } from './tombstone-index';

const HOUR_MS = 3_600_000;
/** A span is the shortest of 1, 8, 64, … hours that is at least an eighth of the time the record holds. */
const SPAN_GROWTH = 8;
const RECORD_FILE = /^until-(\d{1,9})-(\d{1,6})h-([0-9a-f]{16})\.rec$/;
const RECORD = /^([0-9a-f]{32}) (\d{13})?/;
/** How often a store sweeps (started by a record or a lookup; FC freezes timers). */
const SWEEP_EVERY_MS = HOUR_MS;

const tombstonesDir = (root: string): string => join(root, '.ended');

/** The tombstones under one root, as one process reads and writes them. */
export interface TombstoneStore {
  /** Records that the session named `name` ended: it is refused until `untilMs`. */
  record(name: string, untilMs: number): Promise<void>;
  /**
   * True when the session named `name` ended and its tombstone holds at `nowMs`, whoever recorded it. Rejects when
   * a file of records cannot be read (then nobody can say that the session did not end).
   */
  has(name: string, nowMs: number): Promise<boolean>;
  /** The sweep this store started, if one runs (tests wait for it). */
  settled(): Promise<void>;
}

export interface TombstoneStoreOptions {
  /** Milliseconds since the epoch, for the sweeps. @default Date.now */
  now?: () => number;
}

/** A record file's name, parsed. */
interface RecordFile {
  readonly writer: string;
  /** When its span ends: every record in it has expired by then. */
  readonly endMs: number;
}

/** A record file as a store knows it. */
interface IndexedFile {
  /** Bytes read into the index (a store's own file: none, its records are indexed as written). */
  offset: number;
  readonly endMs: number;
  readonly index: TombstoneIndex;
}

/** What one reading of the directory found. */
interface Listing {
  /** Per-session files of earlier versions, by name. */
  readonly legacy: ReadonlySet<string>;
}

/** Creates the store of `root`; nothing is read or written until asked. */
export function createTombstoneStore(root: string, { now = Date.now }: TombstoneStoreOptions = {}): TombstoneStore {
  const dir = tombstonesDir(root);
  /** Names this store's files: one writer a file. */
  const writerId = randomBytes(8).toString('hex');
  /** Record files read (or written) here: bytes taken in, and their records. */
  const files = new Map<string, IndexedFile>();
  let writing: Promise<void> = Promise.resolve();
  let lastSweepMs = Number.NEGATIVE_INFINITY;
  let sweeping: Promise<void> = Promise.resolve();

  const maybeSweep = (): void => {
    const nowMs = now();
    if (nowMs - lastSweepMs < SWEEP_EVERY_MS) return;
    lastSweepMs = nowMs;
    sweeping = sweepTombstones(root, nowMs).then(
      () => undefined,
      () => undefined,
    );
  };

  const fileOf = (name: string, endMs: number): IndexedFile => {
    let file = files.get(name);
    if (file === undefined) {
      file = { offset: 0, endMs, index: new TombstoneIndex() };
      files.set(name, file);
    }
    return file;
  };

  /** Reads what the record file `name` gained since the last time. */
  const readNew = async (name: string, endMs: number): Promise<void> => {
    // Opened each time: on NFS, open() is what makes another host's appends visible (close-to-open consistency).
    const handle = await open(join(dir, name), 'r').catch((err: unknown) => {
      if (toErrnoCode(err) === 'ENOENT') return undefined;
      throw err;
    });
    if (handle === undefined) return;
    try {
      const file = fileOf(name, endMs);
      const { size } = await handle.stat();
      if (size <= file.offset) return;
      const bytes = Buffer.alloc(size - file.offset);
      let filled = 0;
      while (filled < bytes.length) {
        const { bytesRead } = await handle.read(bytes, filled, bytes.length - filled, file.offset + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      // Only whole records: one still being written is read next time.
      const whole = bytes.subarray(0, filled).lastIndexOf(0x0a) + 1;
      for (const line of bytes.subarray(0, whole).toString('latin1').split('\n')) {
        const match = RECORD.exec(line);
        // An until that cannot be read holds to the end of the file's span.
        if (match !== null) file.index.add(toKey(match[1] ?? ''), match[2] === undefined ? endMs : Number(match[2]));
      }
      file.offset += whole;
    } finally {
      await handle.close();
    }
  };

  const refreshOnce = async (nowMs: number): Promise<Listing> => {
    const names = await readdir(dir).catch((err: unknown) => {
      // No directory (or a file where one of its parents should be): nothing was ever recorded here.
      const code = toErrnoCode(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return [] as string[];
      throw err;
    });
    const legacy = new Set<string>();
    for (const name of names) {
      const file = parseRecordFile(name);
      if (file === undefined) {
        if (!name.startsWith('.')) legacy.add(name);
        continue;
      }
      // This store's own files are indexed as they are written.
      if (file.endMs > nowMs && file.writer !== writerId) await readNew(name, file.endMs);
    }
    // A file missing from a listing is kept (a listing on NFS may be stale); one whose span has passed goes.
    for (const [name, file] of files) if (file.endMs <= nowMs) files.delete(name);
    return { legacy };
  };

  // One reading at a time, and a lookup never rides on a reading that started before it was asked.
  let running: Promise<Listing> | undefined;
  let queued: Promise<Listing> | undefined;
  const refresh = (nowMs: number): Promise<Listing> => {
    if (queued !== undefined) return queued;
    const start = (): Promise<Listing> => {
      running = refreshOnce(nowMs).finally(() => {
        running = undefined;
      });
      return running;
    };
    if (running === undefined) return start();
    queued = running
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return start();
      });
    return queued;
  };

  const holds = (key: number, nowMs: number): boolean => {
    for (const file of files.values()) if (file.endMs > nowMs && file.index.holds(key, nowMs)) return true;
    return false;
  };

  return {
    async record(name, untilMs) {
      const nowMs = now();
      const span = spanFor(untilMs - nowMs);
      const first = Math.floor(untilMs / span);
      const file = `until-${(first * span) / HOUR_MS}-${span / HOUR_MS}h-${writerId}.rec`;
      const hash = toHash(name);
      const done = writing.then(() =>
        appendRecords(dir, file, `${hash} ${String(Math.ceil(untilMs)).padStart(13, '0')}\n`),
      );
      writing = done.catch(() => undefined);
      await done;
      fileOf(file, (first + 1) * span).index.add(toKey(hash), Math.ceil(untilMs));
      maybeSweep();
    },
    async has(name, nowMs) {
      maybeSweep();
      const key = toKey(toHash(name));
      const listing = await refresh(nowMs);
      if (holds(key, nowMs)) return true;
      if (!listing.legacy.has(name)) return false;
      const legacy = await readLegacy(join(dir, name), nowMs);
      if (legacy !== 'gone') return legacy;
      // Turned into a record since the listing (a sweep appends the record before it deletes the file).
      await refresh(nowMs);
      return holds(key, nowMs);
    },
    settled: () => sweeping,
  };
}

/**
 * Deletes the record files whose span has passed, and per-session files of earlier versions that no longer hold
 * (the others become records, in a file of this sweep's own); returns how many files went.
 */
export async function sweepTombstones(root: string, nowMs: number): Promise<number> {
  const dir = tombstonesDir(root);
  const names = await readdir(dir).catch(() => [] as string[]);
  const migrated = new Map<string, { lines: string; legacy: string[] }>();
  const writer = randomBytes(8).toString('hex');
  let removed = 0;
  for (const name of names) {
    const file = parseRecordFile(name);
    if (file !== undefined) {
      if (
        file.endMs <= nowMs &&
        (await unlink(join(dir, name)).then(
          () => true,
          () => false,
        ))
      )
        removed += 1;
      continue;
    }
    if (name.startsWith('.')) continue;
    const until = await readLegacyUntil(join(dir, name));
    // An unreadable one is kept (and honoured): refusing a session too long is safe, reviving one is not.
    if (until === undefined) continue;
    if (until <= nowMs) {
      if (
        await unlink(join(dir, name)).then(
          () => true,
          () => false,
        )
      )
        removed += 1;
      continue;
    }
    const span = spanFor(until - nowMs);
    const target = `until-${(Math.floor(until / span) * span) / HOUR_MS}-${span / HOUR_MS}h-${writer}.rec`;
    const batch = migrated.get(target) ?? { lines: '', legacy: [] };
    batch.lines += `${toHash(name)} ${String(Math.ceil(until)).padStart(13, '0')}\n`;
    batch.legacy.push(name);
    migrated.set(target, batch);
  }
  for (const [target, { lines, legacy }] of migrated) {
    // The record first: a reader that missed it finds the old file still there.
    await appendRecords(dir, target, lines);
    for (const name of legacy)
      if (
        await unlink(join(dir, name)).then(
          () => true,
          () => false,
        )
      )
        removed += 1;
  }
  return removed;
}

/** The span of the file for a record that holds `holdsForMs` from now. */
function spanFor(holdsForMs: number): number {
  let span = HOUR_MS;
  while (holdsForMs > SPAN_GROWTH * span) span *= SPAN_GROWTH;
  return span;
}

function parseRecordFile(name: string): RecordFile | undefined {
  const match = RECORD_FILE.exec(name);
  if (match === null) return undefined;
  const hours = Number(match[2]);
  return { writer: match[3] ?? '', endMs: (Number(match[1]) + hours) * HOUR_MS };
}

/** The name hashed, as records keep it. */
function toHash(name: string): string {
  return hashTag(name, 32);
}

/** The index's key of a hash: its first 52 bits. */
function toKey(hash: string): number {
  return parseInt(hash.slice(0, 13), 16);
}

async function appendRecords(dir: string, file: string, lines: string): Promise<void> {
  const path = join(dir, file);
  try {
    await appendFile(path, lines, { mode: 0o600 });
  } catch (err: unknown) {
    if (toErrnoCode(err) !== 'ENOENT') throw err;
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await appendFile(path, lines, { mode: 0o600 });
  }
}

/** A per-session file of earlier versions: whether it holds at `nowMs` (an unreadable one does), or gone. */
async function readLegacy(path: string, nowMs: number): Promise<boolean | 'gone'> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err: unknown) {
    return toErrnoCode(err) === 'ENOENT' ? 'gone' : true;
  }
  const until = toLegacyUntil(text);
  return until === undefined || until > nowMs;
}

/** The until time of a per-session file of earlier versions, or `undefined` when it cannot be read. */
async function readLegacyUntil(path: string): Promise<number | undefined> {
  const text = await readFile(path, 'utf8').catch(() => undefined);
  return text === undefined ? undefined : toLegacyUntil(text);
}

function toLegacyUntil(text: string): number | undefined {
  const trimmed = text.trim();
  return /^\d{1,16}$/.test(trimmed) ? Number(trimmed) : undefined;
}
