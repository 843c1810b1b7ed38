/**
 * The 2025 lane's session table (protocol/legacy-lane.ts), in-process with a fake clock: ids, the
 * credential binding, the refusals, idle expiry, the cap (eviction of idle sessions, 503 when all are busy),
 * DELETE and shutdown. Time moves only when the test moves it.
 */
import { createSignedIdCodec } from '../../functions/mcp/sessions/session-id';
import { toPrincipal } from '../../functions/mcp/principals';
import { type Harness, createHarness, HARNESS_OTHER_TOKEN, HARNESS_SECRET, HARNESS_TOKEN } from '../support/harness';
import { initializeBody } from '../support/http';
import { errorOf, messagesOf, rpc } from '../support/raw-session';
import { holdCommands, settle } from '../support/held-commands';

const TTL_S = 60;
const logsOf = (h: Harness, msg: string) => h.logs().filter((line) => line.msg === msg);
const callTool = (h: Harness, headers: Record<string, string>, name: string, args: Record<string, unknown>, id = 7) =>
  h.post(rpc('tools/call', id, { name, arguments: args }), headers);

describe('ids and the credential binding', () => {
  it(
    'mints a signed id per initialize, and the session answers only ' +
      'the credential that opened it (404 for another)',
    async () => {
      const h = createHarness();
      const { sessionId, headers } = await h.openSession();
      expect(sessionId.split('.')).toHaveLength(3);
      expect((await h.openSession()).sessionId).not.toBe(sessionId);
      expect((await h.post(rpc('tools/list', 2), headers)).status).toBe(200);
      const foreign = await h.post(rpc('tools/list', 3), {
        ...headers,
        authorization: `Bearer ${HARNESS_OTHER_TOKEN}`,
      });
      expect(foreign.status).toBe(404);
      expect(errorOf(foreign)?.code).toBe(-32001);
    },
  );

  it('checks the token before the session: an unknown id without a valid token is 401, never 404', async () => {
    const h = createHarness();
    const { headers } = await h.openSession();
    expect(
      (await h.post(rpc('tools/list', 2), { ...headers, authorization: 'Bearer wrong-token-0123456789abcdef' })).status,
    ).toBe(401);
    expect(
      (await h.post(rpc('tools/list', 2), { ...headers, 'mcp-session-id': 'made-up', authorization: 'Bearer nope' }))
        .status,
    ).toBe(401);
  });

  it(
    'answers 404 to forged, tampered, expired and malformed ids and to ids signed with another secret, and 401 to ' +
      'each without a valid token',
    async () => {
      const h = createHarness();
      const { headers } = await h.openSession();
      const codec = createSignedIdCodec(HARNESS_SECRET, 21_600_000);
      const principal = toPrincipal(HARNESS_TOKEN);
      const [random = '', issued = '', mac = ''] = (headers['mcp-session-id'] ?? '').split('.');
      const flip = (text: string): string => (text.startsWith('A') ? `B${text.slice(1)}` : `A${text.slice(1)}`);
      const ids = {
        forged: 'AAAAAAAAAAAAAAAAAAAAAA.abc.AAAAAAAAAAAAAAAAAAAAAA',
        'tampered signature': `${random}.${issued}.${flip(mac)}`,
        'tampered random part': `${flip(random)}.${issued}.${mac}`,
        // MCP_SESSION_MAX_AGE_S (21600 s) ago and a second, on the harness clock.
        expired: codec.mint('session', principal, h.clock.now() - 21_601_000).id,
        'signed with another secret': createSignedIdCodec('another-secret-just-as-long-0123456789ab', 21_600_000).mint(
          'session',
          principal,
          h.clock.now(),
        ).id,
        malformed: 'hello',
      };
      for (const [kind, id] of Object.entries(ids)) {
        const res = await h.post(rpc('tools/list', 2), { ...headers, 'mcp-session-id': id });
        expect({ kind, status: res.status, code: errorOf(res)?.code }).toEqual({ kind, status: 404, code: -32001 });
        // Without a valid token the answer is 401, never a 404 that would tell what exists.
        const unauthenticated = await h.post(rpc('tools/list', 3), {
          ...headers,
          'mcp-session-id': id,
          authorization: 'Bearer wrong-token',
        });
        expect({ kind, status: unauthenticated.status }).toEqual({ kind, status: 401 });
      }
      expect(h.logs().filter((l) => l.msg === 'session recovered')).toEqual([]);
    },
  );

  it(
    'answers 400 to a request without a session id, to initialize inside a session, and to a batch outside ' +
      '2025-03-26',
    async () => {
      const h = createHarness();
      const { headers } = await h.openSession();
      const { 'mcp-session-id': _id, ...noSession } = headers;
      expect((await h.post(rpc('tools/list', 2), noSession)).status).toBe(400);
      const again = await h.post(initializeBody(), headers);
      expect(again.status).toBe(400);
      expect(errorOf(again)?.message).toMatch(/already initialized/);
      const batch = await h.post([rpc('ping', 3), rpc('ping', 4)], headers);
      expect(batch.status).toBe(400);
      expect(errorOf(batch)?.message).toMatch(/only allowed with protocol version 2025-03-26/);
      const old = await h.openSession({ version: '2025-03-26' });
      expect(messagesOf(await h.post([rpc('ping', 5), rpc('ping', 6)], old.headers)).map((m) => m.id)).toEqual([5, 6]);
    },
  );
});

