// Figure 1: process spawn → first `initialize` answered, from the built bundle, against `node -e 0`
// measured in the same rounds. The client retries the connection every millisecond until the server is up.
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

import { median } from '../harness/load.mjs';
import { initializeBody, mcpHeaders } from '../harness/mcp-wire.mjs';
import { createSandboxRoot, findFreePort, spawnServer, stopChild } from '../harness/servers.mjs';

const GIVE_UP_MS = 15_000;

/**
 * Runs one uncounted warm-up round, then `runs` rounds of: `node -e 0`, then each server. Resolves with
 * the per-run milliseconds `{ node: [...], ours: [...], r1: [...], r2: [...] }`.
 */
export async function measureColdStart({ runs = 15, servers = ['ours', 'r1', 'r2'] } = {}) {
  const sandboxRoot = createSandboxRoot();
  const samples = { node: [] };
  for (const name of servers) samples[name] = [];
  try {
    for (let round = -1; round < runs; round += 1) {
      const nodeMs = await timeNodeNoop();
      if (round >= 0) samples.node.push(nodeMs);
      for (const name of servers) {
        const ms = await timeFirstInitialize(name, sandboxRoot);
        if (round >= 0) samples[name].push(ms);
      }
    }
  } finally {
    rmSync(sandboxRoot, { recursive: true, force: true });
  }
  return samples;
}

/** Medians of `measureColdStart`'s samples, in ms. */
export function summarizeColdStart(samples) {
  return Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values)]));
}

function timeNodeNoop() {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', () => resolve(performance.now() - start));
  });
}

async function timeFirstInitialize(name, sandboxRoot) {
  const port = await findFreePort();
  const body = initializeBody();
  const headers = mcpHeaders(undefined);
  const start = performance.now();
  const child = spawnServer(name, port, { sandboxRoot });
  try {
    for (;;) {
      if (await tryInitialize(port, headers, body)) return performance.now() - start;
      if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${child.stderrTail()}`);
      if (performance.now() - start > GIVE_UP_MS) throw new Error(`${name} did not answer initialize within ${GIVE_UP_MS} ms`);
      await new Promise((r) => setTimeout(r, 1));
    }
  } finally {
    await stopChild(child);
  }
}

function tryInitialize(port, headers, body) {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve(res.statusCode === 200 && text.includes('"result"')));
      res.on('error', () => resolve(false));
    });
    req.on('error', () => resolve(false));
    req.end(body);
  });
}
