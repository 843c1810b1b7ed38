// Figure 10: the local backend's egress proxy (issue 31, item 6). Two fresh servers of ours, the same but for the
// network: "proxied" (MCP_SANDBOX_EGRESS=allowlist, MCP_SANDBOX_ALLOW naming only the loopback host below: the
// sandbox keeps a network of its own and reaches out only through its supervisor's listener, carried over the
// supervisor's pipe to the server's proxy, functions/mcp/egress/proxy.ts) and "direct" (LOCAL_SANDBOX_NETWORK=on:
// the sandbox shares the host's network, no proxy variables). The destination is a node:http host on 127.0.0.2 in
// the bench process: a generated 50 MB body and a tiny one, every answer closing its connection. Everything is
// timed inside the sandbox, by the client there, so that the MCP call around it does not count. Each run, on each
// server in turn (the order swapped every run): one `curl` download of the 50 MB body (curl's own time_total and
// size_download; through http_proxy when proxied), then one Python process that makes `connections` sequential fresh
// connections fetching the tiny body (http.client: an absolute-form GET to the proxy when proxied, a plain GET to
// the host when direct), each timed from before its connect to its body read. One uncounted run first.
import { createServer } from 'node:http';
import { connect, createServer as createTcpServer } from 'node:net';

import { Agent } from 'undici';

import { median, percentile } from '../harness/load.mjs';
import { callTool, openSession } from '../harness/mcp-wire.mjs';
import { startServer } from '../harness/servers.mjs';
import { findBwrap } from './tool-latency.mjs';

/** The destination's address: a loopback address of its own, which only an IP entry of the allow list opens. */
export const EGRESS_HOST = '127.0.0.2';
/**
 * The floor of any proxy: a bare TCP relay on the host (node:net, pipe both ways) on an address of its own, which
 * the network-on sandbox downloads through too. One user-space hop and nothing else: no policy, no sandbox wall.
 */
export const RELAY_HOST = '127.0.0.3';
/** The large body: 50 MB (10^6 bytes), written from one generated megabyte. */
export const BIG_BYTES = 50 * 1_000_000;
const MEGABYTE = Buffer.alloc(1_000_000, 'egress bench payload ');
const TINY_BODY = 'ok\n';
/** Connections each Python process makes before the timed ones (the first also imports http.client's code). */
export const WARM_CONNECTIONS = 10;
/** The proxy's port inside the sandbox (functions/mcp/sandbox/local/sandbox-egress.ts). */
const PROXY = { host: '127.0.0.1', port: 3128 };

/** The two servers, by name: what each adds to our server's environment (given the destination's port). */
export const EGRESS_SERVERS = {
  proxied: (port) => ({ MCP_SANDBOX_EGRESS: 'allowlist', MCP_SANDBOX_ALLOW: `${EGRESS_HOST}:${port}` }),
  direct: () => ({ LOCAL_SANDBOX_NETWORK: 'on' }),
};

/** What `sandbox_status` must report as `network` on each: otherwise the figure would not measure what it says. */
const EXPECTED_NETWORK = { proxied: 'proxied', direct: 'enabled' };

/**
 * Resolves with `{ runs, connections, proxied, direct, ratio, overheadMs: { p50Ms, p90Ms, p99Ms } }`, each server's
 * `{ network, downloads: [{ seconds, bytes, mbPerS }], mbPerS (median), connect: { p50Ms, p90Ms, p99Ms, samples } }`;
 * or `{ skipped: reason }` where the sandboxes cannot run so here.
 */
