// Turns the measurements into the table (stdout) and bench/RESULTS.md: each figure with ours, R1, R2,
// the ratio, the target and whether it is met.
import { cpus, release, totalmem, type } from 'node:os';

import { sleepingMemoryRows, wakeRows } from './report-sleep.mjs';
import { f, notMeasuredRow } from './report-rows.mjs';
import { telemetryRows } from './report-telemetry.mjs';
import { fileTransferRows } from './report-transfer.mjs';

/** The machine the run is on. */
export function describeMachine() {
  const list = cpus();
  return {
    cpu: list[0]?.model ?? 'unknown',
    cores: list.length,
    memoryGiB: (totalmem() / 2 ** 30).toFixed(1),
    node: process.version,
    os: `${type()} ${release()}`,
  };
}

const verdict = (met, actual, target) => (met ? 'met' : `MISSED: ${actual} vs ${target}`);

/**
 * One row per figure (two for each mode of figure 2, one per tool of figure 7, one per backend of figure 8, two for
 * figure 9, three for figures 10 and 11), for the figures measured.
 */
export function toRows({
  coldStart,
  throughput,
  sessionMemory,
  overhead,
  liveOutput,
  sandboxMemory,
  toolLatency,
  wake,
  sleepingMemory,
  egress,
  fileTransfer,
  telemetry,
}) {
  const rows = [];
  if (coldStart !== undefined) rows.push(...coldStartRows(coldStart));
  if (throughput !== undefined) rows.push(...throughputRows(throughput));
  if (sessionMemory !== undefined) rows.push(sessionMemoryRow(sessionMemory));
  if (overhead !== undefined) rows.push(overheadRow(overhead));
  if (liveOutput !== undefined) rows.push(liveOutputRow(liveOutput));
  if (sandboxMemory !== undefined) rows.push(sandboxMemoryRow(sandboxMemory));
  if (toolLatency !== undefined) rows.push(...toolLatencyRows(toolLatency));
  if (wake !== undefined) rows.push(...wakeRows(wake));
  if (sleepingMemory !== undefined) rows.push(...sleepingMemoryRows(sleepingMemory));
  if (egress !== undefined) rows.push(...egressRows(egress));
  if (fileTransfer !== undefined) rows.push(...fileTransferRows(fileTransfer));
  if (telemetry !== undefined) rows.push(...telemetryRows(telemetry));
  return rows;
}

const x = (a, b) => a / b;

function coldStartRows(coldStart) {
  const { toolsList, toolCall, cpuInitialize, cpuToolCall } = coldStart;
  const initRatio = x(coldStart.ours, coldStart.bare);
  const callRatio = x(toolCall.ours, toolCall.r1);
  const cpu = (group, name) => `${f(group[name])} ms`;
  return [
    {
      figure: '1 cold start: spawn → initialize answered (ms)',
      ours: f(coldStart.ours),
      r1: `${f(coldStart.r1)} (${f(x(coldStart.r1, coldStart.bare), 2)}×)`,
      r2: `${f(coldStart.r2)} (${f(x(coldStart.r2, coldStart.bare), 2)}×)`,
      ratio:
        `${f(initRatio, 2)}× bare node:http (${f(coldStart.bare)} ms; node -e 0: ${f(coldStart.node)} ms); ` +
        `main-thread CPU ${cpu(cpuInitialize, 'ours')} vs bare ${cpu(cpuInitialize, 'bare')}`,
      target: '≤ 1.3× bare node:http',
      verdict: verdict(initRatio <= 1.3, `${f(initRatio, 2)}×`, '1.3×'),
    },
    {
      figure: '1 cold start: spawn → first tools/call answered (ms; tools/list before it)',
      ours: `${f(toolCall.ours)} (list ${f(toolsList.ours)})`,
      r1: `${f(toolCall.r1)} (list ${f(toolsList.r1)})`,
      r2: `${f(toolCall.r2)} (list ${f(toolsList.r2)})`,
      ratio:
        `${f(callRatio, 2)}× R1; main-thread CPU by then: ours ${cpu(cpuToolCall, 'ours')}, R1 ` +
        `${cpu(cpuToolCall, 'r1')} (${f(x(cpuToolCall.ours, cpuToolCall.r1), 2)}×), bare ` +
        `${cpu(cpuToolCall, 'bare')}`,
      target: "≤ 1.0× R1's",
      verdict: verdict(callRatio <= 1, `${f(callRatio, 2)}×`, '1.0×'),
    },
  ];
}