describe(`idle expiry (MCP_SESSION_IDLE_TTL_S=${TTL_S}), on the fake clock`, () => {
  const env = { MCP_SESSION_IDLE_TTL_S: String(TTL_S) };

  it('keeps a session used within the TTL, each use restarting it', async () => {
    const h = createHarness({ env });
    const { headers } = await h.openSession();
    for (let i = 0; i < 3; i += 1) {
      h.clock.advance(TTL_S * 1000);
      expect((await h.post(rpc('ping', i), headers)).status).toBe(200);
    }
    expect(logsOf(h, 'session closed')).toEqual([]);
  });

  it(
    'puts the sandbox of a session idle past the TTL to sleep and lets the session go (no longer counted); its next ' +
      'request wakes it, files kept',
    async () => {
      const h = createHarness({ env: { ...env, MCP_MAX_SESSIONS: '1' } });
      const { headers } = await h.openSession();
      expect((await callTool(h, headers, 'write_file', { path: 'a.txt', content: 'a' })).status).toBe(200);
      const [sandbox] = h.sdk.sandboxes;
      h.clock.advance(TTL_S * 1000 + 1);
      // At the cap of one, a new session is admitted: the idle one no longer counts.
      const replacement = await h.post(initializeBody(), { authorization: `Bearer ${HARNESS_TOKEN}` });
      expect(replacement.status).toBe(200);
      await settle(() => sandbox?.state === 'paused' && logsOf(h, 'session asleep').length > 0);
      expect(logsOf(h, 'session asleep')).toEqual([expect.objectContaining({ reason: 'idle_asleep' })]);
      expect(sandbox?.killed).toBe(false);
      const read = await callTool(h, headers, 'read_file', { path: 'a.txt' });
      expect(messagesOf(read)[0]).toMatchObject({ result: { structuredContent: { content: 'a' } } });
      expect(sandbox?.state).toBe('running');
      expect(h.sdk.created).toHaveLength(1);
    },
  );

  it('with E2B_SLEEP=off closes a session idle past the TTL and destroys its sandbox: 404 afterwards', async () => {
    const h = createHarness({ env: { ...env, MCP_MAX_SESSIONS: '1', E2B_SLEEP: 'off' } });
    const { headers } = await h.openSession();
    expect((await callTool(h, headers, 'write_file', { path: 'a.txt', content: 'a' })).status).toBe(200);
    expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([false]);

    h.clock.advance(TTL_S * 1000 + 1);
    // At the cap of one, a new session is admitted: the idle one no longer counts.
    const replacement = await h.post(initializeBody(), { authorization: `Bearer ${HARNESS_TOKEN}` });
    expect(replacement.status).toBe(200);
    const expired = await h.post(rpc('tools/list', 2), headers);
    expect({ status: expired.status, code: errorOf(expired)?.code }).toEqual({ status: 404, code: -32001 });
    expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([true]);
    expect(logsOf(h, 'session closed')).toEqual([expect.objectContaining({ reason: 'idle_expired' })]);
    expect(logsOf(h, 'session evicted')).toEqual([]);
  });

  it(
    'keeps a session whose call runs past the TTL until the call ends, ' + 'and counts its idle time from the end',
    async () => {
      const h = createHarness({ env });
      const held = holdCommands(h);
      const { headers } = await h.openSession();
      const running = callTool(h, headers, 'run_command', { command: 'hold-long' });
      await settle(() => held.started('hold-long'));
      h.clock.advance(TTL_S * 1000 + 1);
      await h.openSession(); // any request sweeps: the session in a call stays
      expect(logsOf(h, 'session closed')).toEqual([]);
      held.release('hold-long');
      expect((await running).status).toBe(200);
      h.clock.advance(TTL_S * 1000 - 1_000);
      expect((await h.post(rpc('ping', 2), headers)).status).toBe(200);
      expect(logsOf(h, 'session closed')).toEqual([]);
      expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([false]);
    },
  );

  it('lets a session idle here go without destroying a sandbox another instance used within the TTL', async () => {
    const h = createHarness({ env });
    const { headers } = await h.openSession();
    await callTool(h, headers, 'write_file', { path: 'work.txt', content: 'precious' });
    const sandbox = h.sdk.sandboxes[0];
    h.clock.advance(TTL_S * 1000 + 1);
    // Another instance renewed the lease a moment ago (E2B's lease end is the sandbox's own record).
    if (sandbox !== undefined) sandbox.endAtMs = h.clock.now() - 1_000 + TTL_S * 1000;
    await h.openSession(); // any request sweeps
    await settle(() => logsOf(h, 'session released').length > 0);
    expect(logsOf(h, 'session released')).toEqual([expect.objectContaining({ reason: 'idle_here_used_elsewhere' })]);
    expect(sandbox?.killed).toBe(false);
    // The session comes back here too, with its files.
    const read = await callTool(h, headers, 'read_file', { path: 'work.txt' });
    expect(messagesOf(read)[0]).toMatchObject({ result: { structuredContent: { content: 'precious' } } });
  });
});

