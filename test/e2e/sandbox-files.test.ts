/** The file tools through the official v2 client: confinement to the workspace, paging, binary and images, edits,
 * listings. */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { connectClient, textOf, type TestClient, type ToolResult } from '../support/clients';
import { findWorkspaceHome } from '../support/processes';
import { startServer, stopAllServers, type StartedServer } from '../support/server';
import { needs } from '../support/needs';

const TOKEN = 'e2e-files-token-0123456789abcdef';
/** A valid 1×1 RGBA PNG (IHDR, IDAT, IEND with correct CRCs). */
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

let server: StartedServer;
let client: TestClient;
let hostDir: string;
let victim: string;

beforeAll(async () => {
  server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
  client = await connectClient('v2', server.url, { token: TOKEN });
  // A host directory outside every workspace, with a file the sandbox must not be able to change.
  hostDir = mkdtempSync(join(tmpdir(), 'mcp-outside-'));
  victim = join(hostDir, 'victim.txt');
  writeFileSync(victim, 'original\n');
});
afterAll(async () => {
  await client.close();
  await stopAllServers();
  rmSync(hostDir, { recursive: true, force: true });
});

async function call(name: string, args: Record<string, unknown>): Promise<ToolResult> {
  return client.callTool(name, args);
}

async function shell(command: string): Promise<void> {
  const result = await call('run_command', { command });
  expect(result.structuredContent).toMatchObject({ exit_code: 0 });
}

function expectError(result: ToolResult, fragment: string): void {
  expect(result.isError).toBe(true);
  expect(textOf(result)).toContain(fragment);
}

describe('path confinement', () => {
  it('refuses ../ escapes and writes nothing outside the working directory', async () => {
    expectError(
      await call('read_file', { path: '../../../../etc/passwd' }),
      "is outside the sandbox's working directory",
    );
    expectError(
      await call('write_file', { path: '../escape.txt', content: 'x' }),
      "is outside the sandbox's working directory",
    );
    expectError(await call('list_files', { path: '..' }), "is outside the sandbox's working directory");
    expectError(
      await call('edit_file', { path: 'sub/../../escape.txt', old_string: 'a', new_string: 'b' }),
      "is outside the sandbox's working directory",
    );
    await call('write_file', { path: 'confine-marker', content: '' });
    const home = findWorkspaceHome(server.sandboxRoot, 'confine-marker');
    expect(home).toBeDefined();
    expect(existsSync(join(home ?? '', '..', 'escape.txt'))).toBe(false);
  });

  it('refuses absolute paths outside the working directory, such as /etc/passwd', async () => {
    expectError(
      await call('read_file', { path: '/etc/passwd' }),
      'Path "/etc/passwd" is outside the sandbox\'s working directory',
    );
    expectError(await call('write_file', { path: '/etc/x', content: 'pwned' }), 'is outside the sandbox');
    expect(existsSync('/etc/x')).toBe(false);
  });

  it('refuses to follow a symlink made in the sandbox that leads out, and changes nothing on the host', async () => {
    await shell(`ln -s /etc out && ln -s ${hostDir} hostdir && ln -s /etc/passwd pw`);
    const message = "leads outside the sandbox's working directory through a symbolic link";
    expectError(await call('read_file', { path: 'out/passwd' }), message);
    expectError(await call('read_file', { path: 'pw' }), message);
    expectError(await call('write_file', { path: 'out/x', content: 'pwned' }), message);
    expectError(await call('list_files', { path: 'out' }), message);
    expectError(await call('write_file', { path: 'hostdir/victim.txt', content: 'pwned\n' }), message);
    expectError(await call('write_file', { path: 'hostdir/new.txt', content: 'pwned\n' }), message);
    expectError(
      await call('edit_file', { path: 'hostdir/victim.txt', old_string: 'original', new_string: 'pwned' }),
      message,
    );
    expect(existsSync('/etc/x')).toBe(false);
    expect(existsSync(join(hostDir, 'new.txt'))).toBe(false);
    expect(readFileSync(victim, 'utf8')).toBe('original\n');
  });

  it('refuses a dangling symlink for reading and writing and creates nothing at its target', async () => {
    await shell(`ln -s ${hostDir}/created-through-link.txt dangling && ln -s not-there-yet.txt dangling-inside`);
    expectError(
      await call('read_file', { path: 'dangling' }),
      "leads outside the sandbox's working directory through a symbolic link",
    );
    expectError(
      await call('write_file', { path: 'dangling', content: 'x' }),
      "leads outside the sandbox's working directory through a symbolic link",
    );
    expect(existsSync(join(hostDir, 'created-through-link.txt'))).toBe(false);
    expectError(await call('read_file', { path: 'dangling-inside' }), 'is a symbolic link that points nowhere');
    expectError(
      await call('write_file', { path: 'dangling-inside', content: 'x' }),
      'is a symbolic link that points nowhere',
    );
    expectError(await call('read_file', { path: 'not-there-yet.txt' }), 'No such file');
  });

  it(
    'follows symlinks that stay inside, as the sandbox sees them (relative, or absolute under its working ' +
      'directory)',
    async () => {
      await shell(
        'mkdir -p real/sub && echo inside > real/sub/f.txt && ln -s real rel-link && ln -s "$PWD/real/sub" ' +
          'abs-link && ln -s ../f.txt real/sub/up && echo top > real/f.txt',
      );
      expect((await call('read_file', { path: 'rel-link/sub/f.txt' })).structuredContent).toMatchObject({
        content: 'inside\n',
      });
      expect((await call('read_file', { path: 'abs-link/f.txt' })).structuredContent).toMatchObject({
        content: 'inside\n',
      });
      expect((await call('read_file', { path: 'abs-link/up' })).structuredContent).toMatchObject({ content: 'top\n' });
      expect(
        (await call('write_file', { path: 'rel-link/sub/new.txt', content: 'n' })).structuredContent,
      ).toMatchObject({
        created: true,
      });
      expect((await call('list_files', { path: 'abs-link' })).structuredContent).toMatchObject({
        entries: expect.arrayContaining([expect.objectContaining({ path: 'new.txt' })]),
      });
    },
  );
});

