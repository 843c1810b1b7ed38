// Which source files under functions/ run while the server answers ONE tools/call of run_command
// `{"command":"echo hi"}` on the local backend, after warm-up: once for the 2025 era (a session) and once for the
// 2026-07-28 era (a sandbox handle, no session). The server entry is bundled unminified with a source map, run under
// V8's precise coverage (a preload that drives node:inspector in the child), and each counted range of the measured
// call is mapped back through the map to its original file.
//
//   node scripts/call-path.mjs          the two lists, for a person
//   node scripts/call-path.mjs --json   { legacy, modern } as JSON (test/build/call-path.test.ts)
import { fork } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ENTRY = 'functions/mcp/index.ts';
const COMMAND = 'echo hi';
const NAMES_PER_FILE = 4;
/**
 * How long to let the server settle after the warm-up, before coverage is reset: the backend's start-up probe runs
 * on a timer 500 ms after the core loads (index.ts STARTUP_PROBE_DELAY_MS), which would otherwise land in whichever
 * measured call is under way then.
 */
const SETTLE_MS = 1000;

/** @typedef {import('node:inspector').Profiler.ScriptCoverage} ScriptCoverage */
/** @typedef {import('node:module').SourceMap} SourceMap */
/** @typedef {{ file: string, functions: string[] }} FileRun */
/** @typedef {() => Promise<ScriptCoverage[]>} TakeCoverage */
/** @typedef {{ id?: unknown, result?: any, error?: unknown }} RpcMessage */

const PRELOAD = `'use strict';
const inspector = require('node:inspector');
const s = new inspector.Session();
s.connect();
s.post('Profiler.enable');
s.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
process.on('message', (m) => {
  if (!m || !m.take) return;
  s.post('Profiler.takePreciseCoverage', (err, r) =>
    process.send(err ? { error: String(err) } : { coverage: r.result }));
});
`;

/** A port free on 127.0.0.1 a moment ago. */
/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = /** @type {import('node:net').AddressInfo} */ (server.address());
      server.close(() => resolvePort(address.port));
    });
  });
}

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The JSON-RPC messages of a response: one JSON body, or the `data:` lines of an SSE stream.
 * @param {Response} response
 * @returns {Promise<RpcMessage[]>}
 */
async function messagesOf(response) {
  const text = await response.text();
  if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    return text
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trim())
      .filter(Boolean)
      .map((data) => JSON.parse(data));
  }
  return text.trim() === '' ? [] : [JSON.parse(text)];
}

/**
 * The one reply (with `id`) among a response's messages.
 * @param {RpcMessage[]} messages
 * @param {string} what
 */
function replyOf(messages, what) {
  const reply = messages.find((m) => m && 'id' in m && ('result' in m || 'error' in m));
  if (!reply) throw new Error(`${what}: no reply in ${JSON.stringify(messages)}`);
  if (reply.error) throw new Error(`${what}: ${JSON.stringify(reply.error)}`);
  return reply.result;
}

/**
 * Throws unless a run_command result carries `hi`.
 * @param {any} result
 * @param {string} what
 */
function expectHi(result, what) {
  const text = JSON.stringify(result);
  if (!/\bhi\b/.test(text) || result.isError) throw new Error(`${what}: no "hi" in ${text}`);
}

/**
 * Bundles the entry (unminified, with a map) into `dir`; the bundle's path and its map's text.
 * @param {string} dir
 */
async function bundle(dir) {
  const { build } = await import('esbuild');
  const outfile = join(dir, 'index.js');
  await build({
    entryPoints: [join(ROOT, ENTRY)],
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    sourcemap: 'external',
    loader: { '.py': 'text' },
    minify: false,
    outfile,
    logLevel: 'silent',
  });
  return { outfile, mapText: readFileSync(`${outfile}.map`, 'utf8') };
}

/**
 * The forked server and a way to take (and reset) its coverage.
 * @param {string} outfile
 * @param {string} dir
 * @param {number} port
 */
