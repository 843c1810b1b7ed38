/**
 * Run by build.mjs with each Node it makes the core's code cache for (bundled as the server is, given on stdin):
 * `node - <outdir> <chunk hash>`. Keeps the `vm.Script` the bundle compiles mcp-core.js into
 * (functions/mcp/bundle/code-cache.ts), serves the first requests of a client on a free loopback port through
 * `<outdir>/index.js` (the handshake and one `tools/call`, twice, so that the core's top level and the functions
 * a first call runs are compiled), then writes the script's cache under this runtime's name. Functions first
 * called later are compiled then, as without a cache. Exits non-zero with the reason on stderr when it cannot.
 */
import { writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { join } from 'node:path';
import vm from 'node:vm';

import { codeCacheName } from '../../functions/mcp/bundle/code-cache';

const CORE_FILE = 'mcp-core.js';
const PROTOCOL_VERSION = '2025-11-25';

interface Answer {
  status: number;
  text: string;
  sessionId: string | undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

function post(port: number, sessionId: string | undefined, message: Record<string, unknown>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL_VERSION,
      ...(sessionId !== undefined && { 'mcp-session-id': sessionId }),
    };
    const req = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        const id = res.headers['mcp-session-id'];
        resolve({ status: res.statusCode ?? 0, text, sessionId: typeof id === 'string' ? id : undefined });
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify({ jsonrpc: '2.0', ...message }));
  });
}

async function main(outdir: string, chunkHash: string): Promise<void> {
  let core: vm.Script | undefined;
  const Script = vm.Script;
  vm.Script = class extends Script {
    constructor(source: string, options?: vm.ScriptOptions) {
      super(source, options);
      if (options?.filename === CORE_FILE) core = this;
    }
  };
  const port = await freePort();
  process.env.PORT = String(port);
  require(join(outdir, 'index.js'));
  for (let attempt = 0; ; attempt += 1) {
    try {
      await post(port, undefined, { id: 0, method: 'ping' });
      break;
    } catch (err) {
      if (attempt > 1000) throw err;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
  for (let round = 0; round < 2; round += 1) {
    const init = await post(port, undefined, {
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'build-code-cache', version: '1' },
      },
    });
    await post(port, init.sessionId, { method: 'notifications/initialized' });
    await post(port, init.sessionId, { id: 2, method: 'tools/list' });
    const call = await post(port, init.sessionId, {
      id: 3,
      method: 'tools/call',
      params: { name: 'sandbox_status', arguments: {} },
    });
    if (call.status !== 200 || !call.text.includes('"result"'))
      throw new Error(`tools/call answered ${call.status}: ${call.text.slice(0, 200)}`);
  }
  if (core === undefined) throw new Error(`${CORE_FILE} was not compiled by a first tools/call`);
  writeFileSync(join(outdir, codeCacheName(CORE_FILE, chunkHash)), core.createCachedData());
}

const [outdir, chunkHash] = process.argv.slice(2);
if (outdir === undefined || chunkHash === undefined) throw new Error('usage: node - <outdir> <chunk hash>');
main(outdir, chunkHash).then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