describe('the cap (MCP_MAX_SESSIONS=2), one credential allowed all of it', () => {
  // Sharing between credentials is test/core/fair-share.test.ts.
  const env = { MCP_MAX_SESSIONS: '2', MCP_MAX_SESSIONS_PER_CREDENTIAL: '2' };

  it(
    'evicts the least recently used idle session for a new one; ' + 'the evicted one comes back with its sandbox',
    async () => {
      const h = createHarness({ env });
      const first = await h.openSession();
      const second = await h.openSession();
      await callTool(h, first.headers, 'write_file', { path: 'first.txt', content: 'one' });
      await h.post(rpc('ping', 2), second.headers); // the second is now the more recently used
      await h.post(rpc('ping', 3), first.headers); // ...and now the first: the second goes
      const third = await h.openSession();
      expect(logsOf(h, 'session evicted')).toHaveLength(1);
      expect(h.sdk.sandboxes.every((s) => !s.killed)).toBe(true);
      // The second comes back (evicting the least recently used again), and so does the first with its file.
      expect((await h.post(rpc('ping', 4), second.headers)).status).toBe(200);
      const read = await callTool(h, first.headers, 'read_file', { path: 'first.txt' });
      expect(messagesOf(read)[0]).toMatchObject({ result: { structuredContent: { content: 'one' } } });
      expect(logsOf(h, 'session recovered')).toHaveLength(2);
      expect((await h.post(rpc('ping', 5), third.headers)).status).toBe(200);
    },
  );

  it(
    'answers 503 with Retry-After naming MCP_MAX_SESSIONS while every session is mid-call, and admits one when a ' +
      'call ends',
    async () => {
      const h = createHarness({ env });
      const held = holdCommands(h);
      const sessions = [await h.openSession(), await h.openSession()];
      const calls = sessions.map((s, i) => callTool(h, s.headers, 'run_command', { command: `hold-${i}` }, 10 + i));
      await settle(() => held.started('hold-0') && held.started('hold-1'));

      const refused = await h.post(initializeBody(), { authorization: `Bearer ${HARNESS_TOKEN}` });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('30');
      expect(refused.headers.get('mcp-session-id')).toBeNull();
      expect(errorOf(refused)?.message).toContain('MCP_MAX_SESSIONS=2');
      expect(logsOf(h, 'session evicted')).toEqual([]);

      held.release('hold-0');
      expect((await calls[0])?.status).toBe(200);
      const admitted = await h.post(initializeBody(), { authorization: `Bearer ${HARNESS_TOKEN}` });
      expect(admitted.status).toBe(200);
      // The busy one was left alone; the one whose call ended made room, and comes back on its next request.
      expect(logsOf(h, 'session evicted')).toHaveLength(1);
      held.release('hold-1');
      expect((await calls[1])?.status).toBe(200);
      expect((await h.post(rpc('ping', 3), sessions[0]?.headers)).status).toBe(200);
      expect(logsOf(h, 'session recovered')).toHaveLength(1);
    },
  );

  it('counts a session held mid-call by a background process as busy: it is not evicted', async () => {
    const h = createHarness({ env });
    const held = holdCommands(h);
    const background = await h.openSession();
    await callTool(h, background.headers, 'run_command', { command: 'hold-server', background: true });
    await settle(() => held.started('hold-server'));
    const idle = await h.openSession();
    await h.openSession(); // at the cap: the idle one goes, not the one with a running process
    const evicted = logsOf(h, 'session evicted').map((l) => l.session);
    expect(evicted).toHaveLength(1);
    expect((await h.post(rpc('ping', 2), background.headers)).status).toBe(200);
    expect(logsOf(h, 'session recovered')).toHaveLength(0);
    expect((await h.post(rpc('ping', 3), idle.headers)).status).toBe(200);
    expect(logsOf(h, 'session recovered')).toHaveLength(1);
    held.release('hold-server');
  });
});

