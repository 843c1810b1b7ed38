/**
 * Fair sharing between credentials (sessions/fair-share.ts), in-process with a fake clock and two tokens:
 * one credential cannot lock the other out (sessions, sandboxes, calls), room is taken from whoever holds the
 * most, and another credential's busy sandbox is never let go.
 */
import type { Client } from '@modelcontextprotocol/client';

import { toSessionTag } from '../../functions/mcp/sessions/session-id';
import { createHarness, type Harness, HARNESS_OTHER_TOKEN, HARNESS_TOKEN } from '../support/harness';
import { holdCommands, settle } from '../support/held-commands';
import { initializeBody, type RawResponse } from '../support/http';
import { errorOf, messagesOf, rpc } from '../support/raw-session';

const A = {}; // the harness's default token
const B = { token: HARNESS_OTHER_TOKEN };
const asB = { authorization: `Bearer ${HARNESS_OTHER_TOKEN}` };
const logsOf = (h: Harness, msg: string) => h.logs().filter((line) => line.msg === msg);
const callTool = (h: Harness, headers: Record<string, string>, name: string, args: Record<string, unknown>, id = 7) =>
  h.post(rpc('tools/call', id, { name, arguments: args }), headers);
type Result = {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};
const callModern = async (client: Client, name: string, args: Record<string, unknown> = {}): Promise<Result> =>
  (await client.callTool({ name, arguments: args })) as Result;
const textOf = (res: Awaited<ReturnType<typeof callTool>>): string =>
  String(
    (messagesOf(res)[0] as { result?: { content?: Array<{ text?: string }> } } | undefined)?.result?.content?.[0]?.text,
  );

describe(
  'sessions (MCP_MAX_SESSIONS=5: ' + 'each of the two credentials may hold 2 by default, a quarter rounded up)',
  () => {
    const env = { MCP_MAX_SESSIONS: '5' };

    it(
      'a credential whose sessions all run background processes cannot lock another out: it gets 429, the other gets ' +
        'in',
      async () => {
        const h = createHarness({ env });
        const held = holdCommands(h);
        const mine = [];
        for (let i = 0; i < 2; i += 1) {
          const session = await h.openSession(A);
          await callTool(h, session.headers, 'run_command', { command: `hold-bg-${i}`, background: true });
          mine.push(session);
        }
        await settle(() => held.started('hold-bg-1'));

        const third = await h.post(initializeBody());
        expect(third.status).toBe(429);
        expect(third.headers.get('retry-after')).toBe('30');
        expect(errorOf(third)?.message).toContain('MCP_MAX_SESSIONS_PER_CREDENTIAL=2');

        const other = await h.post(initializeBody(), asB);
        expect(other.status).toBe(200);
        // Nothing of the first credential's was let go for it.
        expect(logsOf(h, 'session evicted')).toEqual([]);
        for (let i = 0; i < 2; i += 1) held.release(`hold-bg-${i}`);
      },
    );

    it(
      'at its own cap a credential lets its own least recently used idle session go, ' + 'never another credential’s',
      async () => {
        const h = createHarness({ env });
        const theirs = await h.openSession(B);
        const first = await h.openSession(A);
        await h.openSession(A);
        await h.openSession(A); // at A's own cap of 2: A's least recently used (`first`) goes
        expect(logsOf(h, 'session evicted').map((line) => line.session)).toEqual([toSessionTag(first.sessionId)]);
        // The other credential's session is still held here (no recovery needed), the evicted one comes back.
        expect((await h.post(rpc('ping', 2), theirs.headers)).status).toBe(200);
        expect(logsOf(h, 'session recovered')).toEqual([]);
        expect((await h.post(rpc('ping', 3), first.headers)).status).toBe(200);
        expect(logsOf(h, 'session recovered')).toHaveLength(1);
      },
    );
  },
);

