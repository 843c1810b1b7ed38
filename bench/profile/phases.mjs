// Splits the busy time of a `.cpuprofile` (node --cpu-prof) into the phases of a call, for bench/PROFILE.md: each
// sample goes to the innermost frame on its stack that a phase claims (frames are named through the source maps
// beside the bundle, as in summarize-profile.mjs), or to OTHER (below) when none does.
//
//   node bench/profile/phases.mjs <file.cpuprofile> --dir <the bundle's directory> --calls N [--last-ms M]
//
// Prints µs per call and the share of busy time, by phase.
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { dir: { type: 'string' }, calls: { type: 'string' }, 'last-ms': { type: 'string' } },
});

/**
 * Phases, innermost claim first: a frame matches when `function file` (file relative to the repository or to
 * node_modules) matches the pattern. Order matters only for frames two patterns would both claim.
 */
const PHASES = [
  ['GC', /^\(garbage collector\)/],
  ['request log line (JSON, write)', /functions\/mcp\/(log|http\/request-log)\.ts|SyncWriteStream|node:fs /],
  ['session id check (HMAC) and lookup', /functions\/mcp\/sessions\/(session-id|entry-lookup)\.ts/],
  [
    'the tool (sandbox_status, its context, registry)',
    /functions\/mcp\/(tools|sandbox)\/|sandbox-table\.ts|references\/r1\.mjs:1[3-5]\b/,
  ],
  ['SDK: zod validation', /zod\/v4\//],
  [
    'SDK: transport, Protocol dispatch, server per request',
    /@modelcontextprotocol\/|functions\/mcp\/protocol\/(legacy-exchange|server-factory)\.ts/,
  ],
  ['lanes and endpoint (era, session, call share)', /functions\/mcp\/protocol\/|functions\/mcp\/sessions\//],
  ['gates (Host, Origin, token, Accept)', /functions\/mcp\/http\/(mcp-gates|auth|origin)\.ts/],
  ['body read and JSON.parse', /functions\/mcp\/http\/json-body\.ts|readBody |readRequestBody|^parse /],
  [
    'web Request/Response, web streams, AbortSignals',
    /undici|webstreams|abort_controller|event_target|js_transferable|@hono\/node-server/,
  ],
  ['Node http: parsing, writing the answer, sockets', /node:(_http_|net|internal\/stream|internal\/streams)|^writev /],
  ['the Node shell and the rest of ours', /functions\/mcp\/|r1\.mjs/],
];
const OTHER = 'Node: event loop, timers, promises';

const profile = JSON.parse(readFileSync(positionals[0], 'utf8'));
const maps = new Map();
function mapOf(url) {
  if (!maps.has(url)) {
    const bare = !url.includes('/') && values.dir !== undefined;
    const file = url.startsWith('file://') ? fileURLToPath(url) : bare ? join(values.dir, url) : url;
    const ok = file.endsWith('.js') && existsSync(`${file}.map`);
    maps.set(url, ok ? new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))) : null);
  }
  return maps.get(url);
}
function nameOf({ functionName, url, lineNumber, columnNumber }) {
  const entry = url === '' ? undefined : mapOf(url)?.findEntry(lineNumber, columnNumber);
  if (entry?.originalSource !== undefined) {
    const file = entry.originalSource.replace(/^.*node_modules\//, '').replace(/^(\.\.\/)+/, '');
    return `${entry.name ?? functionName} ${file}:${entry.originalLine + 1}`;
  }
  return `${functionName} ${url}`;
}
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const phaseOf = new Map();
function phaseOfNode(id) {
  if (phaseOf.has(id)) return phaseOf.get(id);
  const name = nameOf(byId.get(id).callFrame);
  const own = PHASES.find(([, pattern]) => pattern.test(name))?.[0];
  const up = parent.get(id);
  const phase = own ?? (up === undefined ? OTHER : phaseOfNode(up));
  phaseOf.set(id, phase);
  return phase;
}

let t = profile.startTime;
const end = profile.startTime + profile.timeDeltas.reduce((a, b) => a + b, 0);
const from = values['last-ms'] === undefined ? Number.NEGATIVE_INFINITY : end - Number(values['last-ms']) * 1000;
const totals = new Map();
let busy = 0;
for (let i = 0; i < profile.samples.length; i += 1) {
  t += profile.timeDeltas[i];
  if (t < from) continue;
  const us = profile.timeDeltas[i + 1] ?? 0;
  const id = profile.samples[i];
  const name = byId.get(id).callFrame.functionName;
  if (name === '(idle)' || name === '(program)') continue;
  busy += us;
  const phase = phaseOfNode(id);
  totals.set(phase, (totals.get(phase) ?? 0) + us);
}
const calls = Number(values.calls);
console.log(`busy ${(busy / calls).toFixed(0)} µs per call`);
for (const [phase, us] of [...totals].sort((a, b) => b[1] - a[1]))
  console.log(`${(us / calls).toFixed(1).padStart(7)} µs ${((100 * us) / busy).toFixed(1).padStart(5)}%  ${phase}`);