describe('DELETE and shutdown', () => {
  it(
    'DELETE kills the sandbox and ends the id for good: 404 afterwards, never rebuilt from its still-valid ' +
      'signature',
    async () => {
      const h = createHarness();
      const { headers } = await h.openSession();
      await callTool(h, headers, 'write_file', { path: 'a.txt', content: 'a' });
      const deleted = await h.fetch(h.url, { method: 'DELETE', headers });
      expect(deleted.status).toBe(200);
      expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([true]);
      const after = await h.post(rpc('tools/list', 2), headers);
      expect({ status: after.status, code: errorOf(after)?.code }).toEqual({ status: 404, code: -32001 });
      expect(logsOf(h, 'session recovered')).toEqual([]);
      expect((await h.fetch(h.url, { method: 'DELETE', headers })).status).toBe(404);
    },
  );

  it('at shutdown keeps the sandboxes when sessions can come back, and destroys them when they cannot', async () => {
    for (const keepSandboxes of [true, false]) {
      const h = createHarness();
      const { headers } = await h.openSession();
      await callTool(h, headers, 'write_file', { path: 'a.txt', content: 'a' });
      await h.core.shutdown({ keepSandboxes, flushMs: 0 });
      expect({ keepSandboxes, killed: h.sdk.sandboxes.map((s) => s.killed) }).toEqual({
        keepSandboxes,
        killed: [!keepSandboxes],
      });
      expect(logsOf(h, 'sessions ended for shutdown')).toEqual([
        expect.objectContaining({ sessions: 1, sandboxes_kept: keepSandboxes }),
      ]);
    }
  });

  it('reports the sessions and sandboxes it holds in /health', async () => {
    const h = createHarness();
    const { headers } = await h.openSession();
    await h.openSession();
    await callTool(h, headers, 'write_file', { path: 'a.txt', content: 'a' });
    const health = (await (await h.fetch('http://127.0.0.1:9000/health')).json()) as Record<string, unknown>;
    expect(health).toMatchObject({ status: 'ok', sessions: 2, sandboxes: 1, backend: { name: 'e2b', ready: true } });
  });
});