export async function measureEgress({ runs = 5, connections = 200, warmConnections = WARM_CONNECTIONS } = {}) {
  if (findBwrap() === undefined) return { skipped: 'bwrap is not installed' };
  let host;
  let relay;
  try {
    host = await startPayloadHost(EGRESS_HOST);
    relay = await startRelay(RELAY_HOST, EGRESS_HOST, host.port);
  } catch (err) {
    await host?.close();
    return { skipped: `no HTTP host on ${EGRESS_HOST}: ${err instanceof Error ? err.message : String(err)}` };
  }
  const opened = [];
  try {
    const sides = {};
    for (const [name, env] of Object.entries(EGRESS_SERVERS)) {
      const side = await openSide(name, env(host.port));
      opened.push(side);
      if (side.skipped !== undefined) return { skipped: side.skipped };
      sides[name] = side;
    }
    const samples = { proxied: { downloads: [], connect: [] }, direct: { downloads: [], connect: [] }, relayed: [] };
    for (let run = 0; run <= runs; run += 1) {
      const order = run % 2 === 0 ? ['proxied', 'direct'] : ['direct', 'proxied'];
      for (const name of order) {
        const side = sides[name];
        const download = await side.download(EGRESS_HOST, host.port);
        const connect = await side.connections(host.port, connections, warmConnections);
        const relayed = name === 'direct' ? await side.download(RELAY_HOST, relay.port) : undefined;
        // Run 0 is the uncounted one: each sandbox's first connections also load curl and Python from disk.
        if (run === 0) continue;
        samples[name].downloads.push(download);
        samples[name].connect.push(...connect);
        if (relayed !== undefined) samples.relayed.push(relayed);
      }
    }
    const summary = (name) => {
      const { downloads, connect } = samples[name];
      return {
        network: sides[name].network,
        downloads,
        mbPerS: median(downloads.map((d) => d.mbPerS)),
        connect: { ...stats(connect), samples: connect.length },
      };
    };
    const proxied = summary('proxied');
    const direct = summary('direct');
    const over = (key) => proxied.connect[key] - direct.connect[key];
    const relayed = { downloads: samples.relayed, mbPerS: median(samples.relayed.map((d) => d.mbPerS)) };
    return {
      runs,
      connections,
      proxied,
      direct,
      relayed,
      ratio: proxied.mbPerS / direct.mbPerS,
      floorRatio: proxied.mbPerS / relayed.mbPerS,
      overheadMs: { p50Ms: over('p50Ms'), p90Ms: over('p90Ms'), p99Ms: over('p99Ms') },
    };
  } finally {
    for (const side of opened) await side.stop();
    await relay.close();
    await host.close();
  }
}

/**
 * One server of ours with `env`, one session and its sandbox; checks what runs there. Resolves with
 * `{ network, download(port), connections(port, count, warm), stop() }`, or with `{ skipped, stop() }`.
 */
