/**
 * The fuzz suite (issue 7): seeded hostile or malformed requests against one server (bearer auth on):
 * bodies, JSON-RPC shapes, methods, headers, huge and deeply nested values, invalid UTF-8, tool arguments of
 * every wrong type, paths that try to escape, bad and missing tokens, the modern lane.
 *
 * Each answer must be one the status table allows for its case, never a 5xx; the server must not crash or
 * log an uncaught exception or unhandled rejection; it is healthy afterwards and a normal session still works.
 * test/e2e/fuzz.test.ts runs a small fixed run with `npm test`; test/reliability/fuzz.test.ts the large one.
 * Failing cases found are kept in test/e2e/fuzz-regressions.test.ts.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { connectClient, textOf } from './clients';
import {
  describeCase,
  errorCodesIn,
  ESCAPE_MARKER,
  type FuzzAnswer,
  type FuzzCase,
  generateCases,
  judge,
  PASSWD_MARKER,
  SANDBOX_SETUP_COMMAND,
  sendCase,
} from './fuzz';
import { openSession } from './raw-session';
import { callToolRaw, createLimiter, freshRequest, health } from './reliability';
import { startServer, stopAllServers, type StartedServer } from './server';

const TOKEN = 'fuzz-token-0123456789abcdef0123456789';
const OTHER_TOKEN = 'fuzz-other-token-fedcba9876543210fedcba';
const MAX_BODY_BYTES = 1_048_576;
const CONCURRENCY = 16;

export interface FuzzSuiteOptions {
  /** How many cases to generate. */
  cases: number;
  /** The generator's seed: the same seed and count give the same cases. */
  seed: number;
  /** Send only the cases with these indexes. @default all */
  only?: readonly number[];
  /** How to replay this run, printed with the seed. */
  replay: string;
  /** Writes every failing case there, one a line (the console shows the first 40). */
  reportFile?: string;
}

/** The log lines of a crash the crash guard caught (the server logs them instead of exiting). */
const CRASH_MESSAGES = ['uncaught exception', 'unhandled rejection'];

