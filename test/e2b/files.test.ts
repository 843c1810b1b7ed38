/**
 * The file tools on the E2B backend, through the built bundle and the real SDK (envd's filesystem service and
 * /files), against the local E2B service: unicode and binary round trips, sizes near the limits, edits,
 * listings, and paths anywhere in the VM.
 */
import { failure, NODES, ok, suiteWire, wireDescribe } from '../support/e2b-wire';

interface ReadOut {
  path: string;
  encoding: string;
  content: string;
  size_bytes: number;
  total_lines: number | null;
}
interface ListOut {
  path: string;
  entries: Array<{ path: string; type: string; size: number }>;
  truncated: boolean;
}

wireDescribe.each(NODES)('the file tools on E2B, server on %s', (_name, node) => {
  const suite = suiteWire(node);

  const call = (name: string, args: Record<string, unknown>) => suite.client.callTool(name, args);

  it('writes and reads back unicode text exactly, and the bytes land in the sandbox', async () => {
    const text = 'héllo ✓ 日本語 🎉\nsecond line\n';
    expect(ok(await call('write_file', { path: 'docs/unicode.txt', content: text }))).toEqual({
      path: '/home/user/docs/unicode.txt',
      bytes_written: Buffer.byteLength(text),
      created: true,
    });
    expect(ok<ReadOut>(await call('read_file', { path: 'docs/unicode.txt' }))).toMatchObject({
      encoding: 'utf8',
      content: text,
      size_bytes: Buffer.byteLength(text),
    });
    expect(ok<{ stdout: string }>(await call('run_command', { command: 'cat docs/unicode.txt' })).stdout).toBe(text);
    expect(ok(await call('write_file', { path: 'docs/unicode.txt', content: 'over' }))).toMatchObject({
      created: false,
    });
  });

  it('round-trips every byte value through base64', async () => {
    const bytes = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7) % 256));
    ok(await call('write_file', { path: 'bin/all.bin', content: bytes.toString('base64'), encoding: 'base64' }));
    const back = ok<ReadOut>(await call('read_file', { path: 'bin/all.bin' }));
    expect(back).toMatchObject({ encoding: 'base64', size_bytes: 4096 });
    expect(Buffer.from(back.content, 'base64').equals(bytes)).toBe(true);
  });

  it('moves a file near the request limit both ways, and refuses one over the read limit', async () => {
    // 2.5 MiB of text: about 2.5 MiB of JSON, under the 4 MiB body limit.
    const big = 'abcdefghij'.repeat(262_144);
    ok(await call('write_file', { path: 'big.txt', content: big }));
    const back = ok<ReadOut>(await call('read_file', { path: 'big.txt', limit: 1 }));
    expect(back).toMatchObject({ size_bytes: big.length, total_lines: 1 });
    expect(back.content.startsWith(big.slice(0, 100_000))).toBe(true);
    expect(ok<{ stdout: string }>(await call('run_command', { command: 'wc -c < big.txt' })).stdout).toBe(
      `${big.length}\n`,
    );
    ok(await call('run_command', { command: 'head -c 11000000 /dev/zero > huge.bin' }));
    expect(failure(await call('read_file', { path: 'huge.bin' }))).toMatch(
      /11000000 bytes, over the 10485760-byte read limit/,
    );
  });

  it('edits a file in place', async () => {
    ok(await call('write_file', { path: 'app.py', content: 'x = 1\ny = 1\n' }));
    expect(failure(await call('edit_file', { path: 'app.py', old_string: '= 1', new_string: '= 2' }))).toMatch(
      /2 times|replace_all/,
    );
    expect(ok(await call('edit_file', { path: 'app.py', old_string: 'y = 1', new_string: 'y = 2' }))).toEqual({
      path: '/home/user/app.py',
      replacements: 1,
    });
    expect(ok<ReadOut>(await call('read_file', { path: 'app.py' })).content).toBe('x = 1\ny = 2\n');
  });

  it('lists to the requested depth, hidden names only on request, directories marked', async () => {
    ok(
      await call('run_command', {
        command: 'mkdir -p tree/a/b && echo 1 > tree/a/one.txt && echo 22 > tree/a/b/two.txt && touch tree/.hidden',
      }),
    );
    const shallow = ok<ListOut>(await call('list_files', { path: 'tree' }));
    expect(shallow).toMatchObject({ path: '/home/user/tree', truncated: false });
    expect(shallow.entries.map((e) => e.path)).toEqual(['a/']);
    const deep = ok<ListOut>(await call('list_files', { path: 'tree', depth: 2, include_hidden: true }));
    expect(deep.entries.map((e) => [e.path, e.type])).toEqual([
      ['.hidden', 'file'],
      ['a/', 'directory'],
      ['a/b/', 'directory'],
      ['a/one.txt', 'file'],
    ]);
    expect(deep.entries.find((e) => e.path === 'a/one.txt')?.size).toBe(2);
    expect(failure(await call('list_files', { path: 'tree/a/one.txt' }))).toContain('is not a directory');
  });

  it('reaches paths anywhere in the VM: writes /tmp, reads /etc, and cannot write the read-only system', async () => {
    ok(await call('write_file', { path: '/tmp/abs/note.txt', content: 'in tmp' }));
    expect(ok<{ stdout: string }>(await call('run_command', { command: 'cat /tmp/abs/note.txt' })).stdout).toBe(
      'in tmp',
    );
    expect(ok<ReadOut>(await call('read_file', { path: '/etc/os-release' })).content).toContain('NAME=');
    const text = failure(await call('write_file', { path: '/usr/mcp-wire-test.txt', content: 'no' }));
    expect(text).toContain('/usr/mcp-wire-test.txt');
    expect(text).not.toMatch(/\n\s+at /);
  });

  it('reports a missing file and a directory read clearly', async () => {
    expect(failure(await call('read_file', { path: 'nope.txt' }))).toMatch(/nope\.txt/);
    expect(failure(await call('read_file', { path: 'tree' }))).toContain('is a directory');
  });
});
