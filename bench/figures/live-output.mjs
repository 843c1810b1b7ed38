// Figure 5: a command prints a line → the client receives it in a progress notification. Each line
// carries the wall-clock time it was printed (`date +%s%N`, taken inside the sandbox on this machine's
// clock); the official v2 client timestamps each notification on arrival. p95 per run, median of runs.
import { performance } from 'node:perf_hooks';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { median, percentile } from '../harness/load.mjs';

/** The command: 50 lines, 50 ms apart, each stamped with the time it was printed. */
export const LIVE_OUTPUT_COMMAND = 'for i in $(seq 50); do echo "line $i $(date +%s%N)"; sleep 0.05; done';
const LINE = /^line (\d+) (\d+)$/;

/** Resolves with `{ p95Ms, p50Ms, maxMs, linesReceived, linesExpected, runs: [...] }`. */
export async function measureLiveOutput(url, { runs = 3 } = {}) {
  const client = new Client({ name: 'mcp-bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const results = [];
  try {
    // Create the sandbox first: the figure is about output, not sandbox creation.
    await client.callTool({ name: 'run_command', arguments: { command: 'true' } });
    for (let run = 0; run < runs; run += 1) results.push(await runOnce(client));
  } finally {
    await client.close();
  }
  return {
    p95Ms: median(results.map((r) => r.p95Ms)),
    p50Ms: median(results.map((r) => r.p50Ms)),
    maxMs: Math.max(...results.map((r) => r.maxMs)),
    linesReceived: results.reduce((n, r) => n + r.lines, 0),
    linesExpected: runs * 50,
    runs: results,
  };
}

async function runOnce(client) {
  const latencies = [];
  let buffer = '';
  const onprogress = (p) => {
    const arrivedMs = performance.timeOrigin + performance.now();
    buffer += p.message ?? '';
    const lines = buffer.split('\n');
    buffer = lines.pop() ?? '';
    for (const line of lines) {
      const match = LINE.exec(line.trim());
      if (match !== null) latencies.push(arrivedMs - toMs(match[2]));
    }
  };
  const result = await client.callTool(
    { name: 'run_command', arguments: { command: LIVE_OUTPUT_COMMAND } },
    { onprogress, timeout: 60_000 },
  );
  if (result.isError === true) throw new Error(`run_command failed: ${JSON.stringify(result.content)}`);
  latencies.sort((a, b) => a - b);
  return {
    lines: latencies.length,
    p50Ms: percentile(latencies, 50),
    p95Ms: percentile(latencies, 95),
    maxMs: latencies.at(-1) ?? Number.NaN,
  };
}

/** Nanoseconds since the epoch (a decimal string beyond 2^53) → milliseconds, keeping the fraction. */
function toMs(ns) {
  return Number(ns.slice(0, -6)) + Number(ns.slice(-6)) / 1e6;
}