/** How the load clients are named in the table. */
const CLIENT_LABELS = { undici: 'undici', autocannon: 'autocannon' };

function throughputRows(throughput) {
  const rows = [];
  for (const [client, bySessions] of Object.entries(throughput)) {
    for (const [sessions, byServer] of Object.entries(bySessions)) {
      const { ours, 'ours-warn': warn, r1, r2 } = byServer;
      const vsR1 = x(ours.rps, r1.rps);
      const vsR2 = x(ours.rps, r2.rps);
      const label = `${sessions === '1' ? '1 session' : `${sessions} sessions`}, ${CLIENT_LABELS[client] ?? client}`;
      const misses = [];
      if (vsR1 < 1) misses.push(`${f(vsR1, 2)}× R1 vs 1.0×`);
      if (vsR2 < 3) misses.push(`${f(vsR2, 2)}× R2 vs 3×`);
      rows.push({
        figure: `2 tools/call req/s, 32 conns, ${label}`,
        ours: `${f(ours.rps)} (warn ${f(warn.rps)})`,
        r1: f(r1.rps),
        r2: f(r2.rps),
        ratio: `${f(vsR1, 2)}× R1 (warn ${f(x(warn.rps, r1.rps), 2)}×), ${f(vsR2, 2)}× R2`,
        target: '≥ 1.0× R1 and ≥ 3× R2',
        verdict: misses.length === 0 ? 'met' : `MISSED: ${misses.join('; ')}`,
      });
      const p99Ratio = x(ours.p99Ms, r1.p99Ms);
      rows.push({
        figure: `2 tools/call p99 ms (p50), ${label}`,
        ours: `${f(ours.p99Ms, 1)} (${f(ours.p50Ms, 1)}); warn ${f(warn.p99Ms, 1)} (${f(warn.p50Ms, 1)})`,
        r1: `${f(r1.p99Ms, 1)} (${f(r1.p50Ms, 1)})`,
        r2: `${f(r2.p99Ms, 1)} (${f(r2.p50Ms, 1)})`,
        ratio: `${f(p99Ratio, 2)}× R1 (warn ${f(x(warn.p99Ms, r1.p99Ms), 2)}×)`,
        target: "p99 ≤ R1's",
        verdict: verdict(ours.p99Ms <= r1.p99Ms, `${f(ours.p99Ms, 1)} ms`, `${f(r1.p99Ms, 1)} ms`),
      });
      rows.push({
        figure: `2 server CPU per call (µs), ${label}`,
        ours: `${f(ours.cpuUsPerCall)} (warn ${f(warn.cpuUsPerCall)})`,
        r1: f(r1.cpuUsPerCall),
        r2: f(r2.cpuUsPerCall),
        ratio:
          `${f(x(ours.cpuUsPerCall, r1.cpuUsPerCall), 2)}× R1 (warn ` +
          `${f(x(warn.cpuUsPerCall, r1.cpuUsPerCall), 2)}×)`,
        target: '— (no target)',
        verdict: '—',
      });
    }
  }
  return rows;
}

function sessionMemoryRow(mem) {
  const memRatio = x(mem.ours.kibPerSession, mem.r1.kibPerSession);
  return {
    figure: '3 RSS per idle session (KiB), sessions 1,001-2,000',
    ours: f(mem.ours.kibPerSession, 1),
    r1: f(mem.r1.kibPerSession, 1),
    r2: '—',
    ratio:
      `${f(memRatio, 2)}× R1 (JS heap ${f(x(mem.ours.heapKibPerSession, mem.r1.heapKibPerSession), 2)}×; ` +
      `RSS over the first 1,000: ${f(mem.ours.firstKibPerSession, 1)} vs ${f(mem.r1.firstKibPerSession, 1)}, ` +
      `${f(x(mem.ours.firstKibPerSession, mem.r1.firstKibPerSession), 2)}×)`,
    target: '≤ 0.5× R1',
    verdict: verdict(memRatio <= 0.5, `${f(memRatio, 2)}×`, '0.5×'),
  };
}

