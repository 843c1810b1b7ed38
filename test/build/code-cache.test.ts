/**
 * The core's V8 code cache (functions/mcp/bundle/code-cache.ts): made at build time for each Node asked, beside the
 * bundle; read
 * by that Node only (a cache of another Node build can crash the process rather than be refused), refused by V8
 * under other flags, and never needed: without one the core compiles as before.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { NODE_20_10 } from '../support/deploy-tools';
import { startServer, stopAllServers } from '../support/server';
import { needs } from '../support/needs';

const ROOT = resolve(__dirname, '../..');
const CACHE_FILE = /^mcp-core\.js\.([0-9a-f]{12})-([0-9a-f]{8})\.cache$/;

/** Says on stderr how the bundle compiled its core: `code-cache-probe used|rejected|none`. */
const PROBE = `
const vm = require('node:vm');
const Script = vm.Script;
vm.Script = class extends Script {
  constructor(source, options) {
    super(source, options);
    if (options && options.filename === 'mcp-core.js') {
      const state = options.cachedData === undefined ? 'none' : this.cachedDataRejected ? 'rejected' : 'used';
      process.stderr.write('code-cache-probe ' + state + '\\n');
    }
  }
};
`;

let scratch: string;
let probe: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'code-cache-'));
  probe = join(scratch, 'probe.cjs');
  writeFileSync(probe, PROBE);
});

afterAll(async () => {
  await stopAllServers();
  rmSync(scratch, { recursive: true, force: true });
});

/** Builds into a fresh directory, with the code cache made by `nodes` (paths; the running Node when omitted). */
function buildInto(name: string, nodes?: string[]): string {
  const outdir = join(scratch, name);
  const options = JSON.stringify({ outdir, logLevel: 'silent', ...(nodes !== undefined && { codeCacheNodes: nodes }) });
  execFileSync(
    process.execPath,
    ['-e', `import('${pathToFileURL(resolve(ROOT, 'build.mjs')).href}').then((m) => m.build(${options}))`],
    { cwd: ROOT },
  );
  return outdir;
}

function cacheFiles(dir: string): string[] {
  return readdirSync(dir).filter((file) => file.endsWith('.cache'));
}

/** Runs the bundle in `dir` (with `node`), calls a tool, and returns how its core was compiled. */
async function serveOneCall(dir: string, options: { node?: string; nodeOptions?: string } = {}): Promise<string> {
  const server = await startServer({
    bundle: join(dir, 'index.js'),
    node: options.node,
    env: { MCP_AUTH: 'none', NODE_OPTIONS: `--require ${probe} ${options.nodeOptions ?? ''}`.trim() },
  });
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
  };
  const init = await fetch(server.url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  });
  const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id') ?? '' };
  await init.text();
  const call = await fetch(server.url, {
    method: 'POST',
    headers: session,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'run_command', arguments: { command: 'echo served-by-the-core' } },
    }),
  });
  expect(call.status).toBe(200);
  expect(await call.text()).toContain('served-by-the-core');
  const states = [...server.stderr().matchAll(/code-cache-probe (\w+)/g)].map((match) => match[1]);
  await server.stop();
  expect(states).toHaveLength(1);
  return states[0] ?? '';
}

describe('a build for the running Node', () => {
  let built: string;
  beforeAll(() => {
    built = buildInto('own');
  });

  it('writes one cache, named for the core chunk and the runtime, that the same Node uses', async () => {
    expect(cacheFiles(built)).toEqual([expect.stringMatching(CACHE_FILE)]);
    // A second build replaces it rather than adding one.
    buildInto('own');
    expect(cacheFiles(built)).toHaveLength(1);
    expect(await serveOneCall(built)).toBe('used');
  });

  it('is refused by V8 under other flags, and the core compiles without it', async () => {
    expect(await serveOneCall(built, { nodeOptions: '--stack-trace-limit=50' })).toBe('rejected');
  });

  it('is not read by another runtime, nor for another build of the core', async () => {
    const [file] = cacheFiles(built);
    const [, chunkHash, runtimeKey] = CACHE_FILE.exec(file ?? '') ?? [];
    const otherRuntime = join(scratch, 'other-runtime');
    cpSync(built, otherRuntime, { recursive: true });
    renameSync(join(otherRuntime, file ?? ''), join(otherRuntime, `mcp-core.js.${chunkHash}-00000000.cache`));
    expect(await serveOneCall(otherRuntime)).toBe('none');
    const otherBuild = join(scratch, 'other-build');
    cpSync(built, otherBuild, { recursive: true });
    renameSync(join(otherBuild, file ?? ''), join(otherBuild, `mcp-core.js.000000000000-${runtimeKey}.cache`));
    expect(await serveOneCall(otherBuild)).toBe('none');
  });

  it('is not needed: a build without one serves the same', async () => {
    const bare = buildInto('none', []);
    expect(cacheFiles(bare)).toEqual([]);
    expect(await serveOneCall(bare)).toBe('none');
  });
});

// Node 20.20 and FC's 20.10.0 share V8 11.3.244.8, yet a cache from one crashed the other: each reads only its own.
const withNode2010 = needs('the deploy tools').it;
withNode2010('makes a cache for FC’s Node 20.10.0 beside the running Node’s, and each Node uses its own', async () => {
  const both = buildInto('both', [process.execPath, NODE_20_10]);
  const files = cacheFiles(both);
  expect(files).toHaveLength(2);
  expect(new Set(files.map((file) => CACHE_FILE.exec(file)?.[1])).size).toBe(1);
  expect(await serveOneCall(both, { node: NODE_20_10 })).toBe('used');
  expect(await serveOneCall(both)).toBe('used');
});
