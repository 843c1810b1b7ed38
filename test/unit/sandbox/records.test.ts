/** The sandbox records (sandbox/records.ts): whole files, one winner per name, bounded and checked reads. */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createRecordStore, RECORDS_DIR, type SandboxRecord } from '../../../functions/mcp/sandbox/records';

const OWNER = 'a'.repeat(24);
const OTHER = 'b'.repeat(24);
const tagOf = (n: number): string => n.toString(16).padStart(32, '0');
const record = (n: number, over: Partial<SandboxRecord> = {}): SandboxRecord => ({
  tag: tagOf(n),
  owner: OWNER,
  createdMs: 1_000,
  lastUsedMs: 1_000 + n,
  sandboxId: `local-${n}`,
  ...over,
});

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'mcp-records-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

it('writes a record whole and reads it back, and lists an owner’s records most recently used first', async () => {
  const store = createRecordStore(root);
  await store.put(record(1));
  await store.put(record(2, { name: 'proj', key: 'k'.repeat(16) }));
  await store.put(record(3, { owner: OTHER }));
  expect(await store.get(OWNER, tagOf(2))).toEqual(record(2, { name: 'proj', key: 'k'.repeat(16) }));
  expect((await store.list(OWNER)).map((r) => r.tag)).toEqual([tagOf(2), tagOf(1)]);
  expect(await store.owners()).toEqual(expect.arrayContaining([OWNER, OTHER]));
  expect(await store.tags()).toEqual(new Set([tagOf(1), tagOf(2), tagOf(3)]));
  // Another owner's file under this owner's name is not this owner's record.
  expect(await store.get(OTHER, tagOf(1))).toBeUndefined();
});

it('reads a damaged, oversized, foreign or linked file as absent, never as a record', async () => {
  const store = createRecordStore(root);
  const dir = join(root, RECORDS_DIR, OWNER);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${tagOf(1)}.json`), '{"tag":');
  writeFileSync(join(dir, `${tagOf(2)}.json`), JSON.stringify({ ...record(2), pad: 'x'.repeat(20_000) }));
  writeFileSync(join(dir, `${tagOf(3)}.json`), JSON.stringify(record(4)));
  writeFileSync(join(dir, `${tagOf(5)}.json`), JSON.stringify({ ...record(5), name: 'no-key' }));
  writeFileSync(join(root, 'elsewhere.json'), JSON.stringify(record(6)));
  symlinkSync(join(root, 'elsewhere.json'), join(dir, `${tagOf(6)}.json`));
  for (const n of [1, 2, 3, 5, 6]) expect(await store.get(OWNER, tagOf(n))).toBeUndefined();
  expect(await store.list(OWNER)).toEqual([]);
});

it('refuses a tag that is not hex: no path leads out of the directory', async () => {
  const store = createRecordStore(root);
  await expect(store.get(OWNER, '../../etc/passwd')).rejects.toThrow(/not a sandbox or owner tag/);
  await expect(store.put(record(1, { owner: '..' }))).rejects.toThrow(/not a sandbox or owner tag/);
});

it('gives a name to one claimant of many at once, and keeps it for the holder until released', async () => {
  const store = createRecordStore(root);
  const claims = await Promise.all([1, 2, 3, 4, 5].map((n) => store.claimName(OWNER, 'proj', tagOf(n))));
  const winner = claims[0];
  expect(new Set(claims)).toEqual(new Set([winner]));
  await store.put(record(Number.parseInt(winner ?? '0', 16)));
  expect(await store.nameHolder(OWNER, 'proj')).toBe(winner);
  // Only the holder lets go; another owner's name of the same text is its own.
  await store.releaseName(OWNER, 'proj', tagOf(9));
  expect(await store.nameHolder(OWNER, 'proj')).toBe(winner);
  expect(await store.claimName(OTHER, 'proj', tagOf(9))).toBe(tagOf(9));
  await store.releaseName(OWNER, 'proj', winner ?? '');
  expect(await store.claimName(OWNER, 'proj', tagOf(8))).toBe(tagOf(8));
});

it('takes over a claim whose record never came (a create that died), once it is old', async () => {
  const store = createRecordStore(root);
  expect(await store.claimName(OWNER, 'proj', tagOf(1))).toBe(tagOf(1));
  // Still young: a create may be under way.
  expect(await store.claimName(OWNER, 'proj', tagOf(2))).toBe(tagOf(1));
  const claims = join(root, RECORDS_DIR, OWNER, 'names');
  for (const file of readdirSync(claims)) {
    const old = new Date(Date.now() - 3_600_000);
    utimesSync(join(claims, file), old, old);
  }
  expect(await store.claimName(OWNER, 'proj', tagOf(2))).toBe(tagOf(2));
});

it('deletes a record with its name, and keeps at most 20 stopped processes of 200 characters each', async () => {
  const store = createRecordStore(root);
  const stopped = Array.from({ length: 30 }, (_, i) => ({ id: `p${i}`, command: `x${'y'.repeat(1000)}` }));
  await store.claimName(OWNER, 'proj', tagOf(1));
  await store.put(record(1, { name: 'proj', key: 'k'.repeat(16), sleep: { sinceMs: 5, memory: false, stopped } }));
  const kept = await store.get(OWNER, tagOf(1));
  expect(kept?.sleep?.stopped).toHaveLength(20);
  expect(kept?.sleep?.stopped[0]?.command).toHaveLength(200);
  await store.remove({ owner: OWNER, tag: tagOf(1), name: 'proj' });
  expect(await store.get(OWNER, tagOf(1))).toBeUndefined();
  expect(await store.nameHolder(OWNER, 'proj')).toBeUndefined();
});

it('keeps a session’s choice of a named sandbox until its time, and sweeps it then or with the sandbox', async () => {
  const store = createRecordStore(root);
  await store.bind(OWNER, tagOf(7), { key: 'k'.repeat(16), name: 'proj', untilMs: 2_000 });
  await store.bind(OWNER, tagOf(8), { key: 'j'.repeat(16), name: 'other', untilMs: 9_000 });
  expect(await store.bound(OWNER, tagOf(7), 1_999)).toEqual({ key: 'k'.repeat(16), name: 'proj', untilMs: 2_000 });
  expect(await store.bound(OWNER, tagOf(7), 2_000)).toBeUndefined();
  await store.sweepBindings(OWNER, 2_000, 'j'.repeat(16));
  expect(await store.bound(OWNER, tagOf(8), 2_000)).toBeUndefined();
});
