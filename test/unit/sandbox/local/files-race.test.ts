/**
 * The file tools run as the server (often root) inside a workspace whose owner can swap a directory for a
 * symlink at any moment. Hammer that race and check nothing outside the workspace is ever read or written.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { readWorkspaceFile, writeWorkspaceFile } from '../../../../functions/mcp/sandbox/local/files';
import { createWorkspace, type Workspace } from '../../../../functions/mcp/sandbox/local/workspace';

const ROUNDS = 400;
let root: string;
let outside: string;
let ws: Workspace;
let swapper: ChildProcess;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'race-'));
  outside = join(root, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret'), 'host secret');
  ws = await createWorkspace({ root, sessionKey: 'racer', virtualHome: false, owner: undefined });
  // Flip home/d between a real directory and a symlink to the outside directory, as fast as possible.
  swapper = spawn('bash', ['-c', `cd ${ws.home} && while true; do rm -rf d; mkdir d; echo inside > d/secret; rm -rf d; ln -s ${outside} d; done`], { stdio: 'ignore' });
});

afterAll(() => {
  swapper.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

it('never writes through a directory swapped for a symlink', async () => {
  for (let i = 0; i < ROUNDS; i += 1) {
    await writeWorkspaceFile(ws, `d/written-${i}`, Buffer.from('x')).catch(() => undefined);
  }
  const leaked = Array.from({ length: ROUNDS }, (_, i) => `written-${i}`).filter((name) => existsSync(join(outside, name)));
  expect(leaked).toEqual([]);
});

it('never reads through a directory swapped for a symlink', async () => {
  const contents = new Set<string>();
  for (let i = 0; i < ROUNDS; i += 1) {
    const read = await readWorkspaceFile(ws, 'd/secret', 1024).catch(() => undefined);
    if (read !== undefined) contents.add(read.bytes.toString());
  }
  expect([...contents].filter((c) => c.includes('host secret'))).toEqual([]);
});
