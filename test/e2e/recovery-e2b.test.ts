/**
 * Recovery on the E2B backend, through the SDK stub: instances are built in-process around one stub "E2B"
 * (which outlives them, as E2B does), and the official client talks to them over real HTTP.
 */
import { createServer, type Server } from 'node:http';

import { createApp } from '../../functions/mcp/http/app';
import { createBearerVerifier } from '../../functions/mcp/http/auth';
import { createNodeListener } from '../../functions/mcp/http/node-listener';
import { SILENT_LOGGER } from '../../functions/mcp/log';
import { createLegacyLane } from '../../functions/mcp/protocol/legacy-lane';
import { createMcpEndpoint } from '../../functions/mcp/protocol/mcp-endpoint';
import type { LegacySession } from '../../functions/mcp/protocol/legacy-session';
import { createSignedIdCodec } from '../../functions/mcp/sessions/session-id';
import { createMemorySessionStore } from '../../functions/mcp/sessions/store';
import { createToolCatalog } from '../../functions/mcp/tools';
import { connectClient, textOf } from '../support/clients';
import { createFakeClock } from '../support/fake-clock';
import { createStubProvider, StubSdk } from '../support/e2b-stub';

const TOKEN = 'e2b-recovery-token-0123456789abcdef';
const SECRET = 'e2b-recovery-secret-0123456789abcdef012345';

interface Instance {
  url: string;
  server: Server;
}

/** One server instance over the shared stub SDK. */
async function startInstance(sdk: StubSdk, port = 0): Promise<Instance> {
  const clock = createFakeClock();
  const provider = createStubProvider(sdk, clock, 1_800_000);
  const lane = createLegacyLane({
    store: createMemorySessionStore<LegacySession>(1_800_000),
    ids: createSignedIdCodec(SECRET, 21_600_000),
    catalog: createToolCatalog(SILENT_LOGGER),
    provider,
    maxSessions: 10,
    idleTtlMs: 1_800_000,
    toolTimeoutMaxMs: 300_000,
    logger: SILENT_LOGGER,
  });
  const app = createApp({
    mcp: createMcpEndpoint({ legacy: lane, modern: { handlePost: async () => new Response(null, { status: 400 }) }, maxBodyBytes: 4 * 1024 * 1024 }),
    health: () => ({}),
    preStop: async () => undefined,
    verifier: createBearerVerifier([TOKEN]),
    policy: { allowedOrigins: undefined, allowedHosts: undefined, loopbackOnly: true },
    logger: SILENT_LOGGER,
  });
  const server = createServer(createNodeListener(app));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/mcp`, server };
}

/** Drops an instance the way SIGKILL would: no release, no cleanup. */
async function killInstance(instance: Instance): Promise<void> {
  instance.server.closeAllConnections();
  await new Promise((resolve) => instance.server.close(resolve));
  // Client and server share this event loop: let the client see its pooled connections close.
  await new Promise((resolve) => setTimeout(resolve, 50));
}

it('re-attaches the same E2B sandbox, state included, when the session lands on a new instance', async () => {
  const sdk = new StubSdk(createFakeClock());
  const state = new Map<string, string>();
  sdk.onSandbox = (sandbox) => {
    // A stand-in for the kernel: it lives in the sandbox, not in the server.
    sandbox.code = async (code) => {
      const assign = /^(\w+) = (\d+)$/.exec(code);
      if (assign?.[1] !== undefined && assign[2] !== undefined) state.set(`${sandbox.sandboxId}:${assign[1]}`, assign[2]);
      const value = state.get(`${sandbox.sandboxId}:${code}`);
      return { results: value === undefined ? [] : ([{ text: value }] as never), logs: { stdout: [], stderr: [] }, error: undefined };
    };
  };
  const first = await startInstance(sdk);
  const port = Number(new URL(first.url).port);
  const client = await connectClient('v2', first.url, { token: TOKEN });
  await client.callTool('write_file', { path: 'data.csv', content: 'a,b\n' });
  await client.callTool('run_code', { code: 'total = 42' });
  await killInstance(first);

  const second = await startInstance(sdk, port);
  try {
    const read = await client.callTool('read_file', { path: 'data.csv' });
    expect(read.structuredContent).toMatchObject({ content: 'a,b\n' });
    expect((await client.callTool('run_code', { code: 'total' })).structuredContent).toMatchObject({ results: [{ text: '42' }], state_lost: false });
    // Found by its tags, re-attached, not re-created.
    expect(sdk.created).toHaveLength(1);
    expect(sdk.connects).toEqual(['sbx-1']);
    expect(sdk.lookups[0]).toEqual({ mcp_session: sdk.sandboxes[0]?.metadata.mcp_session, mcp_owner: sdk.sandboxes[0]?.metadata.mcp_owner });
    await client.terminate();
    expect(sdk.sandboxes[0]?.killed).toBe(true);
  } finally {
    await killInstance(second);
  }
});

it('goes on with a fresh sandbox, and says so, when the old one is gone', async () => {
  const sdk = new StubSdk(createFakeClock());
  const first = await startInstance(sdk);
  const port = Number(new URL(first.url).port);
  const client = await connectClient('v2', first.url, { token: TOKEN });
  await client.callTool('write_file', { path: 'lost.txt', content: 'x' });
  await killInstance(first);
  const old = sdk.sandboxes[0];
  if (old !== undefined) old.killed = true; // its lease ran out meanwhile

  const second = await startInstance(sdk, port);
  try {
    const result = await client.callTool('write_file', { path: 'new.txt', content: 'y' });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toMatch(/^Note: no earlier sandbox of this session was found.*files and state from before are gone/s);
    expect(sdk.created).toHaveLength(2);
    // The note comes once.
    expect(textOf(await client.callTool('read_file', { path: 'new.txt' }))).not.toContain('Note:');
    await client.terminate();
  } finally {
    await killInstance(second);
  }
});