function startChild(outfile, dir, port) {
  const preload = join(dir, 'preload.cjs');
  writeFileSync(preload, PRELOAD);
  const sandboxes = join(dir, 'sandboxes');
  mkdirSync(sandboxes, { mode: 0o711 });
  const home = join(dir, 'home');
  mkdirSync(home);
  const child = fork(outfile, [], {
    execArgv: ['--require', preload],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      HOST: '127.0.0.1',
      PORT: String(port),
      MCP_AUTH: 'none',
      LOG_LEVEL: 'error',
      LOCAL_SANDBOX_ROOT: sandboxes,
      LOCAL_SANDBOX_DISK_MB: '0',
    },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  /** @type {Promise<{ code: number | null, signal: string | null }>} */
  const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  /** @type {TakeCoverage} */
  const take = () =>
    new Promise((resolveTake, reject) => {
      /** @param {any} m */
      const onMessage = (m) => {
        if (!m || !('coverage' in m || 'error' in m)) return;
        child.off('message', onMessage);
        if (m.error) reject(new Error(m.error));
        else resolveTake(m.coverage);
      };
      child.on('message', onMessage);
      child.send({ take: true });
    });
  return { child, take, exited, stderr: () => stderr };
}

/**
 * @param {string} base
 * @param {Promise<unknown>} exited
 */
async function waitForPort(base, exited) {
  /** @type {unknown} */
  let gone;
  exited.then((e) => {
    gone = e;
  });
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    if (gone) throw new Error(`server exited before answering: ${JSON.stringify(gone)}`);
    try {
      await fetch(`${base}/`, { signal: AbortSignal.timeout(1000) });
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new Error('server did not answer within 30 s');
}

/**
 * The 2025 era: a session, then run_command in it. Returns the coverage of the measured call.
 * @param {string} base
 * @param {TakeCoverage} take
 */
async function measureLegacy(base, take) {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
  };
  let id = 0;
  /**
   * @param {object} body
   * @param {Record<string, string>} [extra]
   */
  const post = (body, extra = {}) =>
    fetch(`${base}/mcp`, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify(body) });
  const init = await post({
    jsonrpc: '2.0',
    id: ++id,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
  });
  replyOf(await messagesOf(init), 'initialize');
  const session = init.headers.get('mcp-session-id');
  if (!session) throw new Error('initialize: no mcp-session-id');
  const inSession = { 'mcp-session-id': session };
  const note = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, inSession);
  await note.text();
  /** @param {string} what */
  const call = async (what) => {
    const response = await post(
      {
        jsonrpc: '2.0',
        id: ++id,
        method: 'tools/call',
        params: { name: 'run_command', arguments: { command: COMMAND } },
      },
      inSession,
    );
    const result = replyOf(await messagesOf(response), what);
    expectHi(result, what);
    return result;
  };
  await call('2025 warm-up');
  await sleep(SETTLE_MS);
  await take();
  await call('2025 measured call');
  return take();
}

/**
 * The 2026-07-28 era: no session; a handle from a first call, passed in the argument and its header.
 * @param {string} base
 * @param {TakeCoverage} take
 */
async function measureModern(base, take) {
  let id = 100;
  /**
   * @param {string} what
   * @param {string} [sandbox]
   */
  const call = async (what, sandbox) => {
    /** @type {Record<string, string>} */
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'run_command',
    };
    /** @type {{ command: string, sandbox?: string }} */
    const args = { command: COMMAND };
    if (sandbox !== undefined) {
      args.sandbox = sandbox;
      headers['mcp-param-sandbox'] = sandbox;
    }
    const body = {
      jsonrpc: '2.0',
      id: ++id,
      method: 'tools/call',
      params: {
        name: 'run_command',
        arguments: args,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    };
    const response = await fetch(`${base}/mcp`, { method: 'POST', headers, body: JSON.stringify(body) });
    const result = replyOf(await messagesOf(response), what);
    expectHi(result, what);
    return result;
  };
  const first = await call('2026 first call');
  const handle = first.structuredContent?.sandbox;
  if (typeof handle !== 'string')
    throw new Error(`2026 first call: no structuredContent.sandbox: ${JSON.stringify(first)}`);
  await call('2026 warm-up 1', handle);
  await call('2026 warm-up 2', handle);
  await sleep(SETTLE_MS);
  await take();
  await call('2026 measured call', handle);
  return take();
}

/**
 * Offsets of line starts in `text`, for offset → (line, column), zero-based.
 * @param {string} text
 */
function lineStarts(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

/**
 * @param {number[]} starts
 * @param {number} offset
 */
function position(starts, offset) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (/** @type {number} */ (starts[mid]) <= offset) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo, column: offset - /** @type {number} */ (starts[lo]) };
}

/**
 * The project file (`functions/…`) and line (one-based) that a bundle offset maps to, or undefined for code of
 * node_modules and for esbuild's own glue (no mapping on the offset's line: the entry found is another line's).
 * @param {SourceMap} map
 * @param {number[]} starts
 * @param {number} offset
 * @returns {{ file: string, line: number } | undefined}
 */
function projectFileAt(map, starts, offset) {
  const { line, column } = position(starts, offset);
  const entry = /** @type {Partial<import('node:module').SourceMapping>} */ (map.findEntry(line, column));
  const source = entry.originalSource;
  if (!source || entry.generatedLine !== line || source.includes('node_modules')) return undefined;
  const at = source.indexOf('functions/');
  return at < 0 ? undefined : { file: source.slice(at), line: (entry.originalLine ?? 0) + 1 };
}

/**
 * The coverage of the bundle's own script.
 * @param {ScriptCoverage[]} coverage
 * @param {string} bundleUrl
 */
function bundleScript(coverage, bundleUrl) {
  const script = coverage.find((s) => s.url === bundleUrl);
  if (!script) throw new Error(`no coverage for ${bundleUrl}: ${coverage.map((s) => s.url).join(', ')}`);
  return script;
}