/** What the file tools say of paths is what the sandbox sees: /home/user, under bubblewrap. */
const describeSandboxView = needs('bubblewrap').describe;

describeSandboxView('read_file', () => {
  const lines = Array.from({ length: 5000 }, (_, i) => `line ${i + 1}`);
  const text = `${lines.join('\n')}\n`;

  it('pages a 5000-line file by 2000 lines, with next_offset until the end', async () => {
    await call('write_file', { path: 'long.txt', content: text });
    const first = await call('read_file', { path: 'long.txt' });
    expect(first.isError).toBeFalsy();
    expect(first.structuredContent).toMatchObject({
      encoding: 'utf8',
      start_line: 1,
      end_line: 2000,
      total_lines: 5000,
      next_offset: 2001,
      truncated: true,
    });
    expect(first.structuredContent?.content).toBe(`${lines.slice(0, 2000).join('\n')}\n`);
    let content = first.structuredContent?.content as string;
    let next = first.structuredContent?.next_offset as number | null;
    const pages: Array<Record<string, unknown> | undefined> = [];
    while (next !== null && pages.length < 5) {
      const page = await call('read_file', { path: 'long.txt', offset: next });
      pages.push(page.structuredContent);
      content += page.structuredContent?.content as string;
      next = page.structuredContent?.next_offset as number | null;
    }
    expect(pages).toEqual([
      expect.objectContaining({ start_line: 2001, end_line: 4000, next_offset: 4001, truncated: true }),
      expect.objectContaining({ start_line: 4001, end_line: 5000, next_offset: null, truncated: false }),
    ]);
    expect(content).toBe(text);
  });

  it('reports an offset past the end of the file as an error', async () => {
    await call('write_file', { path: 'short.txt', content: 'one\ntwo\n' });
    expectError(
      await call('read_file', { path: 'short.txt', offset: 3 }),
      'offset 3 is past the end of /home/user/short.txt, which has 2 lines',
    );
  });

  it('returns a binary file read with auto as base64 identical to what was written', async () => {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => (i * 37 + 11) % 256));
    const data = bytes.toString('base64');
    const written = await call('write_file', { path: 'blob.bin', content: data, encoding: 'base64' });
    expect(written.structuredContent).toMatchObject({ bytes_written: 256, created: true });
    const read = await call('read_file', { path: 'blob.bin' });
    expect(read.isError).toBeFalsy();
    expect(read.structuredContent).toMatchObject({
      encoding: 'base64',
      content: data,
      size_bytes: 256,
      mime_type: null,
    });
  });

  it('returns a PNG read with auto as an image content block', async () => {
    await call('write_file', { path: 'img/dot.png', content: PNG_BASE64, encoding: 'base64' });
    const read = await call('read_file', { path: 'img/dot.png' });
    expect(read.isError).toBeFalsy();
    expect(read.content).toContainEqual({ type: 'image', mimeType: 'image/png', data: PNG_BASE64 });
    expect(read.structuredContent).toMatchObject({
      encoding: 'image',
      mime_type: 'image/png',
      size_bytes: Buffer.from(PNG_BASE64, 'base64').length,
    });
  });

  it('refuses encoding utf8 on binary data', async () => {
    await call('write_file', { path: 'zeros.bin', content: Buffer.alloc(16).toString('base64'), encoding: 'base64' });
    expectError(
      await call('read_file', { path: 'zeros.bin', encoding: 'utf8' }),
      'is not UTF-8 text; read it with encoding "base64"',
    );
  });

  it('refuses a file over the 10 MiB read limit and says to page it or use run_command', async () => {
    await shell('head -c 11000000 /dev/zero > big');
    const read = await call('read_file', { path: 'big' });
    expectError(read, 'is 11000000 bytes, over the 10485760-byte read limit');
    expect(textOf(read)).toContain('offset/limit');
    expect(textOf(read)).toContain('run_command');
  });
});