function overheadRow(overhead) {
  return {
    figure: '4 server overhead at p50 (ms), 1 conn',
    ours: `${f(overhead.ours.overheadMs, 3)} (warn ${f(overhead['ours-warn'].overheadMs, 3)})`,
    r1: f(overhead.r1.overheadMs, 3),
    r2: f(overhead.r2.overheadMs, 3),
    ratio: `over bare HTTP p50 ${f(overhead.bareP50Ms, 3)} ms`,
    target: '≤ 0.5 ms',
    verdict: verdict(overhead.ours.overheadMs <= 0.5, `${f(overhead.ours.overheadMs, 3)} ms`, '0.5 ms'),
  };
}

function liveOutputRow(liveOutput) {
  return {
    figure: '5 live output: line printed → progress received, p95 (ms)',
    ours: f(liveOutput.p95Ms),
    r1: '—',
    r2: '—',
    ratio:
      `p50 ${f(liveOutput.p50Ms)} ms, max ${f(liveOutput.maxMs)} ms, ` +
      `${liveOutput.linesReceived}/${liveOutput.linesExpected} lines`,
    target: '≤ 300 ms',
    verdict: verdict(
      liveOutput.p95Ms <= 300 && liveOutput.linesReceived === liveOutput.linesExpected,
      `${f(liveOutput.p95Ms)} ms`,
      '300 ms',
    ),
  };
}

function sandboxMemoryRow(sandboxMemory) {
  return {
    figure: '6 server RSS, 200 sessions with a sandbox (MiB)',
    ours: f(sandboxMemory.rssMiB),
    r1: '—',
    r2: '—',
    ratio: '',
    target: '≤ 200 MiB',
    verdict: verdict(sandboxMemory.rssMiB <= 200, `${f(sandboxMemory.rssMiB)} MiB`, '200 MiB'),
  };
}

/** How far a file tool's p50 may be above sandbox_status's (ms), and run_command's p50 above the bare bwrap spawn's
 * (×). */
export const TOOL_LATENCY_TARGETS = { fileToolMs: 1, runCommandRatio: 1.3 };

const TOOL_LABELS = {
  sandbox_status: 'sandbox_status',
  run_command: 'run_command `echo hi`',
  read_file: 'read_file (small file)',
  write_file: 'write_file (small file)',
  list_files: 'list_files `.`',
  run_code: 'run_code python `x+1`',
};

function toolLatencyRows(latency) {
  const label = (tool) => `7 tool call p50 (p95) ms, local bwrap: ${tool}`;
  if (latency.skipped !== undefined) {
    return [notMeasuredRow(label('all'), latency.skipped)];
  }
  const { tools, bareSpawn } = latency;
  const cell = (s) => `${f(s.p50Ms, 2)} (${f(s.p95Ms, 2)})`;
  const row = (tool, fields) => ({
    figure: label(TOOL_LABELS[tool]),
    ours: cell(tools[tool]),
    r1: '—',
    r2: '—',
    ...fields,
  });
  const status = tools.sandbox_status.p50Ms;
  const runRatio = x(tools.run_command.p50Ms, bareSpawn.p50Ms);
  const { fileToolMs, runCommandRatio } = TOOL_LATENCY_TARGETS;
  const rows = [
    row('sandbox_status', {
      ratio: 'no sandbox work: the floor of the file tools',
      target: '— (no target)',
      verdict: '—',
    }),
    row('run_command', {
      ratio: `${f(runRatio, 2)}× bare bwrap spawn (${cell(bareSpawn)} ms)`,
      target: `≤ ${runCommandRatio}× bare bwrap spawn`,
      verdict: verdict(runRatio <= runCommandRatio, `${f(runRatio, 2)}×`, `${runCommandRatio}×`),
    }),
  ];
  for (const tool of ['read_file', 'write_file', 'list_files']) {
    const over = tools[tool].p50Ms - status;
    rows.push(
      row(tool, {
        ratio: `${over >= 0 ? '+' : ''}${f(over, 2)} ms over sandbox_status`,
        target: `≤ sandbox_status + ${fileToolMs} ms`,
        verdict: verdict(over <= fileToolMs, `+${f(over, 2)} ms`, `+${fileToolMs} ms`),
      }),
    );
  }
  rows.push(
    row('run_code', {
      ratio: `warm interpreter; ${f(x(tools.run_code.p50Ms, status), 1)}× sandbox_status`,
      target: '— (no target)',
      verdict: '—',
    }),
  );
  return rows;
}

