/** The walk beneath a working directory: symlinks followed by hand as the sandbox sees them, never out. */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { locate } from '../../../../functions/mcp/sandbox/local/beneath';
import { createWorkspace, type Workspace } from '../../../../functions/mcp/sandbox/local/workspace';

let root: string;
let ws: Workspace;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'beneath-'));
  // As under bubblewrap: the sandbox sees its working directory as /home/user.
  ws = await createWorkspace({ root, sessionKey: 'walker', virtualHome: true, sandboxUser: false });
  mkdirSync(join(ws.home, 'a', 'b'), { recursive: true });
  writeFileSync(join(ws.home, 'a', 'b', 'f'), 'f');
  symlinkSync('loop2', join(ws.home, 'loop1'));
  symlinkSync('loop1', join(ws.home, 'loop2'));
  symlinkSync('../../..', join(ws.home, 'a', 'b', 'climb'));
  symlinkSync('/home/user', join(ws.home, 'a', 'home'));
  symlinkSync('/home/user/a/b/f', join(ws.home, 'abs-f'));
  symlinkSync(join(ws.home, 'a'), join(ws.home, 'host-path'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const walk = async (path: string) => {
  const at = await locate(ws, path.split('/'), { shown: path });
  await at.parent.handle.close();
  return { dir: at.parent.hostPath, name: at.name, exists: at.exists, lastWasLink: at.lastWasLink };
};

it('follows absolute links under the working directory as the sandbox sees them', async () => {
  await expect(walk('abs-f')).resolves.toEqual({
    dir: join(ws.home, 'a', 'b'),
    name: 'f',
    exists: true,
    lastWasLink: true,
  });
  await expect(walk('a/home/a/b/f')).resolves.toEqual({
    dir: join(ws.home, 'a', 'b'),
    name: 'f',
    exists: true,
    lastWasLink: false,
  });
  await expect(walk('a/home')).resolves.toMatchObject({ dir: ws.home, name: undefined });
});

it('refuses links that climb above the working directory or name a host path', async () => {
  await expect(walk('a/b/climb/x')).rejects.toMatchObject({
    code: 'invalid_input',
    message: expect.stringContaining('leads outside'),
  });
  // The host's own path to the workspace is not the sandbox's: outside, as far as the sandbox can tell.
  await expect(walk('host-path/b/f')).rejects.toMatchObject({ message: expect.stringContaining('leads outside') });
});

it('gives up on a loop of links', async () => {
  await expect(walk('loop1')).rejects.toMatchObject({
    message: expect.stringContaining('too many levels of symbolic links'),
  });
});

it('reports a missing last name, and a missing directory on the way as ENOENT', async () => {
  await expect(walk('a/b/new')).resolves.toMatchObject({ name: 'new', exists: false, lastWasLink: false });
  await expect(walk('a/nope/new')).rejects.toMatchObject({ code: 'ENOENT' });
});
