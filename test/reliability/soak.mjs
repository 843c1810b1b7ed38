/**
 * Soak (issue 7; `npm run soak`, not in CI): mixed load on the built bundle for SOAK_MINUTES (10) with
 * SOAK_SESSIONS (20) sessions that are ended and replaced as they go, sampling the server's RSS every
 * SOAK_SAMPLE_S (10) s. After a warm-up (SOAK_WARMUP_S, 60; a fifth of a shorter run) RSS may grow by at
 * most 10 % (median of the first minute of samples against the median of the last), and no call may fail. Writes the
 * figures to bench/SOAK.md; exits 1 when a limit is broken.
 *
 * Node built-ins only: it runs straight from a checkout after `node build.mjs`.
 */
import { spawn, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const SESSIONS = Number(process.env.SOAK_SESSIONS ?? 20);
const SAMPLE_S = Number(process.env.SOAK_SAMPLE_S ?? 10);
const WARMUP_S = Number(process.env.SOAK_WARMUP_S ?? (MINUTES >= 5 ? 60 : Math.round(MINUTES * 12)));
/** Calls a session makes before it is ended (DELETE) and replaced by a new one. */
const SESSION_LIFETIME_CALLS = Number(process.env.SOAK_SESSION_CALLS ?? 200);
const MAX_GROWTH = 0.1;
const TOKEN = randomBytes(24).toString('hex');
const ACCEPT = 'application/json, text/event-stream';

// ---- the server -------------------------------------------------------------------------------------

const sandboxRoot = mkdtempSync(join(tmpdir(), 'mcp-soak-root-'));
chmodSync(sandboxRoot, 0o711);
const child = spawn(process.execPath, [join(ROOT, 'dist/index.js')], {
  env: {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    PORT: '0',
    LOCAL_SANDBOX_ROOT: sandboxRoot,
    LOCAL_SANDBOX_DISK_MB: '0',
    MCP_AUTH_TOKENS: TOKEN,
    MCP_MAX_SESSIONS: String(SESSIONS * 2),
    /* sessions churn faster than the default rate of new ones */ MCP_INITIALIZE_PER_MIN: '0',
    LOG_LEVEL: 'warn',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let serverOut = '';
child.stdout.setEncoding('utf8').on('data', (chunk) => (serverOut += chunk));
child.stderr.setEncoding('utf8').on('data', (chunk) => (serverOut += chunk));
// The listening line is logged at info; with LOG_LEVEL=warn the banner on stderr names the port instead.
const port = await new Promise((resolvePort, reject) => {
  const timer = setTimeout(() => reject(new Error(`server did not start:\n${serverOut}`)), 15_000);
  const check = () => {
    const match = /MCP endpoint: http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(serverOut);
    if (match) {
      clearTimeout(timer);
      resolvePort(Number(match[1]));
    }
  };
  child.stdout.on('data', check);
  child.stderr.on('data', check);
  child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${serverOut}`)));
});

// ---- HTTP -------------------------------------------------------------------------------------------

/** One request over its own connection; resolves with status, headers and the body text. */
function send(method, headers, body) {
  return new Promise((resolveSend, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/mcp', method, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolveSend({ status: res.statusCode, headers: res.headers, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const baseHeaders = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: ACCEPT };
let nextId = 1;

/** The JSON-RPC message with `id` in an answer (SSE or JSON). */
function messageFor(text, id) {
  const lines = text.includes('data: ')
    ? text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
    : [text];
  for (const line of lines) {
    try {
      const message = JSON.parse(line);
      if (message.id === id) return message;
    } catch {
      // not JSON
    }
  }
  return undefined;
}

async function openSession() {
  const res = await send(
    'POST',
    baseHeaders,
    JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'soak', version: '1' } },
    }),
  );
  const id = res.headers['mcp-session-id'];
  if (res.status !== 200 || typeof id !== 'string')
    throw new Error(`initialize: ${res.status} ${res.text.slice(0, 200)}`);
  const headers = { ...baseHeaders, 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' };
  await send('POST', headers, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  return headers;
}

// ---- the load ---------------------------------------------------------------------------------------

const stats = { calls: 0, errors: 0, sessionsOpened: 0, sessionsEnded: 0, firstErrors: [] };
const fail = (what) => {
  stats.errors += 1;
  if (stats.firstErrors.length < 10) stats.firstErrors.push(what);
};

/** The n-th call of a session: every kind of tool, each checked for its content. */
function plan(n, tag) {
  const path = `soak/f${n % 7}.txt`;
  switch (n % 9) {
    case 0:
      return ['write_file', { path, content: `${tag}-${n} hello\n` }, () => true];
    case 1:
      return ['read_file', { path: `soak/f${(n - 1) % 7}.txt` }, (s) => s.content === `${tag}-${n - 1} hello\n`];
    case 2:
      return [
        'edit_file',
        { path: `soak/f${(n - 2) % 7}.txt`, old_string: 'hello', new_string: 'world' },
        (s) => s.replacements === 1,
      ];
    case 3:
      return ['list_files', { path: 'soak' }, (s) => Array.isArray(s.entries) && s.entries.length > 0];
    case 4:
      return ['run_command', { command: `echo ${tag}-${n}` }, (s) => s.stdout === `${tag}-${n}\n`];
    case 5:
      return ['run_code', { code: `v = ${n}\nv * 2` }, (s) => s.results?.[0]?.text === String(n * 2)];
    case 6:
      return ['sandbox_status', {}, (s) => s.state === 'running'];
    case 7:
      return [
        'run_code',
        { code: `console.log("x".repeat(${n % 50}))`, language: 'javascript' },
        (s) => s.stdout === `${'x'.repeat(n % 50)}\n`,
      ];
    default:
      return ['manage_process', { action: 'list' }, (s) => Array.isArray(s.processes)];
  }
}

const deadline = Date.now() + MINUTES * 60_000;
let worker = 0;

async function runWorker() {
  const tag = `w${worker++}`;
  while (Date.now() < deadline) {
    let headers;
    try {
      headers = await openSession();
      stats.sessionsOpened += 1;
    } catch (err) {
      fail(`${tag} open: ${err.message}`);
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    for (let n = 0; n < SESSION_LIFETIME_CALLS && Date.now() < deadline; n += 1) {
      const [name, args, check] = plan(n, tag);
      const id = nextId++;
      try {
        const res = await send(
          'POST',
          headers,
          JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
        );
        stats.calls += 1;
        const message = messageFor(res.text, id);
        if (res.status !== 200) fail(`${tag} ${name}: HTTP ${res.status} ${res.text.slice(0, 160)}`);
        else if (message === undefined) fail(`${tag} ${name}: no answer ${res.text.slice(0, 160)}`);
        else if (message.error) fail(`${tag} ${name}: JSON-RPC ${message.error.code} ${message.error.message}`);
        else if (message.result.isError)
          fail(`${tag} ${name}: isError ${message.result.content?.[0]?.text?.slice(0, 160)}`);
        else if (!check(message.result.structuredContent ?? {}))
          fail(`${tag} ${name}: unexpected ${JSON.stringify(message.result.structuredContent).slice(0, 160)}`);
      } catch (err) {
        fail(`${tag} ${name}: ${err.message}`);
      }
    }
    try {
      const res = await send('DELETE', headers);
      if (res.status !== 200) fail(`${tag} DELETE: HTTP ${res.status}`);
      stats.sessionsEnded += 1;
    } catch (err) {
      fail(`${tag} DELETE: ${err.message}`);
    }
  }
}

// ---- RSS sampling -----------------------------------------------------------------------------------

const rssMiB = () =>
  Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
const started = Date.now();
const samples = [];
const sampler = setInterval(() => {
  const t = Math.round((Date.now() - started) / 1000);
  const rss = rssMiB();
  samples.push({ t, rss });
  console.log(
    `t=${String(t).padStart(4)} s  rss=${rss.toFixed(1)} MiB  calls=${stats.calls}  errors=${stats.errors}  ` +
      `sessions opened=${stats.sessionsOpened}`,
  );
}, SAMPLE_S * 1000);

console.log(
  `soak: ${MINUTES} min, ${SESSIONS} sessions (each replaced after ${SESSION_LIFETIME_CALLS} calls), warm-up ` +
    `${WARMUP_S} s, RSS every ${SAMPLE_S} s; server pid ${child.pid} on port ${port}`,
);
await Promise.all(Array.from({ length: SESSIONS }, runWorker));
clearInterval(sampler);

// ---- the verdict ------------------------------------------------------------------------------------

const health = JSON.parse(
  await new Promise((r, j) =>
    request({ host: '127.0.0.1', port, path: '/health', agent: false }, (res) => {
      let t = '';
      res.on('data', (c) => (t += c));
      res.on('end', () => r(t));
    })
      .on('error', j)
      .end(),
  ),
);
const exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
child.kill('SIGTERM');
const exit = await exited;
const leftoverWorkspaces = readdirSync(sandboxRoot).length;
rmSync(sandboxRoot, { recursive: true, force: true });

const after = samples.filter((s) => s.t >= WARMUP_S);
// RSS saws up and down with garbage collection: compare medians of a window (up to a minute of samples).
const window = Math.max(1, Math.min(Math.round(60 / SAMPLE_S), Math.floor(after.length / 2)));
const median = (list) => {
  const sorted = list.map((s) => s.rss).sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : sorted[Math.floor((sorted.length - 1) / 2)];
};
const baseline = median(after.slice(0, window));
const final = median(after.slice(-window));
const growth = after.length >= 2 ? final / baseline - 1 : Number.NaN;
const peak = Math.max(...samples.map((s) => s.rss));
const enough = after.length >= 4;
const pass = stats.errors === 0 && enough && growth <= MAX_GROWTH && health.sessions === 0 && exit.code === 0;
const seconds = Math.round((Date.now() - started) / 1000);

const pct = (x) => `${(x * 100).toFixed(1)} %`;
let commit = 'unknown';
try {
  commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
} catch {
  // not a checkout
}
const summary = {
  minutes: MINUTES,
  sessions: SESSIONS,
  calls: stats.calls,
  calls_per_s: Math.round(stats.calls / seconds),
  errors: stats.errors,
  sessions_opened: stats.sessionsOpened,
  rss_baseline_mib: Number(baseline.toFixed(1)),
  rss_final_mib: Number(final.toFixed(1)),
  rss_peak_mib: Number(peak.toFixed(1)),
  rss_growth: enough ? pct(growth) : 'too few samples after warm-up',
  health_sessions_after: health.sessions,
  exit,
  leftover_workspaces_after_sigterm: leftoverWorkspaces,
  pass,
};
console.log(`soak ${pass ? 'PASSED' : 'FAILED'}: ${JSON.stringify(summary)}`);
if (stats.firstErrors.length > 0) console.log(`first errors:\n  ${stats.firstErrors.join('\n  ')}`);

mkdirSync(join(ROOT, 'bench'), { recursive: true });
writeFileSync(
  join(ROOT, 'bench/SOAK.md'),
  `# Soak

\`npm run soak\` (test/reliability/soak.mjs; not in CI): ${SESSIONS} sessions of mixed tool calls (write, read, edit, \
list,
run_command, run_code, sandbox_status, manage_process) on the local backend, each session ended with DELETE and replaced
after ${SESSION_LIFETIME_CALLS} calls; the server's RSS sampled every ${SAMPLE_S} s. Limits (issue 7): RSS growth \
after a
${WARMUP_S} s warm-up ≤ ${pct(MAX_GROWTH)} (median of the first ${window} samples after warm-up against the median of \
the last
${window}: RSS saws with garbage collection), 0 errors.

Latest run: ${new Date().toISOString().slice(0, 10)}, commit ${commit}, Node ${process.version}, ${
    readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('processor')).length
  } CPUs.

| | |
|---|---|
| duration | ${MINUTES} min (${seconds} s) |
| calls | ${stats.calls} (${summary.calls_per_s}/s), ${stats.sessionsOpened} sessions opened |
| errors | ${stats.errors} |
| RSS after warm-up | ${baseline.toFixed(1)} MiB |
| RSS at the end | ${final.toFixed(1)} MiB |
| RSS peak | ${peak.toFixed(1)} MiB |
| **RSS growth** | **${summary.rss_growth}** |
| sessions after the run (/health) | ${health.sessions} |
| exit on SIGTERM | code ${exit.code} |
| verdict | ${pass ? 'pass' : 'FAIL'} |

RSS samples (s → MiB): ${samples.map((s) => `${s.t}→${s.rss.toFixed(0)}`).join(', ')}
`,
);
process.exit(pass ? 0 : 1);
