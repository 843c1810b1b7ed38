/**
 * A sandbox's life on the E2B backend, through the built bundle and the real SDK, against the local E2B
 * service: previews, reset, DELETE, re-attach by tags after a server restart, a sandbox that dies or whose envd
 * becomes unreachable mid-session, idle expiry.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { TestClient } from '../support/clients';
import {
  failure,
  NODES,
  ok,
  PREVIEW_DOMAIN,
  serviceIt,
  startWire,
  type Wire,
  WIRE_TOKEN,
  wireDescribe,
} from '../support/e2b-wire';
import { postMcp } from '../support/http';
import { pollUntil, SETTLE_MS } from '../support/processes';
import { startServer } from '../support/server';

interface Status {
  state: string;
  sandbox_id: string | null;
}

wireDescribe.each(NODES)('the life of an E2B sandbox, server on %s', (_name, node) => {
  let wire: Wire;
  beforeAll(async () => {
    wire = await startWire(node);
  });
  afterAll(() => wire?.stop());

  const status = async (client: TestClient): Promise<Status> => ok<Status>(await client.callTool('sandbox_status'));
  const live = (): string[] => wire.e2b.sandboxes().map((s) => s.sandboxId);
  const started = async (client: TestClient): Promise<string> => {
    ok(await client.callTool('write_file', { path: 'mark.txt', content: 'here' }));
    return (await status(client)).sandbox_id as string;
  };

  it('gives the public preview URL of a port and whether a server listens there', async () => {
    const client = await wire.connect();
    const id = await started(client);
    ok(
      await client.callTool('run_command', {
        command: 'python3 -m http.server 8123 --bind 127.0.0.1',
        background: true,
      }),
    );
    const preview = await pollUntil(
      async () => ok<{ url: string; listening: boolean }>(await client.callTool('get_preview_url', { port: 8123 })),
      (p) => p.listening,
      SETTLE_MS,
      200,
    );
    expect(preview).toMatchObject({ url: `https://8123-${id}.${PREVIEW_DOMAIN}`, listening: true, reachable: true });
    expect(ok(await client.callTool('get_preview_url', { port: 8124 }))).toMatchObject({ listening: false });
  });

  serviceIt('reset kills the sandbox and starts an empty one', async () => {
    const client = await wire.connect();
    const before = await started(client);
    const reset = ok<{ previous_sandbox_id: string; sandbox_id: string }>(await client.callTool('reset_sandbox'));
    expect(reset.previous_sandbox_id).toBe(before);
    expect(reset.sandbox_id).not.toBe(before);
    expect(live()).not.toContain(before);
    expect(failure(await client.callTool('read_file', { path: 'mark.txt' }))).toContain('mark.txt');
  });

  serviceIt('DELETE of the session kills its sandbox', async () => {
    const client = await wire.connect();
    const id = await started(client);
    await client.terminate();
    await pollUntil(live, (ids) => !ids.includes(id), SETTLE_MS, 100);
    expect(live()).not.toContain(id);
  });

  serviceIt(
    're-attaches the session’s sandbox by its tags after a server restart, with files and processes',
    async () => {
      const client = await wire.connect();
      const id = await started(client);
      ok(await client.callTool('run_command', { command: 'exec sleep 1006', background: true }));
      const creates = wire.e2b.requests().filter((r) => r.route === 'create').length;
      await wire.restartServer();
      expect(ok<{ content: string }>(await client.callTool('read_file', { path: 'mark.txt' })).content).toBe('here');
      expect((await status(client)).sandbox_id).toBe(id);
      expect(wire.e2b.requests().filter((r) => r.route === 'create')).toHaveLength(creates);
      const listed = ok<{ processes: Array<{ process_id: string; state: string }> }>(
        await client.callTool('manage_process', { action: 'list' }),
      );
      expect(listed.processes).toContainEqual(expect.objectContaining({ process_id: 'p1', state: 'running' }));
    },
  );

  serviceIt('reports a sandbox that died as gone, and the next call starts a fresh one', async () => {
    const client = await wire.connect();
    const id = await started(client);
    await wire.e2b.killSandbox(id);
    expect(failure(await client.callTool('read_file', { path: 'mark.txt' }))).toMatch(
      /^The sandbox has expired or was shut down outside this server/,
    );
    const fresh = await started(client);
    expect(fresh).not.toBe(id);
  });

  serviceIt('ends a call whose envd becomes unreachable with a clean error, and replaces the sandbox', async () => {
    const client = await wire.connect();
    const id = await started(client);
    const call = client.callTool('run_command', { command: 'sleep 30; echo late' });
    await pollUntil(
      () => wire.e2b.requests().filter((r) => r.sandboxId === id && r.path.endsWith('/Start')).length,
      (n) => n >= 1,
      SETTLE_MS,
      50,
    );
    wire.e2b.cutEnvd(id);
    const text = failure(await call);
    expect(text).not.toMatch(/\n\s+at /);
    expect(text).not.toContain('late');
    const fresh = await started(client);
    expect(fresh).not.toBe(id);
    // The unreachable one may only have lost its path: it is killed, not left billing.
    await pollUntil(live, (ids) => !ids.includes(id), SETTLE_MS, 100);
  });
});

wireDescribe.each(NODES)(
  'idle expiry of an E2B sandbox that does not sleep (E2B_SLEEP=off, MCP_SESSION_IDLE_TTL_S=2), server on %s',
  (_name, node) => {
    let wire: Wire;
    beforeAll(async () => {
      wire = await startWire(node, { env: { MCP_SESSION_IDLE_TTL_S: '2', E2B_SLEEP: 'off' } });
    });
    afterAll(() => wire?.stop());

    serviceIt(
      'closes a session idle past the TTL and kills its sandbox (test/e2b/sleeping.test.ts: it sleeps)',
      async () => {
        const idle = await wire.connect();
        ok(await idle.callTool('write_file', { path: 'mark.txt', content: 'here' }));
        // The deployment's only sandbox (asking the session could itself come after the TTL on a busy machine).
        const [id] = wire.e2b.sandboxes().map((s) => s.sandboxId);
        // Another session's requests sweep: once the first is idle past the TTL, it is closed, not let go. On a busy
        // machine the sweeping session may itself idle past the 2 s TTL between polls: then a new one takes over.
        let other = await wire.connect();
        const sweep = async (): Promise<void> => {
          const status = await other.callTool('sandbox_status').catch(async (err: unknown) => {
            if (!/404|Session not found/.test(String(err))) throw err;
            other = await wire.connect();
            return other.callTool('sandbox_status');
          });
          ok(status);
        };
        const closed = (): Array<Record<string, unknown>> =>
          wire.server.logs().filter((l) => l.msg === 'session closed' || l.msg === 'session released');
        await pollUntil(
          async () => {
            await sweep();
            return closed();
          },
          (lines) => lines.length > 0,
          SETTLE_MS,
          300,
        );
        // Every session that went (the idle one, and any sweeper that idled out) was closed for idling, none let go.
        expect(closed().map((l) => [l.msg, l.reason])).toEqual(closed().map(() => ['session closed', 'idle_expired']));
        expect(id).toBeDefined();
        // Killed by the server (a kill even when the lease ended first and E2B had already ended it).
        expect(wire.e2b.requests().filter((r) => r.route === 'kill' && r.sandboxId === id)).toHaveLength(1);
        expect(wire.e2b.sandboxes().map((s) => s.sandboxId)).not.toContain(id);
        await expect(idle.callTool('sandbox_status')).rejects.toThrow(/404|Session not found/);
      },
    );
  },
);

wireDescribe.each(NODES)('ended sessions with E2B_STATE_DIR, server on %s', (_name, node) => {
  let stateDir: string;
  let wire: Wire;
  beforeAll(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'e2b-state-'));
    wire = await startWire(node, { env: { E2B_STATE_DIR: stateDir } });
  });
  afterAll(async () => {
    await wire?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it(
    'refuses a DELETEd id on every instance sharing the directory and after a restart, ' + 'never a fresh sandbox',
    async () => {
      const client = await wire.connect();
      ok(await client.callTool('write_file', { path: 'mark.txt', content: 'here' }));
      const headers = {
        authorization: `Bearer ${WIRE_TOKEN}`,
        'mcp-session-id': client.sessionId ?? '',
        'mcp-protocol-version': '2025-11-25',
      };
      expect((await fetch(wire.server.url, { method: 'DELETE', headers })).status).toBe(200);
      const call = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'list_files', arguments: {} } };
      // Another instance of the deployment, which never saw the DELETE.
      const other = await startServer({ node, env: { ...wire.env } });
      try {
        expect((await postMcp(other.url, call, headers)).status).toBe(404);
      } finally {
        await other.stop();
      }
      // The instance that served it, once restarted (its memory of ended ids is gone).
      await wire.restartServer();
      expect((await postMcp(wire.server.url, call, headers)).status).toBe(404);
    },
  );
});