/** Figure 10's targets (issue 31): the proxied download at least this share of the direct one's throughput, and
 * what the proxy adds to a connection's set-up at p50 at most this (ms). */
export const EGRESS_TARGETS = { throughputRatio: 0.8, setupOverheadMs: 2 };

/** Figure 10's rows: the proxied download's throughput beside the direct one's, and what a connection's set-up adds. */
function egressRows(egress) {
  const figure = (what) => `10 egress through the local proxy (allowlist): ${what}`;
  if (egress.skipped !== undefined) {
    return [notMeasuredRow(figure('all'), egress.skipped)];
  }
  const { proxied, direct, relayed, ratio, floorRatio, overheadMs } = egress;
  const { throughputRatio, setupOverheadMs } = EGRESS_TARGETS;
  const plus = (ms) => `${ms >= 0 ? '+' : ''}${f(ms, 2)}`;
  const times = (c) => `${f(c.p50Ms, 2)} (p90 ${f(c.p90Ms, 2)}, p99 ${f(c.p99Ms, 2)})`;
  return [
    {
      figure: figure('50 MB download from loopback, MB/s'),
      ours: f(proxied.mbPerS),
      r1: '—',
      r2: '—',
      ratio: `${f(ratio, 2)}× the same download with the network on (${f(direct.mbPerS)} MB/s)`,
      target: `≥ ${throughputRatio}× network on`,
      verdict: verdict(ratio >= throughputRatio, `${f(ratio, 2)}×`, `${throughputRatio}×`),
    },
    {
      figure: figure('the same download beside a bare TCP relay on the host, MB/s'),
      ours: f(proxied.mbPerS),
      r1: '—',
      r2: '—',
      ratio: `${f(floorRatio, 2)}× the download through one bare user-space relay (${f(relayed.mbPerS)} MB/s)`,
      target: '—',
      verdict: '—',
    },
    {
      figure: figure('connection set-up over network on, p50 (p90) ms'),
      ours: `${plus(overheadMs.p50Ms)} (${plus(overheadMs.p90Ms)})`,
      r1: '—',
      r2: '—',
      ratio:
        `fresh connection + tiny GET: proxied ${times(proxied.connect)} ms, network on ${times(direct.connect)} ms; ` +
        `p99 ${plus(overheadMs.p99Ms)} ms`,
      target: `≤ ${setupOverheadMs} ms at p50`,
      verdict: verdict(overheadMs.p50Ms <= setupOverheadMs, `${plus(overheadMs.p50Ms)} ms`, `${setupOverheadMs} ms`),
    },
  ];
}

const COLUMNS = [
  ['figure', 'figure'],
  ['ours', 'ours'],
  ['r1', 'R1'],
  ['r2', 'R2'],
  ['ratio', 'ratio'],
  ['target', 'target'],
  ['verdict', 'verdict'],
];

/** The rows as an aligned plain-text table. */
export function renderTable(rows) {
  const widths = COLUMNS.map(([key, title]) => Math.max(title.length, ...rows.map((r) => String(r[key]).length)));
  const line = (cells) =>
    cells
      .map((c, i) => String(c).padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [
    line(COLUMNS.map(([, title]) => title)),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(COLUMNS.map(([key]) => r[key]))),
  ].join('\n');
}

/** The rows as a Markdown table. */
export function renderMarkdownTable(rows) {
  const esc = (s) => String(s).replaceAll('|', '\\|');
  return [
    `| ${COLUMNS.map(([, t]) => t).join(' | ')} |`,
    `|${COLUMNS.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${COLUMNS.map(([key]) => esc(r[key])).join(' | ')} |`),
  ].join('\n');
}
