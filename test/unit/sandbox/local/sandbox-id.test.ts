/** Local sandbox ids (sandbox/local/sandbox-id.ts): drawn once per workspace, recorded whole, the same on every ask. */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { workspaceSandboxId } from '../../../../functions/mcp/sandbox/local/sandbox-id';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'sandbox-ids-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const workspace = (name: string): string => {
  const dir = join(root, name);
  mkdirSync(dir);
  return dir;
};

it('gives each workspace its own id, and the same one every time it is asked', async () => {
  const dirs = Array.from({ length: 20 }, (_, i) => workspace(`ws-${i}`));
  const ids = await Promise.all(dirs.map((dir) => workspaceSandboxId(dir)));
  expect(new Set(ids).size).toBe(20);
  for (const id of ids) expect(id).toMatch(/^local-[0-9a-f]{16}$/);
  await expect(Promise.all(dirs.map((dir) => workspaceSandboxId(dir)))).resolves.toEqual(ids);
});

it('settles instances opening the same new workspace at once on one id, and leaves only the record', async () => {
  const dir = workspace('shared');
  const ids = await Promise.all(Array.from({ length: 8 }, () => workspaceSandboxId(dir)));
  expect(new Set(ids).size).toBe(1);
  expect(readdirSync(dir)).toEqual(['sandbox-id']);
  expect(readFileSync(join(dir, 'sandbox-id'), 'utf8')).toBe(`${ids[0]}\n`);
});

it('gives a workspace made again in the same place (a reset) a new id', async () => {
  const first = await workspaceSandboxId(workspace('again'));
  rmSync(join(root, 'again'), { recursive: true });
  expect(await workspaceSandboxId(workspace('again'))).not.toBe(first);
});