describe('the default share (MCP_MAX_SESSIONS=8)', () => {
  const THIRD_TOKEN = 'harness-third-token-0123456789abcd';
  const asC = { authorization: `Bearer ${THIRD_TOKEN}` };
  const holdSessions = async (h: Harness, token: Record<string, string>, names: string[]): Promise<void> => {
    for (const name of names) {
      const session = await h.openSession(token);
      await callTool(h, session.headers, 'run_command', { command: name, background: true });
    }
  };

  it(
    'two credentials that each take all the busy sessions they can still leave a third one room (each may take a ' +
      'quarter)',
    async () => {
      const h = createHarness({
        env: { MCP_MAX_SESSIONS: '8', MCP_AUTH_TOKENS: `${HARNESS_TOKEN},${HARNESS_OTHER_TOKEN},${THIRD_TOKEN}` },
      });
      const held = holdCommands(h);
      /** Opens sessions that each run a background process until the credential is refused; returns their commands. */
      const grab = async (
        auth: Record<string, string>,
        prefix: string,
      ): Promise<{ names: string[]; refusal: RawResponse }> => {
        const names: string[] = [];
        for (;;) {
          const opened = await h.post(initializeBody(), auth);
          if (opened.status !== 200 || names.length === 8) return { names, refusal: opened };
          const headers = {
            ...auth,
            'mcp-session-id': opened.headers.get('mcp-session-id') ?? '',
            'mcp-protocol-version': '2025-11-25',
          };
          await h.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
          names.push(`${prefix}-${names.length}`);
          await callTool(h, headers, 'run_command', { command: names.at(-1), background: true });
        }
      };
      const a = await grab({ authorization: `Bearer ${HARNESS_TOKEN}` }, 'hold-a');
      const b = await grab(asB, 'hold-b');
      await settle(() => [...a.names, ...b.names].every((name) => held.started(name)));
      expect([a.names.length, b.names.length]).toEqual([2, 2]);
      expect(b.refusal.status).toBe(429);
      expect(errorOf(b.refusal)?.message).toContain('MCP_MAX_SESSIONS_PER_CREDENTIAL=2');
      const third = await h.post(initializeBody(), asC);
      expect(third.status).toBe(200);
      expect(logsOf(h, 'session evicted')).toEqual([]);
      for (const name of [...a.names, ...b.names]) held.release(name);
    },
  );

  it('one static token and no OAuth issuer: the one credential there can be may use the whole instance', async () => {
    const h = createHarness({ env: { MCP_MAX_SESSIONS: '8', MCP_AUTH_TOKENS: HARNESS_TOKEN } });
    const held = holdCommands(h);
    const names = Array.from({ length: 8 }, (_, i) => `hold-only-${i}`);
    await holdSessions(h, {}, names);
    await settle(() => names.every((name) => held.started(name)));
    const ninth = await h.post(initializeBody());
    expect(ninth.status).toBe(503);
    expect(errorOf(ninth)?.message).toContain('MCP_MAX_SESSIONS=8');
    for (const name of names) held.release(name);
  });
});

describe('a full instance (MCP_MAX_SESSIONS=4, each credential allowed all 4)', () => {
  const env = { MCP_MAX_SESSIONS: '4', MCP_MAX_SESSIONS_PER_CREDENTIAL: '4' };

  it('takes room from the credential holding the most, even when the newcomer’s own session is older', async () => {
    const h = createHarness({ env });
    const theirs = await h.openSession(B); // the oldest session of all
    const a1 = await h.openSession(A);
    await h.openSession(A);
    await h.openSession(A);
    await h.openSession(B); // full: A holds 3, B 1 → A's least recently used goes, not B's older one
    expect(logsOf(h, 'session evicted')).toHaveLength(1);
    expect((await h.post(rpc('ping', 2), theirs.headers)).status).toBe(200);
    expect(logsOf(h, 'session recovered')).toEqual([]);
    expect((await h.post(rpc('ping', 3), a1.headers)).status).toBe(200);
    expect(logsOf(h, 'session recovered')).toHaveLength(1);
  });

  it(
    'never lets another credential’s busy session go: the newcomer’s own idle one goes, and with none idle it gets ' +
      '503',
    async () => {
      const h = createHarness({ env });
      const held = holdCommands(h);
      for (let i = 0; i < 3; i += 1) {
        const session = await h.openSession(A);
        await callTool(h, session.headers, 'run_command', { command: `hold-a-${i}`, background: true });
      }
      const theirs = await h.openSession(B);
      await settle(() => held.started('hold-a-2'));
      // A holds the most, but all busy: B's own idle session makes room.
      const next = await h.openSession(B);
      expect(logsOf(h, 'session evicted').map((line) => line.session)).toEqual([toSessionTag(theirs.sessionId)]);
      // With B's new session busy too, the instance is full of busy sessions.
      await callTool(h, next.headers, 'run_command', { command: 'hold-b', background: true });
      await settle(() => held.started('hold-b'));
      expect(h.sdk.sandboxes.filter((s) => s.killed)).toEqual([]);
      const refused = await h.post(initializeBody(), asB);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('30');
      expect(errorOf(refused)?.message).toContain('MCP_MAX_SESSIONS=4');
      expect(h.sdk.sandboxes.filter((s) => s.killed)).toEqual([]);
      expect(logsOf(h, 'session evicted')).toHaveLength(1);
      for (const name of ['hold-a-0', 'hold-a-1', 'hold-a-2', 'hold-b']) held.release(name);
    },
  );
});

