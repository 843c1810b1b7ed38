/**
 * The artifact that deploys: one self-contained file per entry, that runs alone in an empty directory; beside it, the
 * source maps that stacks are read through (functions/mcp/stack-maps.ts).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { inflateRawSync } from 'node:zlib';

import { describeTools, TOOLS } from '../../functions/mcp/tools/registry';
import { connectClient } from '../support/clients';
import { createHarness } from '../support/harness';
import { startServer, stopAllServers } from '../support/server';

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

it('builds dist/index.js and dist/stdio.js, each one file importing only Node built-ins, with their maps', async () => {
  const outdir = mkdtempSync(join(tmpdir(), 'bundle-'));
  try {
    // build.mjs is an ES module: run its exported build() in a child Node, as npm run build does.
    const script = `import('${pathToFileURL(resolve(ROOT, 'build.mjs')).href}').then((m) => m.build({ outdir: process.argv[1], metafile: true, logLevel: 'silent' })).then((r) => process.stdout.write(JSON.stringify(r.metafile)))`;
    const metafile = JSON.parse(
      execFileSync(process.execPath, ['-e', script, outdir], { cwd: ROOT, encoding: 'utf8' }),
    ) as Metafile;
    const outputs = Object.keys(metafile.outputs).map((p) => p.slice(p.lastIndexOf('/') + 1));
    expect(outputs.sort()).toEqual(['index.js', 'index.js.map', 'stdio.js', 'stdio.js.map']);
    // The chunks compiled on first use have their maps too, and the core its code cache for this Node (code-cache.test.ts).
    const files = readdirSync(outdir).sort();
    expect(files.filter((file) => !file.endsWith('.cache'))).toEqual([
      'e2b-sdk.js.map',
      'index.js',
      'index.js.map',
      'jose.js.map',
      'mcp-core.js.map',
      'stdio.js',
      'stdio.js.map',
    ]);
    expect(files.filter((file) => file.endsWith('.cache'))).toEqual([
      expect.stringMatching(/^mcp-core\.js\.[0-9a-f]{12}-[0-9a-f]{8}\.cache$/),
    ]);
    // The HTTP entry starts without compiling the SDK, zod or the tools: they travel in the deferred core.
    const index = Object.entries(metafile.outputs).find(([path]) => path.endsWith('index.js'))?.[1];
    const startUpInputs = Object.keys(index?.inputs ?? {});
    expect(startUpInputs).toContain('functions/mcp/core-modules.ts');
    expect(
      startUpInputs.filter((input) => input.includes('node_modules') || input.startsWith('functions/mcp/tools/')),
    ).toEqual([]);
    // The SDK's ajv (JSON Schema validation of what a client supplies, never asked of this server) is left out
    // (build.mjs NO_AJV): the core's map names the SDK's stand-in module, and no file of ajv.
    const coreSources = (JSON.parse(readFileSync(join(outdir, 'mcp-core.js.map'), 'utf8')) as { sources: string[] })
      .sources;
    expect(coreSources.filter((source) => /ajv/.test(source))).toEqual([
      expect.stringMatching(/@modelcontextprotocol\/server\/dist\/ajvProvider-[\w-]+\.mjs$/),
    ]);
    // stdio.js carries the core's modules itself, so its inputs show what the core is made of.
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
    // Of the SDK's public zod schemas only those the server runs are built (build.mjs SPEC_SCHEMAS_ON_USE): a few of
    // @modelcontextprotocol/core's spec schemas (~3 KB of ~12 KB), none of its OAuth schemas (~5 KB).
    expect(bytesOf(/@modelcontextprotocol\/core\/dist\/schemas-/)).toBeGreaterThan(0);
    expect(bytesOf(/@modelcontextprotocol\/core\/dist\/schemas-/)).toBeLessThan(6_000);
    expect(bytesOf(/@modelcontextprotocol\/core\/dist\/auth-/)).toBe(0);
    for (const [path, output] of Object.entries(metafile.outputs)) {
      if (path.endsWith('.map')) continue;
      expect(output.bytes).toBeLessThan(MAX_BUNDLE_BYTES);
      const externals = output.imports.filter((i) => i.external).map((i) => i.path);
      for (const external of externals) expect(`${path}: ${external}`).toMatch(/: (node:)?[a-z_]+(\/[a-z_]+)?$/);
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
});

it('serves MCP from index.js copied alone into an empty directory', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lonely-'));
  copyFileSync(resolve(ROOT, 'dist/index.js'), join(dir, 'index.js'));
  const server = await startServer({ bundle: join(dir, 'index.js'), cwd: dir });
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
  // The first initialize is answered before the core is loaded: a tool call proves the embedded core runs too.
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
  // The core's text, as index.js carries it (build.mjs deferredModulePlugin: base64 raw deflate).
  const stored = /inflateRawSync\(Buffer\.from\("([A-Za-z0-9+/=]+)"/.exec(
    readFileSync(resolve(ROOT, 'dist/index.js'), 'latin1'),
  );
  const core = inflateRawSync(Buffer.from(stored?.[1] ?? '', 'base64')).toString('latin1');
  // build.mjs toolListDefine: the list travels as JSON text, so the bundle does not make it from the tools' zod schemas.
  const computed = describeTools(TOOLS);
  expect(computed.map((tool) => tool.name)).toHaveLength(10);
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