/** Defines the fuzz suite's tests (one server for the whole run). */
export function describeFuzz({ cases: COUNT, seed: SEED, only: ONLY, replay, reportFile }: FuzzSuiteOptions): void {
  describe(`fuzz: ${COUNT} seeded hostile requests (seed ${SEED})`, () => {
    let server: StartedServer;
    let cases: FuzzCase[] = [];
    const answers = new Map<number, FuzzAnswer>();
    const problems: string[] = [];
    const internalErrors: string[] = [];
    afterAll(stopAllServers);

    beforeAll(async () => {
      console.log(`fuzz: seed ${SEED}, ${COUNT} cases; replay with ${replay}`);
      server = await startServer({
        env: { MCP_AUTH_TOKENS: `${TOKEN},${OTHER_TOKEN}`, MCP_MAX_BODY_BYTES: String(MAX_BODY_BYTES) },
      });
      const [base, base0326, other] = await Promise.all([
        openSession(server.url, TOKEN),
        openSession(server.url, TOKEN, '2025-03-26'),
        openSession(server.url, OTHER_TOKEN),
      ]);
      // Symlinks that lead out of the working directory, for the path-escape cases.
      const setup = await callToolRaw(server.url, base.headers, 'run_command', { command: SANDBOX_SETUP_COMMAND });
      expect(setup.problem).toBeUndefined();
      cases = generateCases(SEED, COUNT, {
        port: server.port,
        token: TOKEN,
        otherToken: OTHER_TOKEN,
        session: base.sessionId,
        session0326: base0326.sessionId,
        otherSession: other.sessionId,
        maxBodyBytes: MAX_BODY_BYTES,
      });
    });

    it('answers every case with a status the status table allows for ' +
      'it: no 5xx, no dropped connection, no hang', async () => {
      const selected = ONLY === undefined ? cases : cases.filter((c) => ONLY.includes(c.index));
      const limit = createLimiter(CONCURRENCY);
      const openedSessions: string[] = [];
      const started = Date.now();
      await Promise.all(
        selected.map((c) =>
          limit(async () => {
            const answer = await sendCase(server.port, c);
            answers.set(c.index, answer);
            const problem = judge(c, answer);
            if (problem !== undefined) problems.push(describeCase(c, answer, problem));
            if (errorCodesIn(answer).includes(-32603))
              internalErrors.push(describeCase(c, answer, 'JSON-RPC -32603 internal error'));
            const opened = answer.headers['mcp-session-id'];
            if (typeof opened === 'string' && answer.status === 200) openedSessions.push(opened);
          }),
        ),
      );
      // Sessions the initialize cases opened: end them, so that only the base sessions remain.
      await Promise.all(
        openedSessions.map((id) =>
          limit(() =>
            freshRequest(server.url, {
              method: 'DELETE',
              headers: { authorization: `Bearer ${TOKEN}`, 'mcp-session-id': id },
            }),
          ),
        ),
      );

      const sent = [...answers.values()].filter((a) => a.status !== -1).length;
      const byFamily: Record<string, number> = {};
      const byStatus: Record<string, number> = {};
      for (const c of selected) {
        byFamily[c.family] = (byFamily[c.family] ?? 0) + 1;
        const status = String(answers.get(c.index)?.status);
        byStatus[status] = (byStatus[status] ?? 0) + 1;
      }
      const logged: Record<string, number> = {};
      for (const line of server.logs())
        if (line.level === 'error' || line.level === 'warn')
          logged[String(line.msg)] = (logged[String(line.msg)] ?? 0) + 1;
      console.log(
        `server warnings and errors ${JSON.stringify(logged)}\n` +
          `fuzz: ${sent} requests sent in ${((Date.now() - started) / 1000).toFixed(1)} s (seed ` +
          `${SEED})\nfamilies ${JSON.stringify(byFamily)}\nstatuses ${JSON.stringify(byStatus)}\n` +
          `${problems.length} failing, ${internalErrors.length} internal errors` +
          (problems.length + internalErrors.length > 0
            ? `:\n${[...problems, ...internalErrors].slice(0, 40).join('\n')}`
            : ''),
      );
      if (reportFile !== undefined) writeFileSync(reportFile, [...problems, ...internalErrors].join('\n'));
      if (ONLY === undefined) expect(sent).toBeGreaterThanOrEqual(Math.floor(COUNT * 0.8));
      expect(problems).toEqual([]);
    }, 240_000);

    it('never crashed: the process is alive and logged no uncaught exception or unhandled rejection', () => {
      expect(server.child.exitCode).toBeNull();
      expect(server.child.signalCode).toBeNull();
      const crashes = server.logs().filter((line) => CRASH_MESSAGES.includes(String(line.msg)));
      expect(crashes).toEqual([]);
      expect(server.stderr()).not.toMatch(/uncaught|unhandled|FATAL|heap out of memory/i);
    });

    it(
      'answers no hostile input with the generic internal error ' +
        '(-32603): invalid input is refused by name instead',
      () => {
        const unexpected = server
          .logs()
          .filter((line) =>
            ['tool failed unexpectedly', 'unhandled error', 'response failed'].includes(String(line.msg)),
          );
        expect({
          internalErrors: internalErrors.slice(0, 20),
          count: internalErrors.length,
          logged: unexpected.map((l) => l.error),
        }).toEqual({ internalErrors: [], count: 0, logged: [] });
      },
    );

    it('let no path escape: nothing written outside the workspaces, /etc/passwd untouched', () => {
      const stray: string[] = [];
      const look = (dir: string): void => {
        let names: string[] = [];
        try {
          names = readdirSync(dir);
        } catch {
          // not a directory
        }
        for (const name of names) if (name.includes(ESCAPE_MARKER)) stray.push(join(dir, name));
      };
      for (const dir of ['/', '/tmp', '/etc', server.sandboxRoot]) look(dir);
      // A workspace directory itself (beside home/ and tmp/) belongs to the server, not the sandbox.
      for (const workspace of readdirSync(server.sandboxRoot)) look(join(server.sandboxRoot, workspace));
      expect(stray).toEqual([]);
      expect(readFileSync('/etc/passwd', 'utf8')).toContain(PASSWD_MARKER);
      expect(readFileSync('/etc/passwd', 'utf8')).not.toContain(ESCAPE_MARKER);
    });

    it('is healthy afterwards, and a normal session still works end to end', async () => {
      const report = await health(server);
      expect(report).toMatchObject({ status: 200, body: { status: 'ok' } });
      const client = await connectClient('v2', server.url, { token: TOKEN });
      await client.callTool('write_file', { path: 'after-fuzz.txt', content: 'still fine\n' });
      expect((await client.callTool('read_file', { path: 'after-fuzz.txt' })).structuredContent).toMatchObject({
        content: 'still fine\n',
      });
      const echoed = await client.callTool('run_command', { command: 'echo ok' });
      expect(echoed.structuredContent).toMatchObject({ exit_code: 0, stdout: 'ok\n' });
      expect(textOf(await client.callTool('run_code', { code: '6 * 7' }))).toContain('42');
      await client.terminate();
    });
  });
}
