/**
 * Per-sandbox memory, process and CPU limits of the local backend (cgroups), through the built bundle and the
 * official client: a sandbox that outgrows its memory is killed and told so, the server and the other
 * sandboxes go on, a fork loop stops at the process limit, every sandboxed process is in its sandbox's groups,
 * and the groups go with the session. Needs a host where the server can make cgroups (root, a writable
 * cgroupfs): elsewhere the suite says so and is skipped; CI runs it as root, where it must run.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { cgroupParentsOf, removeCgroupsOf } from '../support/cgroups';
import { connectClient, textOf, type TestClient } from '../support/clients';
import { markedSleep, pollUntil, processesWithCmdline, SETTLE_MS } from '../support/processes';
import { makeSandboxRoot, startServer, stopAllServers, type StartedServer, workspacesIn } from '../support/server';
import { needs } from '../support/needs';

const TOKEN = 'e2e-limits-token-0123456789abcdef';
const MEMORY_MB = 128;
const MAX_PROCESSES = 32;
const CPUS = 0.5;

interface Limit {
  value: number | null;
  enforced_by: string;
}

needs('cgroups').describe('per-sandbox limits through cgroups', () => {
  let server: StartedServer;
  let client: TestClient;
  let other: TestClient;
  /** The parent groups the server logged at start-up (one per controller hierarchy under v1). */
  let parents: string[] = [];

  beforeAll(async () => {
    server = await startServer({
      env: {
        MCP_AUTH_TOKENS: TOKEN,
        LOCAL_SANDBOX_MEMORY_MB: String(MEMORY_MB),
        LOCAL_SANDBOX_MAX_PROCESSES: String(MAX_PROCESSES),
        LOCAL_SANDBOX_CPUS: String(CPUS),
      },
    });
    client = await connectClient('v2', server.url, { token: TOKEN });
    other = await connectClient('v2', server.url, { token: TOKEN });
    // The start-up line names what holds each limit and where the groups live.
    const line = await pollUntil(
      () => server.logs().find((l) => l.msg === 'sandbox limits'),
      (l) => l !== undefined,
      SETTLE_MS,
    );
    parents = String(line?.cgroups ?? '')
      .split(' ')
      .filter((p) => p.startsWith('/'));
  });
  afterAll(async () => {
    await client?.close();
    await other?.close();
    // Nothing of this suite stays, whatever failed above (stop() removes what a server left).
    await stopAllServers();
  });

  /** The host directories of the sandbox of `who`: found by a mark file in its workspace. */
  async function groupsOf(who: TestClient): Promise<string[]> {
    const mark = `mark-${Math.random().toString(36).slice(2)}`;
    expect((await who.callTool('write_file', { path: mark, content: '' })).isError).toBeFalsy();
    const workspace = workspacesIn(server.sandboxRoot).find((name) =>
      existsSync(join(server.sandboxRoot, name, 'home', mark)),
    );
    if (workspace === undefined) throw new Error('the workspace was not found');
    return parents.map((parent) => join(parent, workspace));
  }

  const title =
    'holds memory, processes and CPU in cgroups, and says so in /health, sandbox_status and the start-up log';
  it(title, async () => {
    expect(parents.length).toBeGreaterThan(0);
    // The start-up line is written as the probe finishes; /health says "probing" until its result is kept.
    type Limits = Record<string, { value: number | null; enforcedBy: string }>;
    type Health = { backend: { ready: boolean; limits: Limits } };
    const health = await pollUntil(
      async () => (await (await fetch(`${server.origin}/health`)).json()) as Health,
      (h) => h.backend.ready,
      SETTLE_MS,
    );
    const byCgroup = expect.stringMatching(/^cgroup v[12]$/);
    expect(health.backend.limits).toMatchObject({
      memory: { value: MEMORY_MB * 2 ** 20, enforcedBy: byCgroup },
      processes: { value: MAX_PROCESSES, enforcedBy: byCgroup },
      cpu: { value: CPUS, enforcedBy: byCgroup },
    });
    const status = await client.callTool('sandbox_status');
    const limits = (status.structuredContent as { limits: Record<string, Limit> }).limits;
    expect(limits).toMatchObject({
      memory_bytes: { value: MEMORY_MB * 2 ** 20, enforced_by: byCgroup },
      processes: { value: MAX_PROCESSES, enforced_by: byCgroup },
      cpus: { value: CPUS, enforced_by: byCgroup },
    });
    expect(textOf(status)).toMatch(
      /memory 128 MiB \(cgroup v[12]\), processes 32 \(cgroup v[12]\), CPU 0\.5 CPU \(cgroup v[12]\)/,
    );
  });

  it('puts every process of a sandbox in its groups, with the configured limits, before it runs', async () => {
    const groups = await groupsOf(client);
    const sleep = markedSleep(60);
    const started = await client.callTool('run_command', { command: sleep, background: true });
    const id = (started.structuredContent as { process_id: string }).process_id;
    const [found] = await pollUntil(
      () => processesWithCmdline(sleep),
      (list) => list.length > 0,
      SETTLE_MS,
    );
    expect(found).toBeDefined();
    for (const dir of groups) {
      expect(readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')).toContain(String(found?.pid));
    }
    const files = groups.flatMap((dir) => readdirSync(dir).map((name) => ({ name, path: join(dir, name) })));
    const value = (...names: string[]): string | undefined => {
      const file = files.find((f) => names.includes(f.name));
      return file === undefined ? undefined : readFileSync(file.path, 'utf8').trim();
    };
    expect(value('memory.limit_in_bytes', 'memory.max')).toBe(String(MEMORY_MB * 2 ** 20));
    expect(value('pids.max')).toBe(String(MAX_PROCESSES));
    expect(value('cpu.cfs_quota_us') ?? value('cpu.max')?.split(' ')[0]).toBe(String(CPUS * 100_000));
    // Swap is no way past the memory limit.
    const swap = value('memory.memsw.limit_in_bytes', 'memory.swap.max');
    if (swap !== undefined) expect(['0', String(MEMORY_MB * 2 ** 20)]).toContain(swap);
    await client.callTool('manage_process', { action: 'kill', process_id: id });
  });

  it(
    'kills a Python kernel that outgrows the memory limit, says so, and restarts it; the server and another ' +
      'sandbox go on',
    async () => {
      expect((await other.callTool('run_code', { code: 'kept = 42' })).isError).toBeFalsy();
      expect((await client.callTool('run_code', { code: 'before = 1' })).isError).toBeFalsy();

      const result = await client.callTool('run_code', { code: 'data = bytearray(3 * 2**30)' });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({
        state_lost: true,
        out_of_memory: { memory_limit_bytes: MEMORY_MB * 2 ** 20 },
        error: { name: 'KernelRestarted' },
      });
      expect(textOf(result)).toContain(
        "The interpreter was restarted because it ran out of memory (the sandbox's limit is 128 MiB, " +
          'LOCAL_SANDBOX_MEMORY_MB)',
      );

      const again = await client.callTool('run_code', { code: "'before' in globals(), 1 + 1" });
      expect(again.structuredContent).toMatchObject({
        results: [{ type: 'text', text: '(False, 2)' }],
        error: null,
        state_lost: false,
      });
      expect(again.structuredContent).not.toHaveProperty('out_of_memory');
      const kept = await other.callTool('run_code', { code: 'kept' });
      expect(kept.structuredContent).toMatchObject({ results: [{ type: 'text', text: '42' }], state_lost: false });
      expect((await fetch(`${server.origin}/health`)).status).toBe(200);
    },
  );

  it('reports a command killed for memory, and only that one', async () => {
    const result = await client.callTool('run_command', { command: 'python3 -c "bytearray(3 * 2**30)"' });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      exit_code: null,
      out_of_memory: { memory_limit_bytes: MEMORY_MB * 2 ** 20 },
    });
    expect(textOf(result)).toContain("Killed: out of memory (the sandbox's limit is 128 MiB, LOCAL_SANDBOX_MEMORY_MB)");
    expect(textOf(result)).toContain('Killed by SIGKILL.');

    const plain = await client.callTool('run_command', { command: 'exit 3' });
    expect(plain.isError).toBeFalsy();
    expect(plain.structuredContent).toMatchObject({ exit_code: 3 });
    expect(plain.structuredContent).not.toHaveProperty('out_of_memory');
  });

  it('stops a fork loop at the process limit (counted from inside)', async () => {
    const forks = [
      'import os, time',
      'children = []',
      'for _ in range(200):',
      '    try:',
      '        pid = os.fork()',
      '    except OSError:',
      '        break',
      '    if pid == 0:',
      '        time.sleep(120)',
      '        os._exit(0)',
      '    children.append(pid)',
      'print(len(children))',
      'for pid in children:',
      '    os.kill(pid, 9)',
      '    os.waitpid(pid, 0)',
    ].join('\n');
    const fresh = await connectClient('v2', server.url, { token: TOKEN });
    try {
      expect((await fresh.callTool('write_file', { path: 'forks.py', content: forks })).isError).toBeFalsy();
      const result = await fresh.callTool('run_command', { command: 'python3 forks.py' });
      expect(result.structuredContent).toMatchObject({ exit_code: 0 });
      const forked = Number((result.structuredContent as { stdout: string }).stdout.trim());
      // The loop ran (it forked some), and with its own process and the sandbox's launchers it stayed within the limit.
      expect(forked).toBeGreaterThanOrEqual(8);
      expect(forked).toBeLessThan(MAX_PROCESSES);
    } finally {
      await fresh.close();
    }
  });

  it('removes the sandbox’s groups when its session is deleted', async () => {
    const leaving = await connectClient('v2', server.url, { token: TOKEN });
    const groups = await groupsOf(leaving);
    expect(groups.length).toBeGreaterThan(0);
    expect((await leaving.callTool('run_command', { command: 'true' })).isError).toBeFalsy();
    for (const dir of groups) expect(existsSync(dir)).toBe(true);
    await leaving.terminate();
    for (const dir of groups) expect(existsSync(dir)).toBe(false);
  });

  it('leaves no group behind when the server stops', async () => {
    expect(parents.length).toBeGreaterThan(0);
    // Stopped as a user stops it (SIGTERM): its sandboxes end, and their groups with them, before it exits.
    server.child.kill('SIGTERM');
    await new Promise((resolve) => server.child.once('exit', resolve));
    for (const parent of parents) expect(existsSync(parent)).toBe(false);
  });

  it(
    'removes at start-up the empty groups a server killed outright left, and keeps those of a live server on ' +
      'another root',
    async () => {
      const root = makeSandboxRoot();
      const bystander = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
      try {
        const neighbour = await connectClient('v2', bystander.url, { token: TOKEN });
        expect((await neighbour.callTool('run_code', { code: 'alive = True' })).isError).toBeFalsy();
        const first = await startServer({ sandboxRoot: root, env: { MCP_AUTH_TOKENS: TOKEN } });
        const victim = await connectClient('v2', first.url, { token: TOKEN });
        expect((await victim.callTool('run_code', { code: 'x = 1' })).isError).toBeFalsy();
        const left = cgroupParentsOf(root).flatMap((parent) =>
          readdirSync(parent)
            .filter((name) => name.startsWith('mcp-sandbox-'))
            .map((name) => join(parent, name)),
        );
        expect(left.length).toBeGreaterThan(0);
        first.child.kill('SIGKILL');
        await new Promise((resolve) => first.child.once('exit', resolve));
        // Its sandbox dies with it (bubblewrap's --die-with-parent): the groups stay, empty.
        const emptied = await pollUntil(
          () => left.every((dir) => readFileSync(join(dir, 'cgroup.procs'), 'utf8').trim() === ''),
          Boolean,
          SETTLE_MS,
        );
        expect(emptied).toBe(true);
        await victim.close().catch(() => undefined);

        const second = await startServer({ sandboxRoot: root, env: { MCP_AUTH_TOKENS: TOKEN } });
        await pollUntil(() => second.logs().some((l) => l.msg === 'sandbox limits'), Boolean, SETTLE_MS);
        for (const dir of left) expect(existsSync(dir)).toBe(false);
        // The other server's sandbox (another root, another parent group) was not touched.
        expect((await neighbour.callTool('run_code', { code: 'alive' })).structuredContent).toMatchObject({
          results: [{ type: 'text', text: 'True' }],
          state_lost: false,
        });
        await neighbour.close();
        await second.stop();
      } finally {
        await bystander.stop();
        await removeCgroupsOf(root);
        rmSync(root, { recursive: true, force: true });
      }
      expect(cgroupParentsOf(root)).toEqual([]);
    },
  );
});