/**
 * `{file, functions[]}` for each project file with a counted range in the bundle's coverage, sorted by file.
 * @param {ScriptCoverage[]} coverage
 * @param {string} bundleUrl
 * @param {string} text
 * @param {SourceMap} map
 * @returns {FileRun[]}
 */
function filesRun(coverage, bundleUrl, text, map) {
  const starts = lineStarts(text);
  /** @type {Map<string, Set<string>>} */
  const byFile = new Map();
  for (const fn of bundleScript(coverage, bundleUrl).functions) {
    fn.ranges.forEach((range, index) => {
      if (range.count <= 0) return;
      const at = projectFileAt(map, starts, range.startOffset);
      if (!at) return;
      const names = byFile.get(at.file) ?? new Set();
      byFile.set(at.file, names);
      // Name the function by its own range (index 0); a block of it adds nothing new.
      if (index === 0) names.add(fn.functionName || `(anonymous):${at.line}`);
    });
  }
  return [...byFile.keys()].sort().map((file) => ({ file, functions: [...(byFile.get(file) ?? [])] }));
}

/**
 * Checks that coverage offsets line up with the bundle text and its map: Node compiles a CommonJS module without a
 * textual wrapper, so a named function's start offset should lie just before its name in the text, and map to a
 * project file that has that name. Throws if fewer than 5 such functions are found, or one maps elsewhere.
 * @param {ScriptCoverage[]} coverage
 * @param {string} bundleUrl
 * @param {string} text
 * @param {SourceMap} map
 */
function checkOffsets(coverage, bundleUrl, text, map) {
  const starts = lineStarts(text);
  let checked = 0;
  for (const fn of bundleScript(coverage, bundleUrl).functions) {
    // Long plain names only: esbuild renames clashes (`release2`), which the original file does not have.
    if (!/^[A-Za-z_$][\w$]{5,}$/.test(fn.functionName) || /\d$/.test(fn.functionName)) continue;
    const start = /** @type {{ startOffset: number }} */ (fn.ranges[0]).startOffset;
    if (!text.slice(start, start + 24 + fn.functionName.length).includes(fn.functionName)) continue;
    const at = projectFileAt(map, starts, start);
    if (!at) continue;
    const original = readFileSync(join(ROOT, at.file), 'utf8');
    if (!original.includes(fn.functionName)) {
      throw new Error(`offset check: ${fn.functionName} maps to ${at.file}, which does not name it`);
    }
    if (++checked === 20) return;
  }
  if (checked < 5) throw new Error(`offset check: only ${checked} named functions start at their offsets`);
}

/**
 * Measures both eras in one server.
 * @returns {Promise<{ legacy: FileRun[], modern: FileRun[] }>}
 */
export async function measureCallPath() {
  const dir = mkdtempSync(join(tmpdir(), 'call-path-'));
  // The sandbox users must be able to enter LOCAL_SANDBOX_ROOT's parents (mkdtemp makes it 0700).
  chmodSync(dir, 0o711);
  let server;
  try {
    const { outfile, mapText } = await bundle(dir);
    const text = readFileSync(outfile, 'utf8');
    const { SourceMap } = await import('node:module');
    const map = new SourceMap(JSON.parse(mapText));
    const port = await freePort();
    server = startChild(outfile, dir, port);
    const base = `http://127.0.0.1:${port}`;
    try {
      await waitForPort(base, server.exited);
      const legacyCoverage = await measureLegacy(base, server.take);
      const modernCoverage = await measureModern(base, server.take);
      const bundleUrl = pathToFileURL(outfile).href;
      checkOffsets(legacyCoverage, bundleUrl, text, map);
      return {
        legacy: filesRun(legacyCoverage, bundleUrl, text, map),
        modern: filesRun(modernCoverage, bundleUrl, text, map),
      };
    } catch (error) {
      if (!(error instanceof Error)) throw error;
      error.message += server.stderr() ? `\nserver stderr:\n${server.stderr()}` : '';
      throw error;
    }
  } finally {
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGTERM');
      const stopped = await Promise.race([server.exited.then(() => true), sleep(5000).then(() => false)]);
      if (!stopped) {
        server.child.kill('SIGKILL');
        await server.exited;
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * @param {string} label
 * @param {FileRun[]} files
 */
function print(label, files) {
  console.log(`${label}: ${files.length} files`);
  for (const { file, functions } of files) {
    const names = functions.slice(0, NAMES_PER_FILE).join(', ');
    const more = functions.length > NAMES_PER_FILE ? `, … (+${functions.length - NAMES_PER_FILE})` : '';
    console.log(`  ${file}  [${names}${more}]`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const result = await measureCallPath();
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    print('2025 era (session)', result.legacy);
    print('2026-07-28 era (handle)', result.modern);
  }
}
