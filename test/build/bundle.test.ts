/**
 * The build's output: plain CommonJS files, one per entry and one per module loaded on first use (build.mjs
 * `DEFERRED_MODULES`), that run from any directory once copied together; beside them, the source maps that stacks
 * are read through (functions/mcp/stack-maps.ts). No ajv in any of them.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { describeTools, TOOLS } from '../../functions/mcp/tools/registry';
import { connectClient } from '../support/clients';
import { createHarness } from '../support/harness';
import { startServer, stopAllServers } from '../support/server';
import { DEFERRED_FILES } from '../support/shipped-files';

interface Metafile {
  outputs: Record<
    string,
    {
      bytes: number;
      imports: Array<{ path: string; external?: boolean }>;
      inputs: Record<string, { bytesInOutput: number }>;
    }
  >;
}

const ROOT = resolve(__dirname, '../..');
/** Size budget for each bundle (minified): zod ~100 KB, the MCP SDK ~200 KB, the E2B SDK and its RPC stack ~500 KB. */
const MAX_BUNDLE_BYTES = 1_500_000;

afterAll(stopAllServers);

it('builds plain CommonJS files: the entries, the deferred files they require, each with its map', async () => {
  const outdir = mkdtempSync(join(tmpdir(), 'bundle-'));
  try {
    // build.mjs is an ES module: run its exported build() in a child Node, as npm run build does.
    const script =
      `import('${pathToFileURL(resolve(ROOT, 'build.mjs')).href}')` +
      `.then((m) => m.build({ outdir: process.argv[1], metafile: true, logLevel: 'silent' }))` +
      `.then((r) => process.stdout.write(JSON.stringify({ entries: r.entries.metafile, rest: r.rest.metafile })))`;
    const built = JSON.parse(
      execFileSync(process.execPath, ['-e', script, outdir], { cwd: ROOT, encoding: 'utf8' }),
    ) as { entries: Metafile; rest: Metafile };
    const metafile: Metafile = { outputs: { ...built.entries.outputs, ...built.rest.outputs } };
    const files = readdirSync(outdir).sort();
    expect(files.filter((file) => !file.endsWith('.cache'))).toEqual([
      'e2b-sdk.js',
      'e2b-sdk.js.map',
      'index.js',
      'index.js.map',
      'jose.js',
      'jose.js.map',
      'mcp-core.js',
      'mcp-core.js.map',
      'stdio.js',
      'stdio.js.map',
      'telemetry.js',
      'telemetry.js.map',
    ]);
    // Every file index.js requires at run time ships with it (scripts/artifact.js).
    expect(files.filter((file) => file.endsWith('.js') && !['index.js', 'stdio.js'].includes(file))).toEqual(
      [...DEFERRED_FILES].sort(),
    );
    expect(files.filter((file) => file.endsWith('.cache'))).toEqual([
      expect.stringMatching(/^mcp-core\.js\.[0-9a-f]{12}-[0-9a-f]{8}\.cache$/),
    ]);
    // The HTTP entry starts without compiling the SDK, zod or the tools: they are in mcp-core.js.
    const index = Object.entries(metafile.outputs).find(([path]) => path.endsWith('/index.js'))?.[1];
    const startUpInputs = Object.keys(index?.inputs ?? {});
    expect(startUpInputs).toContain('functions/mcp/bundle/deferred-core.ts');
    expect(startUpInputs).not.toContain('functions/mcp/core.ts');
    expect(
      startUpInputs.filter((input) => input.includes('node_modules') || input.startsWith('functions/mcp/tools/')),
    ).toEqual([]);
    // The deferred files are required lazily, by their name beside the requiring file.
    expect(readFileSync(join(outdir, 'mcp-core.js'), 'latin1')).toContain('require("./e2b-sdk.js")');
    expect(readFileSync(join(outdir, 'mcp-core.js'), 'latin1')).toContain('require("./jose.js")');
    expect(readFileSync(join(outdir, 'mcp-core.js'), 'latin1')).toContain('require("./telemetry.js")');
    // OpenTelemetry is in telemetry.js alone: no other file carries a line of it.
    for (const [path, output] of Object.entries(metafile.outputs)) {
      if (path.endsWith('.map')) continue;
      const otel = Object.keys(output.inputs).filter((input) => input.includes('node_modules/@opentelemetry/'));
      expect({ path: basename(path), otel: otel.length > 0 }).toEqual({
        path: basename(path),
        otel: path.endsWith('/telemetry.js'),
      });
    }
    for (const file of files.filter((name) => name.endsWith('.js'))) {
      const text = readFileSync(join(outdir, file), 'latin1');
      // ASCII: the core's loader reads its file as latin1 (functions/mcp/bundle/code-cache.ts).
      expect(`${file}: ${Buffer.from(text, 'latin1').every((byte) => byte < 0x80)}`).toBe(`${file}: true`);
      // No ajv (the SDK's `_shims` resolve to functions/mcp/bundle/sdk-shims.ts).
      expect(`${file}: ${/ajv/i.test(text.replace('JSON Schema validation (ajv) is not in this build', ''))}`).toBe(
        `${file}: false`,
      );
    }
    for (const [path, output] of Object.entries(metafile.outputs)) {
      if (path.endsWith('.map')) continue;
      expect(Object.keys(output.inputs).filter((input) => /ajv/.test(input))).toEqual([]);
    }
    const stdioInputs = Object.entries(metafile.outputs).find(([path]) => path.endsWith('stdio.js'))?.[1].inputs ?? {};
    const bytesOf = (pattern: RegExp): number =>
      Object.entries(stdioInputs).reduce(
        (sum, [input, { bytesInOutput }]) => sum + (pattern.test(input) ? bytesInOutput : 0),
        0,
      );
    // zod is imported as a namespace (`import * as z`), so only what is used is bundled: `import { z }` would
    // bring all of it (~450 KB, ~45 ms more to start the core).
    expect(bytesOf(/node_modules\/zod\//)).toBeGreaterThan(10_000);
    expect(bytesOf(/node_modules\/zod\//)).toBeLessThan(150_000);
    // Of the SDK's public zod schemas only those the server runs are built (scripts/build/spec-schemas-on-use.mjs):
    // a few of @modelcontextprotocol/core's spec schemas (~3 KB of ~12 KB), none of its OAuth schemas (~5 KB).
    expect(bytesOf(/@modelcontextprotocol\/core\/dist\/schemas-/)).toBeGreaterThan(0);
    expect(bytesOf(/@modelcontextprotocol\/core\/dist\/schemas-/)).toBeLessThan(6_000);
    expect(bytesOf(/@modelcontextprotocol\/core\/dist\/auth-/)).toBe(0);
    for (const [path, output] of Object.entries(metafile.outputs)) {
      if (path.endsWith('.map')) continue;
      expect(output.bytes).toBeLessThan(MAX_BUNDLE_BYTES);
      const externals = output.imports.filter((i) => i.external).map((i) => i.path);
      for (const external of externals)
        expect(`${path}: ${external}`).toMatch(
          /: (?:(node:)?[a-z_]+(\/[a-z_]+)?|\.\/(?:mcp-core|e2b-sdk|jose|telemetry)\.js)$/,
        );
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
});

it('serves MCP from index.js copied with the files it requires into an empty directory, run elsewhere', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lonely-'));
  for (const file of ['index.js', ...DEFERRED_FILES]) copyFileSync(resolve(ROOT, 'dist', file), join(dir, file));
  const server = await startServer({ bundle: join(dir, 'index.js'), cwd: tmpdir() });
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  });
  expect(res.status).toBe(200);
  const sessionId = res.headers.get('mcp-session-id');
  expect(sessionId).toBeTruthy();
  expect(await res.text()).toContain('"protocolVersion":"2025-06-18"');
  // The first initialize is answered before the core is loaded: a tool call proves mcp-core.js runs too.
  const call = await fetch(server.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId ?? '',
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'run_command', arguments: { command: 'echo from-the-core' } },
    }),
  });
  expect(call.status).toBe(200);
  expect(await call.text()).toContain('from-the-core');
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('lists the tools as the build computed them, the same list the code computes from source', async () => {
  const core = readFileSync(resolve(ROOT, 'dist/mcp-core.js'), 'latin1');
  // build.mjs toolListJson: the list travels as JSON text, so the bundle does not make it from the tools' zod schemas.
  const computed = describeTools(TOOLS);
  expect(computed.map((tool) => tool.name)).toHaveLength(15);
  // Its start, up to the first character a JS string literal might escape, is in the core's text as it is.
  const start = /^[^\\'`$]*/.exec(JSON.stringify(computed))?.[0] ?? '';
  expect(start.length).toBeGreaterThan(60);
  expect(core).toContain(start);
  const server = await startServer();
  const fromBundle = await connectClient('v2', server.url);
  const fromSource = await createHarness().connect();
  try {
    const listed = (await fromBundle.listTools()).tools;
    expect(listed.map((tool) => tool.name)).toEqual(computed.map((tool) => tool.name));
    expect(listed).toEqual((await fromSource.listTools()).tools);
  } finally {
    await fromBundle.close();
    await fromSource.close();
    await server.stop();
  }
});
