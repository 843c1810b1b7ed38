/**
 * Background processes on the E2B backend through the built bundle and the real SDK, against the local E2B
 * service; and the same scenario on the local backend, which must report the same: output visible while a
 * quiet process runs, stdin, the kept tail and true byte counts past the cap, exit codes, kill and the signal
 * that ended a process, and ids for processes started side by side.
 */
import type { TestClient } from '../support/clients';
import { NODES, ok, startWire, WIRE_TOKEN, wireDescribe } from '../support/e2b-wire';
import { connectClient, textOf } from '../support/clients';
import { pollUntil, SETTLE_MS } from '../support/processes';
import { startServer } from '../support/server';

interface Proc {
  process_id: string;
  state: 'running' | 'exited';
  exit_code: number | null;
  signal: string | null;
  output_bytes: number;
}
interface LogPage {
  text: string;
  offset: number;
  next_offset: number;
  total_bytes: number;
  dropped_bytes: number;
}

const MIB = 1024 * 1024;

/** What a backend reports for one fixed scenario; both backends must report exactly this. */
async function scenario(client: TestClient): Promise<Record<string, unknown>> {
  const manage = async (args: Record<string, unknown>) =>
    ok<{ processes?: Proc[]; process?: Proc; log?: LogPage }>(await client.callTool('manage_process', args));
  const logs = async (id: string, extra: Record<string, unknown> = {}) =>
    (await manage({ action: 'logs', process_id: id, ...extra })).log as LogPage;
  const start = async (command: string) =>
    ok<{ process_id: string }>(await client.callTool('run_command', { command, background: true })).process_id;
  const seen: Record<string, unknown> = {};

  // A quiet server: its first line must be readable while it runs, not when it exits.
  const server = await start('echo ready; read line; echo "got $line"; exec sleep 1000');
  seen.quiet = await pollUntil(
    () => logs(server),
    (page) => page.text !== '',
    SETTLE_MS,
    100,
  );
  seen.quietList = (await manage({ action: 'list' })).processes?.map(
    ({ process_id, state, exit_code, signal, output_bytes }) => ({
      process_id,
      state,
      exit_code,
      signal,
      output_bytes,
    }),
  );
  await manage({ action: 'write_stdin', process_id: server, input: 'hi\n' });
  seen.answered = await pollUntil(
    () => logs(server),
    (page) => page.text.includes('got'),
    SETTLE_MS,
    100,
  );
  const killing = await client.callTool('manage_process', { action: 'kill', process_id: server });
  const killed = ok<{ process?: Proc }>(killing).process;
  seen.killed = {
    state: killed?.state,
    exit_code: killed?.exit_code,
    signal: killed?.signal,
    output_bytes: killed?.output_bytes,
  };
  seen.killedText = textOf(killing).split('\n')[0];
  seen.killedListed = (await manage({ action: 'list' })).processes?.find((p) => p.process_id === server)?.signal;

  // One that ignores SIGTERM: SIGKILL ends it, and says so.
  const stubborn = await start("trap '' TERM; echo up; exec sleep 1000");
  await pollUntil(
    () => logs(stubborn),
    (page) => page.text !== '',
    SETTLE_MS,
    100,
  );
  const ignored = (await manage({ action: 'kill', process_id: stubborn, signal: 'SIGKILL' })).process;
  seen.sigkilled = { state: ignored?.state, exit_code: ignored?.exit_code, signal: ignored?.signal };

  // A flood past the 8 MiB cap that then exits on its own with a code.
  const flood = await start(`head -c ${9 * MIB} /dev/zero | tr '\\0' a; printf END; exit 3`);
  const done = await pollUntil(
    async () => (await manage({ action: 'list' })).processes?.find((p) => p.process_id === flood),
    (p) => p?.state === 'exited',
    SETTLE_MS,
    200,
  );
  seen.flood = {
    state: done?.state,
    exit_code: done?.exit_code,
    signal: done?.signal,
    output_bytes: done?.output_bytes,
  };
  seen.floodTail = await logs(flood, { limit_bytes: 5 });
  const first = await logs(flood, { offset: 0, limit_bytes: 3 });
  seen.floodFirstKept = first;
  seen.floodNext = await logs(flood, { offset: first.next_offset, limit_bytes: 2 });

  // Two started side by side: each its own id.
  seen.sideBySide = (await Promise.all([start('exit 0'), start('exit 0')])).sort();
  return seen;
}

const EXPECTED = {
  quiet: { text: 'ready\n', offset: 0, next_offset: 6, total_bytes: 6, dropped_bytes: 0 },
  quietList: [{ process_id: 'p1', state: 'running', exit_code: null, signal: null, output_bytes: 6 }],
  answered: { text: 'ready\ngot hi\n', offset: 0, next_offset: 13, total_bytes: 13, dropped_bytes: 0 },
  killed: { state: 'exited', exit_code: null, signal: 'SIGTERM', output_bytes: 13 },
  killedText:
    'Sent SIGTERM. Killed by SIGTERM. p1 exited (killed by SIGTERM), 13 bytes of output: echo ready; read line; ' +
    'echo "got $line"; exec sleep 1000.',
  killedListed: 'SIGTERM',
  sigkilled: { state: 'exited', exit_code: null, signal: 'SIGKILL' },
  flood: { state: 'exited', exit_code: 3, signal: null, output_bytes: 9 * MIB + 3 },
  floodTail: {
    text: 'aaEND',
    offset: 9 * MIB - 2,
    next_offset: 9 * MIB + 3,
    total_bytes: 9 * MIB + 3,
    dropped_bytes: 4 * MIB,
  },
  floodFirstKept: {
    text: 'aaa',
    offset: 4 * MIB,
    next_offset: 4 * MIB + 3,
    total_bytes: 9 * MIB + 3,
    dropped_bytes: 4 * MIB,
  },
  floodNext: {
    text: 'aa',
    offset: 4 * MIB + 3,
    next_offset: 4 * MIB + 5,
    total_bytes: 9 * MIB + 3,
    dropped_bytes: 4 * MIB,
  },
  sideBySide: ['p4', 'p5'],
};

wireDescribe.each(NODES)('background processes on E2B, server on %s', (_name, node) => {
  it('report output, stdin, the kept tail, byte counts, exit codes and kill as the local backend does', async () => {
    const wire = await startWire(node);
    try {
      expect(await scenario(await wire.connect())).toEqual(EXPECTED);
    } finally {
      await wire.stop();
    }
  });
});

describe('background processes on the local backend', () => {
  it('report the same for the same scenario', async () => {
    const server = await startServer({ env: { SANDBOX_BACKEND: 'local', MCP_AUTH_TOKENS: WIRE_TOKEN } });
    const client = await connectClient('v2', server.url, { token: WIRE_TOKEN });
    try {
      expect(await scenario(client)).toEqual(EXPECTED);
    } finally {
      await client.close();
      await server.stop();
    }
  });
});
