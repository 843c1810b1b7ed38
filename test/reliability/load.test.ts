/**
 * Load (issue 7): 200 concurrent sessions × 50 mixed tool calls on the local backend, with 0 errors; then
 * DELETE of every session leaves 0 sessions, 0 child processes and 0 workspaces.
 *
 * Every session is opened first, so that all 200 are alive at once; their calls then run side by side,
 * each session's calls in order, with a bound on the calls in flight so that 2 cores keep up
 * (LOAD_CONCURRENCY). LOAD_SESSIONS and LOAD_CALLS shrink it for a quick local run.
 */
import { performance } from 'node:perf_hooks';

import { processesOfUid, SETTLE_MS } from '../support/processes';
import { openSession } from '../support/raw-session';
import { callToolRaw, crashLines, createLimiter, descendantsOf, freshRequest, health } from '../support/reliability';
import { startServer, stopAllServers, type StartedServer, workspacesIn } from '../support/server';

/** Sandboxes get users of their own only when the server runs as root. */
const AS_ROOT = process.getuid?.() === 0;
const TOKEN = 'load-token-0123456789abcdef0123456789';
const SESSIONS = Number(process.env.LOAD_SESSIONS ?? 200);
const CALLS = Number(process.env.LOAD_CALLS ?? 50);
const CONCURRENCY = Number(process.env.LOAD_CONCURRENCY ?? 24);

afterAll(stopAllServers);

interface Session {
  index: number;
  sessionId: string;
  headers: Record<string, string>;
  uid?: number;
}

interface Failure {
  session: number;
  call: number;
  tool: string;
  problem: string;
}

/** The k-th call of a session after the first (`id -u`): a cycle of every kind, each checked for its content. */
const CYCLE = [
  'write_file',
  'read_file',
  'edit_file',
  'read_file',
  'list_files',
  'run_command',
  'run_code',
  'sandbox_status',
] as const;

function planCall(
  session: number,
  call: number,
): { tool: string; args: Record<string, unknown>; check: (structured: Record<string, unknown>) => string | undefined } {
  if (call === 0) {
    return {
      tool: 'run_command',
      args: { command: 'id -u' },
      check: (s) => (/^\d+\n$/.test(String(s.stdout)) ? undefined : `id -u gave ${JSON.stringify(s.stdout)}`),
    };
  }
  const kind = CYCLE[(call - 1) % CYCLE.length] as (typeof CYCLE)[number];
  const round = Math.floor((call - 1) / CYCLE.length);
  const path = `d${round}/f.txt`;
  const expect = (field: string, want: unknown) => (s: Record<string, unknown>) =>
    JSON.stringify(s[field]) === JSON.stringify(want)
      ? undefined
      : `${field} was ${JSON.stringify(s[field])?.slice(0, 120)}, expected ${JSON.stringify(want)}`;
  switch (kind) {
    case 'write_file':
      return { tool: kind, args: { path, content: `s${session}-r${round}-hello\n` }, check: () => undefined };
    case 'read_file': {
      const edited = (call - 1) % CYCLE.length === 3;
      return {
        tool: kind,
        args: { path },
        check: expect('content', `s${session}-r${round}-${edited ? 'world' : 'hello'}\n`),
      };
    }
    case 'edit_file':
      return { tool: kind, args: { path, old_string: 'hello', new_string: 'world' }, check: expect('replacements', 1) };
    case 'list_files':
      return {
        tool: kind,
        args: { depth: 2 },
        check: (s) => {
          const paths = ((s.entries ?? []) as Array<{ path: string }>).map((e) => e.path);
          return paths.includes(path) ? undefined : `list_files lacks ${path}: ${paths.join(', ')}`;
        },
      };
    case 'run_command':
      return {
        tool: kind,
        args: { command: `echo s${session}-c${call}` },
        check: expect('stdout', `s${session}-c${call}\n`),
      };
    case 'run_code':
      return {
        tool: kind,
        args: { code: `x = ${session} * ${call}\nx + 1` },
        check: (s) => {
          const text = (s.results as Array<{ text?: string }> | undefined)?.[0]?.text;
          return text === String(session * call + 1) ? undefined : `run_code gave ${JSON.stringify(s).slice(0, 200)}`;
        },
      };
    case 'sandbox_status':
      return { tool: kind, args: {}, check: expect('state', 'running') };
  }
}

