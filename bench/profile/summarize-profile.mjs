// Summarizes a `.cpuprofile` (node --cpu-prof) by function and by source file, through the source maps beside the
// bundle (`<file>.js.map`: build.mjs writes them for every file of ours), with Node's own `module.SourceMap`.
//
//   node bench/profile/summarize-profile.mjs <file.cpuprofile> [--calls N] [--last-ms M] [--top 40] [--match re]
//     [--by file|fn|all] [--dir <the bundle's directory, for the core's bare name>]
//
// Self time: samples whose top frame is the function. Total time: samples with the function anywhere on the
// stack (counted once per sample). `--calls` divides by the calls served to give µs per call; `--last-ms` keeps
// only the samples of the profile's last M ms (the load window, not start-up); `--match` lists only the
// functions whose key matches. Not part of `npm run bench`.
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    calls: { type: 'string' },
    'last-ms': { type: 'string' },
    top: { type: 'string', default: '40' },
    match: { type: 'string' },
    by: { type: 'string', default: 'all' },
    dir: { type: 'string' },
  },
});
const profile = JSON.parse(readFileSync(positionals[0], 'utf8'));
const maps = new Map();
function mapOf(url) {
  if (!maps.has(url)) {
    let map = null;
    // The core is compiled from its text with a bare name (mcp-core.js): `--dir` is the bundle's directory.
    const bare = !url.includes('/') && values.dir !== undefined;
    const file = url.startsWith('file://') ? fileURLToPath(url) : bare ? join(values.dir, url) : url;
    if (file.endsWith('.js') && existsSync(`${file}.map`)) map = new SourceMap(JSON.parse(readFileSync(`${file}.map`)));
    maps.set(url, map);
  }
  return maps.get(url);
}

/** `{ fn, file }` of a call frame: through the map when there is one. */
function place(frame) {
  const { url, functionName, lineNumber, columnNumber } = frame;
  if (url === '')
    return { fn: functionName || '(anonymous)', file: functionName.startsWith('(') ? functionName : '(native)' };
  const map = mapOf(url);
  const entry = map?.findEntry(lineNumber, columnNumber);
  if (entry?.originalSource !== undefined) {
    const file = entry.originalSource.replace(/^.*node_modules\//, 'node_modules/').replace(/^(\.\.\/)+/, '');
    const name = entry.name ?? functionName;
    return { fn: `${name || '(anonymous)'} ${file}:${entry.originalLine + 1}`, file };
  }
  const file = url.replace(/^file:\/\//, '');
  return { fn: `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`, file };
}

const byId = new Map();
for (const node of profile.nodes) byId.set(node.id, { ...node, ...place(node.callFrame) });
for (const node of profile.nodes) for (const child of node.children ?? []) byId.get(child).parent = node.id;

// Sample times: timeDeltas[i] is the gap before sample i; its weight is the gap after it (the next delta).
const times = [];
let t = profile.startTime;
for (const delta of profile.timeDeltas) {
  t += delta;
  times.push(t);
}
const from = values['last-ms'] === undefined ? Number.NEGATIVE_INFINITY : t - Number(values['last-ms']) * 1000;
const self = { fn: new Map(), file: new Map() };
const total = { fn: new Map(), file: new Map() };
let busy = 0;
let all = 0;
const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
for (let i = 0; i < profile.samples.length; i += 1) {
  if (times[i] < from) continue;
  const us = profile.timeDeltas[i + 1] ?? 0;
  const node = byId.get(profile.samples[i]);
  all += us;
  if (node.fn === '(idle)') continue;
  busy += us;
  add(self.fn, node.fn, us);
  add(self.file, node.file, us);
  const seenFn = new Set();
  const seenFile = new Set();
  for (let n = node; n !== undefined; n = byId.get(n.parent)) {
    if (n.fn === '(root)') break;
    if (!seenFn.has(n.fn)) {
      add(total.fn, n.fn, us);
      seenFn.add(n.fn);
    }
    if (!seenFile.has(n.file)) {
      add(total.file, n.file, us);
      seenFile.add(n.file);
    }
  }
}
const calls = values.calls === undefined ? undefined : Number(values.calls);
const fmt = (us) => (calls === undefined ? `${(us / 1000).toFixed(1)} ms` : `${(us / calls).toFixed(1)} µs/call`);
const pct = (us) => `${((100 * us) / busy).toFixed(1)}%`;
const top = Number(values.top);
const match = values.match === undefined ? undefined : new RegExp(values.match);
console.log(`window ${(all / 1000).toFixed(0)} ms, busy ${(busy / 1000).toFixed(0)} ms = ${fmt(busy)}`);
const show = (title, map) => {
  console.log(`\n${title}`);
  const rows = [...map].filter(([k]) => match === undefined || match.test(k)).sort((a, b) => b[1] - a[1]);
  for (const [key, us] of rows.slice(0, top)) console.log(`${fmt(us).padStart(16)} ${pct(us).padStart(6)}  ${key}`);
};
if (values.by === 'all' || values.by === 'file') {
  show('self time by file', self.file);
  show('total time by file', total.file);
}
if (values.by === 'all' || values.by === 'fn') {
  show('self time by function', self.fn);
  show('total time by function', total.fn);
}