describe('2026-07-28 sandboxes (MCP_MAX_SESSIONS=2)', () => {
  it('handle-less calls of one credential never release another credential’s busy sandbox', async () => {
    const h = createHarness({ env: { MCP_MAX_SESSIONS: '2', MCP_MAX_SANDBOXES_PER_CREDENTIAL: '2' } });
    const held = holdCommands(h);
    const theirs = await h.connectModern(B);
    const handle = String(
      (await callModern(theirs, 'run_command', { command: 'hold-server', background: true })).structuredContent
        ?.sandbox,
    );
    await settle(() => held.started('hold-server'));
    const mine = await h.connectModern(A);
    for (let i = 0; i < 5; i += 1)
      expect((await callModern(mine, 'write_file', { path: 'x', content: String(i) })).isError).toBeUndefined();
    // B's sandbox was never let go: its handle is served from this instance's table, its process still held.
    const status = await callModern(theirs, 'manage_process', { action: 'list', sandbox: handle });
    expect(JSON.stringify(status.structuredContent)).toContain('running');
    expect(h.sdk.connects).toEqual([]);
    expect(h.sdk.sandboxes[0]?.killed).toBe(false);
    held.release('hold-server');
  });

  it(
    'answers 503 with Retry-After before running a call that ' + 'would need room when every held sandbox is busy',
    async () => {
      const h = createHarness({ env: { MCP_MAX_SESSIONS: '2', MCP_MAX_SANDBOXES_PER_CREDENTIAL: '2' } });
      const held = holdCommands(h);
      const theirs = await h.connectModern(B);
      await callModern(theirs, 'run_command', { command: 'hold-1', background: true });
      await callModern(theirs, 'run_command', { command: 'hold-2', background: true });
      await settle(() => held.started('hold-2'));
      const res = await h.post(rpc('tools/call', 9, { name: 'sandbox_status', arguments: {} }), {
        'mcp-protocol-version': '2026-07-28',
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('30');
      expect(errorOf(res)?.message).toContain('MCP_MAX_SESSIONS=2');
      held.release('hold-1');
      held.release('hold-2');
    },
  );
});

describe('sandboxes per credential, both eras together (MCP_MAX_SANDBOXES_PER_CREDENTIAL=1)', () => {
  const env = { MCP_MAX_SANDBOXES_PER_CREDENTIAL: '1' };

  it('a second sandbox lets the credential’s own idle one go (kept, and re-attached when used again)', async () => {
    const h = createHarness({ env });
    const first = await h.openSession(A);
    const second = await h.openSession(A);
    await callTool(h, first.headers, 'write_file', { path: 'one.txt', content: '1' });
    await callTool(h, second.headers, 'write_file', { path: 'two.txt', content: '2' });
    expect(logsOf(h, 'sandbox released')).toHaveLength(1);
    expect(h.sdk.sandboxes.map((s) => s.killed)).toEqual([false, false]);
    const read = await callTool(h, first.headers, 'read_file', { path: 'one.txt' });
    expect(messagesOf(read)[0]).toMatchObject({ result: { structuredContent: { content: '1' } } });
    expect(h.sdk.connects).toHaveLength(1);
  });

  it(
    'refuses a sandbox while the credential’s only one is busy, in either era, naming the limit; another ' +
      'credential is unaffected',
    async () => {
      const h = createHarness({ env });
      const held = holdCommands(h);
      const busy = await h.openSession(A);
      await callTool(h, busy.headers, 'run_command', { command: 'hold-busy', background: true });
      await settle(() => held.started('hold-busy'));
      const second = await h.openSession(A);
      const refused = await callTool(h, second.headers, 'write_file', { path: 'x', content: 'x' });
      expect(messagesOf(refused)[0]).toMatchObject({ result: { isError: true } });
      expect(textOf(refused)).toContain('MCP_MAX_SANDBOXES_PER_CREDENTIAL=1');
      const modern = await callModern(await h.connectModern(A), 'write_file', { path: 'x', content: 'x' });
      expect(modern.isError).toBe(true);
      expect(modern.content[0]?.text).toContain('MCP_MAX_SANDBOXES_PER_CREDENTIAL=1');
      const theirs = await h.openSession(B);
      expect(messagesOf(await callTool(h, theirs.headers, 'write_file', { path: 'x', content: 'x' }))[0]).toMatchObject(
        {
          result: { structuredContent: { path: expect.any(String) } },
        },
      );
      held.release('hold-busy');
    },
  );
});

describe('calls in flight per credential (MCP_MAX_CALLS_PER_CREDENTIAL=2)', () => {
  it(
    'refuses a third concurrent call with 429 and Retry-After, serves another credential, and frees the slot when ' +
      'a call ends',
    async () => {
      const h = createHarness({ env: { MCP_MAX_CALLS_PER_CREDENTIAL: '2' } });
      const held = holdCommands(h);
      const session = await h.openSession(A);
      const running = [0, 1].map((i) =>
        callTool(h, session.headers, 'run_command', { command: `hold-call-${i}` }, 20 + i),
      );
      await settle(() => held.started('hold-call-0') && held.started('hold-call-1'));
      const third = await callTool(h, session.headers, 'sandbox_status', {}, 30);
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).toBe('1');
      expect(errorOf(third)?.message).toContain('MCP_MAX_CALLS_PER_CREDENTIAL=2');
      expect(errorOf(third)).toMatchObject({ code: -32000 });
      const theirs = await h.openSession(B);
      expect((await callTool(h, theirs.headers, 'sandbox_status', {})).status).toBe(200);
      // Other requests of the same credential are not calls: not counted.
      expect((await h.post(rpc('tools/list', 31), session.headers)).status).toBe(200);
      held.release('hold-call-0');
      expect((await running[0])?.status).toBe(200);
      expect((await callTool(h, session.headers, 'sandbox_status', {}, 32)).status).toBe(200);
      held.release('hold-call-1');
      await running[1];
    },
  );

  it('frees the slot of a call whose client hung up', async () => {
    const h = createHarness({ env: { MCP_MAX_CALLS_PER_CREDENTIAL: '1' } });
    const held = holdCommands(h);
    const client = await h.connectModern();
    const abort = new AbortController();
    const running = client.callTool(
      { name: 'run_command', arguments: { command: 'hold-gone' } },
      { signal: abort.signal },
    );
    await settle(() => held.started('hold-gone'));
    const session = await h.openSession(A);
    expect((await callTool(h, session.headers, 'sandbox_status', {})).status).toBe(429);
    abort.abort();
    await expect(running).rejects.toThrow();
    // The hang-up cancels the answer's stream, which gives the slot back; no time passes, requests are tried.
    let status = 0;
    for (let tries = 0; tries < 50 && status !== 200; tries += 1)
      status = (await callTool(h, session.headers, 'sandbox_status', {})).status;
    expect(status).toBe(200);
  });
});
