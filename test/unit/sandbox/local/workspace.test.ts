import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  createWorkspace,
  resolveInWorkspace,
  toWorkspaceName,
  type Workspace,
} from '../../../../functions/mcp/sandbox/local/workspace';

let root: string;
let bwrapWs: Workspace;
let plainWs: Workspace;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'ws-test-'));
  bwrapWs = await createWorkspace({ root, sessionKey: 'session-a', virtualHome: true, sandboxUser: false });
  plainWs = await createWorkspace({ root, sessionKey: 'session-b', virtualHome: false, sandboxUser: false });
  mkdirSync(join(bwrapWs.home, 'src'));
  symlinkSync('/etc', join(bwrapWs.home, 'etc-link'));
  symlinkSync('src', join(bwrapWs.home, 'inner-link'));
  symlinkSync('/nonexistent/target', join(bwrapWs.home, 'dangling'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('resolveInWorkspace', () => {
  it('resolves relative and in-workdir absolute paths to host paths', async () => {
    await expect(resolveInWorkspace(bwrapWs, 'src/a.py')).resolves.toEqual({
      hostPath: join(bwrapWs.home, 'src/a.py'),
      sandboxPath: '/home/user/src/a.py',
    });
    await expect(resolveInWorkspace(bwrapWs, '/home/user/src/../b.txt')).resolves.toEqual({
      hostPath: join(bwrapWs.home, 'b.txt'),
      sandboxPath: '/home/user/b.txt',
    });
    await expect(resolveInWorkspace(bwrapWs, '.')).resolves.toEqual({
      hostPath: bwrapWs.home,
      sandboxPath: '/home/user',
    });
    await expect(resolveInWorkspace(plainWs, 'x')).resolves.toEqual({
      hostPath: join(plainWs.home, 'x'),
      sandboxPath: join(plainWs.home, 'x'),
    });
  });

  it.each(['../x', 'src/../../x', '/etc/passwd', '/home/user2/x', '/home'])(
    'refuses %s, which leaves the working directory',
    async (path) => {
      await expect(resolveInWorkspace(bwrapWs, path)).rejects.toMatchObject({
        code: 'invalid_input',
        message: expect.stringContaining('outside'),
      });
    },
  );

  it('refuses symlinks that lead out, and dangling ones, but follows links that stay inside', async () => {
    await expect(resolveInWorkspace(bwrapWs, 'etc-link/passwd')).rejects.toMatchObject({
      message: expect.stringContaining('symbolic link'),
    });
    await expect(resolveInWorkspace(bwrapWs, 'etc-link')).rejects.toMatchObject({ code: 'invalid_input' });
    await expect(resolveInWorkspace(bwrapWs, 'dangling')).rejects.toMatchObject({ code: 'invalid_input' });
    await expect(resolveInWorkspace(bwrapWs, 'inner-link/new.txt')).resolves.toMatchObject({
      sandboxPath: '/home/user/inner-link/new.txt',
    });
  });

  it('refuses NUL bytes', async () => {
    await expect(resolveInWorkspace(bwrapWs, 'a\0b')).rejects.toMatchObject({ code: 'invalid_input' });
  });
});

describe('workspace naming', () => {
  it('names directories by a hash, never by the session id', () => {
    expect(toWorkspaceName('secret-session-id')).toMatch(/^mcp-sandbox-[0-9a-f]{32}$/);
    expect(toWorkspaceName('secret-session-id')).not.toContain('secret');
  });
});
