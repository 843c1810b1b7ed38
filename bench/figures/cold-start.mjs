// Figure 1: process spawn → first `initialize` answered, from the built bundle, against `node -e 0`
// measured in the same rounds. The client retries the connection every millisecond until the server is up.
// In the same spawn, the client goes on as clients do (`notifications/initialized`, `tools/list`, then a call
// of the cheap tool), and the times to the `tools/list` and `tools/call` answers are recorded beside it, with the
// CPU time the server's main thread had used by the `initialize` and `tools/call` answers (what a busy machine
// disturbs least).
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import { median } from '../harness/load.mjs';
import { initializeBody, mcpHeaders, parseRpcResponse, toolCallBody } from '../harness/mcp-wire.mjs';
import { createSandboxRoot, findFreePort, readMainThreadCpuMs, spawnServer, stopChild } from '../harness/servers.mjs';

const GIVE_UP_MS = 15_000;

/**
 * Runs one uncounted warm-up round, then `runs` rounds of: `node -e 0`, then each server. Resolves with
 * the per-run milliseconds `{ node: [...], ours: [...], r1: [...], r2: [...], bare: [...], toolsList: { ours: [...],
 * ... }, toolCall: {...}, cpuInitialize: {...}, cpuToolCall: {...} }` (`bare`: a node:http server answering a fixed
 * JSON,
 * the floor of any server; `cpu…`: the server's main-thread CPU time by that answer).
 */
export async function measureColdStart({ runs = 15, servers = ['ours', 'r1', 'r2', 'bare'] } = {}) {
  const sandboxRoot = createSandboxRoot();
  const samples = { node: [], toolsList: {}, toolCall: {}, cpuInitialize: {}, cpuToolCall: {} };
  for (const name of servers) {
    samples[name] = [];
    for (const group of ['toolsList', 'toolCall', 'cpuInitialize', 'cpuToolCall']) samples[group][name] = [];
  }
  try {
    for (let round = -1; round < runs; round += 1) {
      const nodeMs = await timeNodeNoop();
      if (round >= 0) samples.node.push(nodeMs);
      for (const name of servers) {
        const { initializeMs, toolsListMs, toolCallMs, cpuInitializeMs, cpuToolCallMs } = await timeFirstRequests(
          name,
          sandboxRoot,
        );
        if (round < 0) continue;
        samples[name].push(initializeMs);
        samples.toolsList[name].push(toolsListMs);
        samples.toolCall[name].push(toolCallMs);
        samples.cpuInitialize[name].push(cpuInitializeMs);
        samples.cpuToolCall[name].push(cpuToolCallMs);
      }
    }
  } finally {
    rmSync(sandboxRoot, { recursive: true, force: true });
  }
  return samples;
}

/** Medians of `measureColdStart`'s samples, in ms: `{ node, ours, ..., toolsList: { ours, ... }, toolCall: { ours, ...
 * }, cpu… }`. */
export function summarizeColdStart(samples) {
  const medians = (group) =>
    Object.fromEntries(
      Object.entries(group)
        .filter(([, v]) => Array.isArray(v))
        .map(([name, values]) => [name, median(values)]),
    );
  return {
    ...medians(samples),
    toolsList: medians(samples.toolsList),
    toolCall: medians(samples.toolCall),
    cpuInitialize: medians(samples.cpuInitialize),
    cpuToolCall: medians(samples.cpuToolCall),
  };
}

/** The cheap tool each server is called with (the bare server answers anything). */
const CHEAP_TOOL = { ours: 'sandbox_status', r1: 'status', r2: 'status', bare: 'status' };

function timeNodeNoop() {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', () => resolve(performance.now() - start));
  });
}

async function timeFirstRequests(name, sandboxRoot) {
  const port = await findFreePort();
  const body = initializeBody();
  const start = performance.now();
  const child = spawnServer(name, port, { sandboxRoot });
  try {
    let answer;
    for (;;) {
      answer = await post(port, mcpHeaders(undefined), body);
      if (answer.ok) break;
      if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${child.stderrTail()}`);
      if (performance.now() - start > GIVE_UP_MS)
        throw new Error(`${name} did not answer initialize within ${GIVE_UP_MS} ms`);
      await new Promise((r) => setTimeout(r, 1));
    }
    const initializeMs = performance.now() - start;
    const cpuInitializeMs = readMainThreadCpuMs(child.pid);
    const sessionId = answer.sessionId;
    await post(port, mcpHeaders(sessionId), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    const list = await post(
      port,
      mcpHeaders(sessionId),
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    );
    if (!list.ok || (name !== 'bare' && !Array.isArray(parseRpcResponse(list.text).result?.tools))) {
      throw new Error(`${name}: tools/list after a cold start failed: ${list.text.slice(0, 200)}`);
    }
    const toolsListMs = performance.now() - start;
    const call = await post(port, mcpHeaders(sessionId), toolCallBody(2, CHEAP_TOOL[name]));
    if (!call.ok || parseRpcResponse(call.text).result?.isError === true)
      throw new Error(`${name}: the first tools/call failed: ${call.text.slice(0, 200)}`);
    const toolCallMs = performance.now() - start;
    return { initializeMs, toolsListMs, toolCallMs, cpuInitializeMs, cpuToolCallMs: readMainThreadCpuMs(child.pid) };
  } finally {
    await stopChild(child);
  }
}

/** One POST on a new connection; `ok` for a 2xx answer carrying a JSON-RPC result (or for 202). */
function post(port, headers, body) {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => {
        const id = res.headers['mcp-session-id'];
        const ok = res.statusCode === 202 || (res.statusCode === 200 && text.includes('"result"'));
        resolve({ ok, text, sessionId: typeof id === 'string' ? id : undefined });
      });
      res.on('error', () => resolve({ ok: false, text: '' }));
    });
    req.on('error', () => resolve({ ok: false, text: '' }));
    req.end(body);
  });
}
