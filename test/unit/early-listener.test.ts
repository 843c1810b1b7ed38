/**
 * A cold instance's early `initialize` (functions/mcp/early-initialize.ts) takes from the credential's rate of new
 * sessions, the core's own: past it the request is handed on (the core refuses it, 429), never answered with a new id.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { loadConfig } from '../../functions/mcp/config';
import { createEntryDeps } from '../../functions/mcp/entry-deps';
import { toPrincipal } from '../../functions/mcp/principals';
import { createLogger } from '../../functions/mcp/log';
import { createEarlyListener } from '../../functions/mcp/early-initialize';
import { initializeBody, postMcp } from '../support/http';

const TOKEN = 'early-token-0123456789abcdef';
const OTHER = 'early-other-0123456789abcdef';
let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve()))));

/** The early listener behind a server that answers 299 for what it hands on; and the shared rate. */
async function start(env: Record<string, string>) {
  const config = loadConfig({ MCP_AUTH_TOKENS: `${TOKEN},${OTHER}`, ...env });
  const deps = createEntryDeps(config);
  const minted: string[] = [];
  const early = createEarlyListener({
    ...deps,
    maxBodyBytes: config.maxBodyBytes,
    tasks: config.taskRoot !== undefined,
    onMinted: (id) => minted.push(id),
    logger: createLogger(
      {
        write: (_chunk, callback) => {
          callback?.();
          return true;
        },
      },
      'error',
    ),
  });
  server = createServer((req, res) => {
    void early(req, res).then((outcome) => {
      if (!outcome.answered) res.writeHead(299).end('handed on');
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return { url, minted, rate: deps.initializeRate };
}

it(
  'answers while the credential has sessions left to open, then' + ' hands the initialize on without minting an id',
  async () => {
    const { url, minted } = await start({ MCP_INITIALIZE_BURST: '2', MCP_INITIALIZE_PER_MIN: '1' });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const answers = [];
    for (let i = 0; i < 3; i += 1) answers.push(await postMcp(url, initializeBody(), auth));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 299]);
    expect(minted).toHaveLength(2);
    expect((await postMcp(url, initializeBody(), { authorization: `Bearer ${OTHER}` })).status).toBe(200);
  },
);

it('shares the rate with the core: what the core took counts here', async () => {
  const { url, rate, minted } = await start({ MCP_INITIALIZE_BURST: '1', MCP_INITIALIZE_PER_MIN: '1' });
  // The core (or an early answer) opened the credential's one session; the principal is the token's hash.
  expect(rate.take(toPrincipal(TOKEN), Date.now())).toBe(0);
  expect((await postMcp(url, initializeBody(), { authorization: `Bearer ${TOKEN}` })).status).toBe(299);
  expect(minted).toEqual([]);
});