describeSandboxView('edit_file and write_file', () => {
  it(
    'reports a missing old_string, ' + 'an ambiguous one (pointing at replace_all), and replaces all on request',
    async () => {
      await call('write_file', { path: 'edit.txt', content: 'alpha beta\nalpha gamma\n' });
      expectError(
        await call('edit_file', { path: 'edit.txt', old_string: 'delta', new_string: 'x' }),
        'old_string was not found in /home/user/edit.txt',
      );
      const twice = await call('edit_file', { path: 'edit.txt', old_string: 'alpha', new_string: 'omega' });
      expectError(twice, 'old_string occurs 2 times');
      expect(textOf(twice)).toContain('replace_all');
      const all = await call('edit_file', {
        path: 'edit.txt',
        old_string: 'alpha',
        new_string: 'omega',
        replace_all: true,
      });
      expect(all.isError).toBeFalsy();
      expect(all.structuredContent).toEqual({ path: '/home/user/edit.txt', replacements: 2 });
      expect((await call('read_file', { path: 'edit.txt' })).structuredContent?.content).toBe(
        'omega beta\nomega gamma\n',
      );
    },
  );

  it('creates parent directories, reporting created true, then false when it overwrites', async () => {
    const first = await call('write_file', { path: 'deep/er/still/file.txt', content: 'v1' });
    expect(first.structuredContent).toEqual({
      path: '/home/user/deep/er/still/file.txt',
      bytes_written: 2,
      created: true,
    });
    const second = await call('write_file', { path: 'deep/er/still/file.txt', content: 'v2!' });
    expect(second.structuredContent).toEqual({
      path: '/home/user/deep/er/still/file.txt',
      bytes_written: 3,
      created: false,
    });
    const home = findWorkspaceHome(server.sandboxRoot, 'deep');
    expect(readFileSync(join(home ?? '', 'deep/er/still/file.txt'), 'utf8')).toBe('v2!');
  });
});

describeSandboxView('list_files', () => {
  const pathsOf = (result: ToolResult): string[] =>
    (result.structuredContent!.entries as Array<{ path: string }>).map((e) => e.path);

  beforeAll(async () => {
    for (const path of ['tree/a.txt', 'tree/.secret', 'tree/sub/b.txt', 'tree/sub/.hid', 'tree/sub/deeper/c.txt']) {
      await call('write_file', { path, content: 'x' });
    }
  });

  it('lists one level by default, without hidden names', async () => {
    const listed = await call('list_files', { path: 'tree' });
    expect(listed.structuredContent).toMatchObject({ path: '/home/user/tree', truncated: false });
    expect(pathsOf(listed)).toEqual(['a.txt', 'sub/']);
    expect(listed.structuredContent?.entries).toContainEqual(
      expect.objectContaining({ path: 'a.txt', type: 'file', size: 1 }),
    );
  });

  it('recurses to the given depth only', async () => {
    expect(pathsOf(await call('list_files', { path: 'tree', depth: 2 }))).toEqual([
      'a.txt',
      'sub/',
      'sub/b.txt',
      'sub/deeper/',
    ]);
    expect(pathsOf(await call('list_files', { path: 'tree', depth: 3 }))).toEqual([
      'a.txt',
      'sub/',
      'sub/b.txt',
      'sub/deeper/',
      'sub/deeper/c.txt',
    ]);
  });

  it('shows names starting with a dot with include_hidden', async () => {
    expect(pathsOf(await call('list_files', { path: 'tree', depth: 2, include_hidden: true }))).toEqual([
      '.secret',
      'a.txt',
      'sub/',
      'sub/.hid',
      'sub/b.txt',
      'sub/deeper/',
    ]);
  });
});