async function openSide(name, env) {
  const server = await startServer('ours', { env: { SANDBOX_BACKEND: 'local', ...env } });
  const agent = new Agent({ connections: 1, keepAliveTimeout: 60_000 });
  const stop = async () => {
    await agent.close();
    await server.stop();
  };
  try {
    return await checkSide(name, server, agent, stop);
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The session and its sandbox on one side; see openSide. */
async function checkSide(name, server, agent, stop) {
  const sessionId = await openSession(server.url, agent);
  const run = async (command) => {
    const result = await callTool(server.url, sessionId, 'run_command', { command, timeout_ms: 120_000 }, agent);
    const out = result.structuredContent ?? {};
    if (out.exit_code !== 0)
      throw new Error(`${name}: \`${command.slice(0, 80)}\` exited ${out.exit_code}: ${out.stderr?.slice(0, 300)}`);
    return out.stdout;
  };
  const tools = await run('for t in curl python3; do command -v "$t" >/dev/null || echo "$t"; done; true');
  const status = (await callTool(server.url, sessionId, 'sandbox_status', {}, agent)).structuredContent ?? {};
  if (status.isolation !== 'bwrap') return { skipped: `our sandboxes run with isolation ${status.isolation}`, stop };
  const missing = tools.trim().split('\n').filter(Boolean);
  if (missing.length > 0) return { skipped: `${missing.join(' and ')} not found in the sandbox`, stop };
  if (status.network !== EXPECTED_NETWORK[name])
    throw new Error(`${name}: sandbox_status reports network ${status.network}, not ${EXPECTED_NETWORK[name]}`);
  // curl and Python go through the proxy exactly when its variables are set: proxied, and only there.
  const proxyVars = await run('env | grep -ci "^http_proxy=" || true');
  if ((name === 'proxied') !== Number(proxyVars) > 0)
    throw new Error(`${name}: ${proxyVars.trim()} http_proxy variables in the sandbox`);
  const url = (address, port, path) => `http://${address}:${port}${path}`;
  return {
    network: status.network,
    stop,
    download: async (address, port) => {
      const out = await run(
        `curl -sS -o /dev/null -w '%{time_total} %{size_download} %{http_code}' ${url(address, port, '/big')}`,
      );
      const [seconds, bytes, code] = out.trim().split(' ').map(Number);
      if (code !== 200 || bytes !== BIG_BYTES) throw new Error(`${name}: the download got ${code}, ${bytes} bytes`);
      return { seconds, bytes, mbPerS: bytes / seconds / 1e6 };
    },
    connections: async (port, count, warm) => {
      const out = await run(connectionScript({ port, count, warm, proxied: name === 'proxied' }));
      const times = out.trim().split('\n').map(Number);
      if (times.length !== count || !times.every(Number.isFinite))
        throw new Error(`${name}: the connection script printed ${out.slice(0, 200)}`);
      return times;
    },
  };
}

/**
 * A command that makes `warm` uncounted then `count` timed connections, one after another, each fresh: connect,
 * GET the tiny body, read it, close. Prints each timed one's milliseconds on a line.
 */
export function connectionScript({ port, count, warm, proxied }) {
  const [connectTo, target] = proxied
    ? [`'${PROXY.host}', ${PROXY.port}`, `'http://${EGRESS_HOST}:${port}/tiny'`]
    : [`'${EGRESS_HOST}', ${port}`, `'/tiny'`];
  return `python3 - <<'EOF'
import http.client, time
times = []
for i in range(${warm + count}):
    start = time.perf_counter()
    conn = http.client.HTTPConnection(${connectTo})
    conn.request('GET', ${target})
    answer = conn.getresponse()
    body = answer.read()
    conn.close()
    elapsed = time.perf_counter() - start
    if answer.status != 200 or body != b${JSON.stringify(TINY_BODY)}:
        raise SystemExit('unexpected answer %d %r' % (answer.status, body[:100]))
    if i >= ${warm}:
        times.append(elapsed)
print('\\n'.join('%.4f' % (t * 1000) for t in times))
EOF`;
}

/** The destination: `/big` answers BIG_BYTES, anything else TINY_BODY; every answer closes its connection. */
function startPayloadHost(address) {
  const server = createServer((req, res) => {
    res.shouldKeepAlive = false;
    if (req.url !== '/big') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': TINY_BODY.length });
      res.end(TINY_BODY);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': BIG_BYTES });
    let left = BIG_BYTES / MEGABYTE.length;
    const write = () => {
      while (left > 0) {
        left -= 1;
        if (left === 0) return res.end(MEGABYTE);
        if (!res.write(MEGABYTE)) return res.once('drain', write);
      }
    };
    write();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, address, () => {
      server.off('error', reject);
      resolve({
        port: server.address().port,
        close: () => {
          server.closeAllConnections();
          return new Promise((done) => server.close(() => done()));
        },
      });
    });
  });
}

/** A bare TCP relay on `address` to `to:port`: each connection piped both ways, nothing read. */
function startRelay(address, to, port) {
  const server = createTcpServer((client) => {
    const upstream = connect(port, to);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, address, () => {
      server.off('error', reject);
      resolve({ port: server.address().port, close: () => new Promise((done) => server.close(() => done())) });
    });
  });
}

function stats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50Ms: median(sorted), p90Ms: percentile(sorted, 90), p99Ms: percentile(sorted, 99) };
}