describe(`${SESSIONS} concurrent sessions × ${CALLS} mixed tool calls on the local backend`, () => {
  let server: StartedServer;
  const sessions: Session[] = [];
  const failures: Failure[] = [];
  const timings: Record<string, number> = {};

  beforeAll(async () => {
    // One credential opens every session at once: past the default burst of new sessions (MCP_INITIALIZE_BURST).
    server = await startServer({
      env: {
        MCP_AUTH_TOKENS: TOKEN,
        MCP_MAX_SESSIONS: '300',
        MCP_MAX_SESSIONS_PER_CREDENTIAL: '300',
        MCP_MAX_CALLS_PER_CREDENTIAL: '1000',
        MCP_INITIALIZE_BURST: '1000',
      },
    });
  });

  it('opens every session first, so that all of them are alive at once', async () => {
    const started = performance.now();
    const limit = createLimiter(32);
    const opened = await Promise.all(
      Array.from({ length: SESSIONS }, (_, index) =>
        limit(async () => ({ index, ...(await openSession(server.url, TOKEN)) })),
      ),
    );
    sessions.push(...opened);
    timings.open_s = (performance.now() - started) / 1000;
    expect(new Set(sessions.map((s) => s.sessionId)).size).toBe(SESSIONS);
    expect((await health(server)).body).toMatchObject({ sessions: SESSIONS });
  });

  it(
    'runs every call of every session with 0 errors: no non-2xx, no JSON-RPC error, no isError, and the right ' +
      'content',
    async () => {
      expect(sessions).toHaveLength(SESSIONS);
      const started = performance.now();
      const limit = createLimiter(CONCURRENCY);
      let done = 0;
      const runSession = async (session: Session): Promise<void> => {
        for (let call = 0; call < CALLS; call += 1) {
          const plan = planCall(session.index, call);
          const outcome = await limit(() => callToolRaw(server.url, session.headers, plan.tool, plan.args)).catch(
            (err: unknown) => ({
              problem: `request failed: ${String((err as { cause?: unknown }).cause ?? err)}`,
              result: undefined,
            }),
          );
          done += 1;
          const problem = outcome.problem ?? plan.check(outcome.result?.structuredContent ?? {});
          if (problem !== undefined) failures.push({ session: session.index, call, tool: plan.tool, problem });
          if (call === 0 && problem === undefined)
            session.uid = Number(String(outcome.result?.structuredContent?.stdout).trim());
        }
      };
      await Promise.all(sessions.map(runSession));
      timings.calls_s = (performance.now() - started) / 1000;
      timings.calls = done;
      timings.calls_per_s = Math.round(done / timings.calls_s);
      expect({ calls: done, failures: failures.slice(0, 10), failureCount: failures.length }).toEqual({
        calls: SESSIONS * CALLS,
        failures: [],
        failureCount: 0,
      });
      // As root, each session ran as its own user, and sessions did not share one (without root they all run as
      // the server's user, which the server cannot change).
      expect(new Set(sessions.map((s) => s.uid)).size).toBe(AS_ROOT ? SESSIONS : 1);
      // All of them were held the whole time: none was evicted at the cap.
      expect((await health(server)).body).toMatchObject({ sessions: SESSIONS, sandboxes: SESSIONS });
      expect(server.logs().filter((line) => line.msg === 'session evicted')).toEqual([]);
    },
  );

  it(
    'DELETE of every session leaves 0 sessions, 0 child processes of the server, 0 processes of the sandbox users ' +
      'and 0 workspaces',
    async () => {
      const started = performance.now();
      const limit = createLimiter(32);
      const deleteMs: number[] = [];
      const statuses = await Promise.all(
        sessions.map((s) =>
          limit(async () => {
            const sent = performance.now();
            return freshRequest(server.url, { method: 'DELETE', headers: s.headers }).then(
              (res) => {
                deleteMs.push(performance.now() - sent);
                return res.status;
              },
              (err: unknown) => `DELETE failed: ${String((err as { cause?: unknown }).cause ?? err)}`,
            );
          }),
        ),
      );
      timings.delete_s = (performance.now() - started) / 1000;
      deleteMs.sort((a, b) => a - b);
      timings.delete_p50_ms = Math.round(deleteMs[Math.floor(deleteMs.length / 2)] ?? 0);
      timings.delete_max_ms = Math.round(deleteMs[deleteMs.length - 1] ?? 0);
      if (statuses.some((status) => status !== 200)) {
        console.log(
          `server alive: ${server.child.exitCode === null}\n${server.stderr().slice(-3000)}\n${server
            .stdout()
            .split('\n')
            .filter((l) => !l.includes('"msg":"request"'))
            .slice(-40)
            .join('\n')}`,
        );
      }
      expect(statuses.filter((status) => status !== 200)).toEqual([]);

      expect((await health(server)).body).toMatchObject({ status: 'ok', sessions: 0, sandboxes: 0 });
      // DELETE answers once the sandbox is killed; allow the last exits to be reaped (generous: a bound on a hang).
      const deadline = Date.now() + SETTLE_MS;
      let children = descendantsOf(server.child.pid ?? -1);
      const sandboxUids = AS_ROOT ? sessions.flatMap((s) => (s.uid === undefined ? [] : [s.uid])) : [];
      let sandboxUserProcesses = sandboxUids.flatMap((uid) => processesOfUid(uid));
      while ((children.length > 0 || sandboxUserProcesses.length > 0) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        children = descendantsOf(server.child.pid ?? -1);
        sandboxUserProcesses = sandboxUids.flatMap((uid) => processesOfUid(uid));
      }
      expect(children.map((p) => p.cmdline)).toEqual([]);
      expect(sandboxUserProcesses.map((p) => `${p.uid}: ${p.cmdline}`)).toEqual([]);
      expect(workspacesIn(server.sandboxRoot)).toEqual([]);
      expect(crashLines(server)).toEqual([]);
      expect(server.child.exitCode).toBeNull();
      // The figures, for the CI log and the benchmark notes.
      console.log(
        `load: ` +
          `${JSON.stringify({ sessions: SESSIONS, calls_per_session: CALLS, concurrency: CONCURRENCY, ...timings })}`,
      );
    },
  );
});
