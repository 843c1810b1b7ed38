import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  createWorkspace,
  resolveInWorkspace,
  toWorkspaceName,
  type Workspace,
} from '../../../../functions/mcp/sandbox/local/workspace';
import { needs } from '../../../support/needs';

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

describe('a forked workspace, opened the first time (its files copied from another sandbox’s)', () => {
  let forkRoot: string;
  beforeEach(() => {
    forkRoot = mkdtempSync(join(tmpdir(), 'ws-fork-'));
  });
  afterEach(() => rmSync(forkRoot, { recursive: true, force: true }));

  /** A workspace directory as a copy left it: the source's files, and the server's state of the source. */
  const copied = (sessionKey: string): string => {
    const dir = join(forkRoot, toWorkspaceName(sessionKey));
    mkdirSync(join(dir, 'home', 'src'), { recursive: true });
    mkdirSync(join(dir, 'tmp'));
    writeFileSync(join(dir, 'home', 'src', 'main.py'), 'print(1)');
    const state: Record<string, string> = {
      uid: '123456\n',
      'sandbox-id': 'local-0123456789abcdef\n',
      'sandbox-id.0a1b2c3d4e5f': 'local-0123456789abcdef\n',
      'last-used': '',
    };
    for (const [name, text] of Object.entries(state)) writeFileSync(join(dir, name), text);
    mkdirSync(join(dir, 'processes'));
    writeFileSync(join(dir, 'processes', 'p1.0.log'), 'output');
    return dir;
  };

  it('drops what the server kept for the source (uid record, id, last-used, logs) and keeps the files', async () => {
    const dir = copied('fork');
    const ws = await createWorkspace({
      root: forkRoot,
      sessionKey: 'fork',
      virtualHome: true,
      sandboxUser: false,
      forked: true,
    });
    expect(readdirSync(dir).sort()).toEqual(['home', 'tmp']);
    expect(readFileSync(join(ws.home, 'src', 'main.py'), 'utf8')).toBe('print(1)');
    expect(ws.owner).toBeUndefined();
  });

  needs('root').it('gives every file to a user of its own, never following a symlink out', async () => {
    const dir = copied('fork');
    const outside = join(forkRoot, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'host-file'), 'host');
    symlinkSync(join(outside, 'host-file'), join(dir, 'home', 'to-file'));
    symlinkSync(outside, join(dir, 'home', 'src', 'to-dir'));
    symlinkSync(outside, join(dir, 'tmp', 'to-dir'));
    const ws = await createWorkspace({
      root: forkRoot,
      sessionKey: 'fork',
      virtualHome: true,
      sandboxUser: true,
      forked: true,
    });
    const uid = ws.owner?.uid;
    expect(uid).toBeDefined();
    expect(uid).not.toBe(123456);
    expect(readFileSync(join(dir, 'uid'), 'utf8')).toBe(`${uid}\n`);
    for (const path of ['home', 'home/src', 'home/src/main.py', 'home/to-file', 'home/src/to-dir', 'tmp', 'tmp/to-dir'])
      expect([path, lstatSync(join(dir, path)).uid]).toEqual([path, uid]);
    expect(lstatSync(outside).uid).toBe(0);
    expect(lstatSync(join(outside, 'host-file')).uid).toBe(0);
  });
});
