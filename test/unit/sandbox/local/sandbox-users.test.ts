/** Sandbox uids: allocated at random, claimed so that no two workspaces share one, recorded, and given back. */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { releaseUid, UID_BASE, workspaceUid } from '../../../../functions/mcp/sandbox/local/sandbox-users';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'uids-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const workspace = (name: string): string => {
  const dir = join(root, name);
  mkdirSync(dir);
  return dir;
};

it('gives each workspace its own uid, the same one every time it is asked, and claims it', async () => {
  const dirs = Array.from({ length: 50 }, (_, i) => workspace(`ws-${i}`));
  const uids = await Promise.all(dirs.map((dir) => workspaceUid(root, dir)));
  expect(new Set(uids).size).toBe(50);
  for (const uid of uids) expect(uid).toBeGreaterThanOrEqual(UID_BASE);
  await expect(Promise.all(dirs.map((dir) => workspaceUid(root, dir)))).resolves.toEqual(uids);
  expect(readdirSync(join(root, '.uids')).map(Number).sort()).toEqual([...uids].sort());
});

it('settles two instances making the same workspace at once on one uid, and gives the loser’s claim back', async () => {
  const dir = workspace('shared');
  const uids = await Promise.all(Array.from({ length: 20 }, () => workspaceUid(root, dir)));
  expect(new Set(uids).size).toBe(1);
  expect(readdirSync(join(root, '.uids'))).toEqual([String(uids[0])]);
});

it('is not derived from anything: the same workspace name under another root gets another uid', async () => {
  const first = await workspaceUid(root, workspace('same-name'));
  const otherRoot = mkdtempSync(join(tmpdir(), 'uids-'));
  try {
    mkdirSync(join(otherRoot, 'same-name'));
    const seen = new Set([first]);
    for (let i = 0; i < 5; i += 1) {
      rmSync(join(otherRoot, 'same-name'), { recursive: true });
      mkdirSync(join(otherRoot, 'same-name'));
      seen.add(await workspaceUid(otherRoot, join(otherRoot, 'same-name')));
    }
    expect(seen.size).toBeGreaterThan(1);
  } finally {
    rmSync(otherRoot, { recursive: true, force: true });
  }
});

it('gives a uid back', async () => {
  const uid = await workspaceUid(root, workspace('gone'));
  await releaseUid(root, uid);
  expect(readdirSync(join(root, '.uids'))).toEqual([]);
});
