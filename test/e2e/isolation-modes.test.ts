/**
 * The isolation modes of the local backend, exactly as the table in docs/security.md states them
 * (LOCAL_SANDBOX_ISOLATION: bwrap or none, the server root or not, and auto), through the built bundle and the official
 * client: what holds
 * in each mode, and what does not. The server runs as a user other than root through a wrapper given to
 * startServer as its `node` (setpriv), and without working bubblewrap through one that masks it in a mount
 * namespace of the server's own (unshare): the host's bubblewrap is never touched. Needs root (CI runs as root).
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';

import { removeCgroupsOf } from '../support/cgroups';
import { connectClient, textOf, type TestClient, type ToolResult } from '../support/clients';
import { removeRootWithDisks } from '../support/disks';
import {
  markedSleep,
  pollUntil,
  processesOfUid,
  processesWithCmdline,
  RUN_MARK,
  SETTLE_MS,
  waitUntilGone,
} from '../support/processes';
import {
  findFreePort,
  makeSandboxRoot,
  runServerToExit,
  startServer,
  stopAllServers,
  type StartedServer,
  workspacesIn,
} from '../support/server';
import { needs } from '../support/needs';

const TOKEN = 'e2e-isolation-token-0123456789abcdef';
const FILE_TOKEN = 'e2e-isolation-file-token-fedcba9876543210';
const SERVER_SECRET = 'e2e-isolation-server-only-secret';
const NAMESPACES = ['mnt', 'pid', 'ipc', 'uts', 'net'] as const;
/** Every variable a sandboxed process starts with (launch.ts); bash adds PWD, SHLVL and _ itself. */
const BASE_ENV = ['HOME', 'LANG', 'MPLBACKEND', 'PATH', 'PYTHONUNBUFFERED', 'TERM', 'TMPDIR', 'USER'];
/** What bubblewrap mounts at the sandbox's root: the system directories this host has, /home/user, /tmp, /proc,
 * /dev. */
const BWRAP_ROOT = [
  ...['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt']
    .filter((dir) => existsSync(dir))
    .map((dir) => dir.slice(1)),
  'home',
  'tmp',
  'proc',
  'dev',
].sort();
const RLIMIT_FSIZE = String(2 * 1024 * 1024 * 1024);
/** A file a sandbox writes in its /dev/shm (the host's, should isolation fail: removed after the tests). */
const SHM_MARK = `/dev/shm/mark-${RUN_MARK}`;

/** Root: to run the server as root, as another user, and in a mount namespace of its own. */
const describeAsRoot = needs('root').describe;
const describeWithBwrap = needs('root', 'bubblewrap').describe;

/** Users the server runs as in the "not root" rows: outside the sandbox users' range (100000 up), and this test
 * process's own. */
const SERVER_UID = 40_000 + (process.pid % 10_000) * 2;
const SERVER_UID_NONE = SERVER_UID + 1;

interface CommandOutput {
  exit_code: number | null;
  stdout: string;
  stderr: string;
}

const outputOf = (result: ToolResult): CommandOutput => result.structuredContent as unknown as CommandOutput;
const run = async (client: TestClient, command: string): Promise<CommandOutput> =>
  outputOf(await client.callTool('run_command', { command }));
const stdoutOf = async (client: TestClient, command: string): Promise<string> => (await run(client, command)).stdout;

/** The namespaces of the calling (host) process, as `mnt:[4026531841]`. */
const hostNamespaces = (): string[] => NAMESPACES.map((ns) => readlinkSync(`/proc/self/ns/${ns}`));
const NS_COMMAND = NAMESPACES.map((ns) => `readlink /proc/self/ns/${ns}`).join('; ');
const namespacesOf = async (client: TestClient): Promise<string[]> =>
  (await stdoutOf(client, NS_COMMAND)).trim().split('\n');

/** A limit's soft and hard values from /proc/<pid>/limits (e.g. "Max processes": ["512", "512"]). */
function limitOf(limits: string, name: string): string[] {
  const line = limits.split('\n').find((l) => l.startsWith(name));
  return (line ?? '').slice(name.length).trim().split(/\s+/).slice(0, 2);
}

/** The variables a sandboxed command starts with, less those bash sets itself. */
async function envNamesOf(client: TestClient): Promise<string[]> {
  const out = await stdoutOf(client, `python3 -c 'import os, json; print(json.dumps(sorted(os.environ)))'`);
  return (JSON.parse(out) as string[]).filter((name) => !['PWD', 'SHLVL', '_'].includes(name));
}

/** The command lines of every process a command of the sandbox can see in its /proc, one a line. */
const VISIBLE_PROCESSES = 'ps -e -ww -o args=';
/** Starts `command` detached from the command that starts it (its own session), and waits until it is. */
const DETACH = (command: string): string =>
  `setsid ${command} > /dev/null 2>&1 < /dev/null & pid=$!; while [ "$(ps -o sid= -p $pid | tr -d ' ')" != ` +
  `"$pid" ]; do sleep 0.05; done; echo started`;
const CONNECT = (port: number): string =>
  `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 2); print('connected')"`;

/** The server's token file as it should be, owner-only (0600) in a directory others may enter; `owner`: its uid. */
function makeTokenFile(owner?: number): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-isolation-tokens-'));
  chmodSync(dir, 0o755);
  const file = join(dir, 'tokens');
  writeFileSync(file, `${FILE_TOKEN}\n`, { mode: 0o600 });
  if (owner !== undefined) chownSync(file, owner, owner);
  return { dir, file };
}

/** A directory of host files the tests read from sandboxes: world-readable, owner-only, and world-writable. */
function makeHostFiles(parent: string): { dir: string; publicFile: string; privateFile: string; openDir: string } {
  const dir = mkdtempSync(join(parent, 'mcp-isolation-'));
  chmodSync(dir, 0o755);
  const publicFile = join(dir, 'public.txt');
  const privateFile = join(dir, 'private.txt');
  const openDir = join(dir, 'open');
  writeFileSync(publicFile, `public ${RUN_MARK}\n`, { mode: 0o644 });
  writeFileSync(privateFile, `private ${RUN_MARK}\n`, { mode: 0o600 });
  // Writable by every user (sticky, like /tmp): only a read-only mount keeps a sandbox from writing here.
  mkdirSync(openDir);
  chmodSync(openDir, 0o1777);
  return { dir, publicFile, privateFile, openDir };
}

/** A directory of wrappers startServer runs as its `node`: the bundle as another user, or without working
 * bubblewrap. */
let wrappers: string;
function wrapper(name: string, body: string): string {
  const file = join(wrappers, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}
/** Runs the bundle as `uid` (its own group, no others): a server that is not root. */
const asUser = (uid: number): string =>
  wrapper(
    `as-${uid}`,
    `exec /usr/bin/setpriv --reuid=${uid} --regid=${uid} --clear-groups -- ${process.execPath} "$@"`,
  );
/**
 * Runs the bundle (as root) in a mount namespace of its own where bwrap is /bin/false: bubblewrap does not work
 * there. On a host without bubblewrap there is nothing to mask: the bundle runs as it is.
 */
const withoutBwrap = (): string =>
  existsSync('/usr/bin/bwrap')
    ? wrapper(
        'without-bwrap',
        `exec /usr/bin/unshare --mount --propagation private -- /bin/sh -c 'mount --bind /bin/false /usr/bin/bwrap ` +
          `&& exec "$@"' sh ${process.execPath} "$@"`,
      )
    : process.execPath;

/** A LOCAL_SANDBOX_ROOT that `uid` owns (a server running as it must write there). */
function rootOwnedBy(uid: number): string {
  const root = mkdtempSync(join(tmpdir(), 'mcp-isolation-root-'));
  chownSync(root, uid, uid);
  chmodSync(root, 0o711);
  return root;
}

/** Kills what a server running as `uid` may have left (its sandboxes' processes run as it, outside any cgroup). */
function killProcessesOf(uid: number): void {
  for (const { pid } of processesOfUid(uid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

beforeAll(() => {
  wrappers = mkdtempSync(join(tmpdir(), 'mcp-isolation-wrappers-'));
  chmodSync(wrappers, 0o755);
});
afterAll(async () => {
  await stopAllServers();
  rmSync(wrappers, { recursive: true, force: true });
});

describeWithBwrap('bwrap, server as root (LOCAL_SANDBOX_ISOLATION unset: auto finds bubblewrap)', () => {
  let server: StartedServer;
  let a: TestClient;
  let b: TestClient;
  let host: ReturnType<typeof makeHostFiles>;
  /** A world-readable file in the host's /tmp. */
  let hostTmpFile: string;

  beforeAll(async () => {
    // Under /opt, which sandboxes see (read-only).
    host = makeHostFiles('/opt');
    hostTmpFile = join(tmpdir(), `mcp-isolation-host-tmp-${RUN_MARK}.txt`);
    writeFileSync(hostTmpFile, 'host tmp\n', { mode: 0o644 });
    server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
    a = await connectClient('v2', server.url, { token: TOKEN });
    b = await connectClient('v2', server.url, { token: TOKEN });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await stopAllServers();
    rmSync(host.dir, { recursive: true, force: true });
    rmSync(hostTmpFile, { force: true });
    rmSync(SHM_MARK, { force: true });
  });

  it('picks bubblewrap, and its start-up log and /health say which hardening this host allows', async () => {
    expect(await stdoutOf(a, 'echo started')).toBe('started\n');
    const status = await a.callTool('sandbox_status');
    expect(status.structuredContent).toMatchObject({ isolation: 'bwrap', network: 'disabled', workdir: '/home/user' });
    const health = (await (await fetch(`${server.origin}/health`)).json()) as { backend: Record<string, unknown> };
    expect(health.backend).toMatchObject({
      name: 'local',
      ready: true,
      isolation: 'bwrap',
      detail: expect.stringMatching(/nested user namespaces refused; seccomp filter on$/),
    });
    expect(server.logs()).toContainEqual(
      expect.objectContaining({
        msg: 'local sandbox isolation: bubblewrap',
        nested_user_namespaces: 'refused',
        seccomp: 'on',
        network: 'disabled',
      }),
    );
  });

  it(
    'gives each sandbox its own mount, pid, ipc, ' + 'uts and network namespaces, one set shared by all its processes',
    async () => {
      const hostNs = hostNamespaces();
      const ofA = await namespacesOf(a);
      const ofB = await namespacesOf(b);
      expect(ofA).toHaveLength(NAMESPACES.length);
      NAMESPACES.forEach((ns, i) => {
        expect(ofA[i]).toMatch(new RegExp(`^${ns}:\\[\\d+\\]$`));
        // Not the host's, and not the other sandbox's.
        expect(ofA[i]).not.toBe(hostNs[i]);
        expect(ofB[i]).not.toBe(hostNs[i]);
        expect(ofB[i]).not.toBe(ofA[i]);
      });
      // A later command, a background process and the Python kernel of the same sandbox: the same set.
      expect(await namespacesOf(a)).toEqual(ofA);
      await a.callTool('run_command', { command: `(${NS_COMMAND}) > bg-ns.txt`, background: true });
      const bg = await pollUntil(
        async () =>
          ((await a.callTool('read_file', { path: 'bg-ns.txt' })).structuredContent as { content?: string } | undefined)
            ?.content ?? '',
        (text) => text.split('\n').length > NAMESPACES.length,
        SETTLE_MS,
        100,
      );
      expect(bg.trim().split('\n')).toEqual(ofA);
      const kernel = await a.callTool('run_code', {
        code: `import os\nprint("\\n".join(os.readlink(f"/proc/self/ns/{n}") for n in ${JSON.stringify(NAMESPACES)}))`,
      });
      expect((kernel.structuredContent as { stdout: string }).stdout.trim().split('\n')).toEqual(ofA);
    },
  );

  it(
    'shows a sandbox no host process and no other sandbox’s; ' + 'its own processes see and signal one another',
    async () => {
      const mine = markedSleep(1201);
      const theirs = markedSleep(1202);
      const started = await a.callTool('run_command', { command: mine, background: true });
      const id = (started.structuredContent as { process_id: string }).process_id;
      await b.callTool('run_command', { command: theirs, background: true });
      await pollUntil(
        () => [...processesWithCmdline(mine), ...processesWithCmdline(theirs)],
        (list) => list.length >= 2,
        SETTLE_MS,
      );
      const seen = (await stdoutOf(a, VISIBLE_PROCESSES)).split('\n').filter((line) => line !== '');
      expect(seen.some((line) => line.includes(mine))).toBe(true);
      expect(seen.some((line) => line.includes(theirs))).toBe(false);
      expect(seen.some((line) => line.includes('dist/index.js') || line.includes('jest'))).toBe(false);
      // The host has many more processes than the few of this sandbox.
      expect(seen.length).toBeLessThan(10);
      const serverPid = server.child.pid ?? 0;
      expect(await stdoutOf(a, `kill -0 ${serverPid} 2>&1; echo "exit $?"`)).toMatch(/No such process\s+exit 1/);
      // A later command of the same sandbox finds its background process and ends it.
      const killed = await run(
        a,
        `for p in /proc/[0-9]*; do if tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q '^${mine} $'; then kill ` +
          `\${p#/proc/} && echo killed; fi; done`,
      );
      expect(killed.stdout).toBe('killed\n');
      expect(await waitUntilGone(() => processesWithCmdline(mine), SETTLE_MS)).toEqual([]);
      const listed = await a.callTool('manage_process', { action: 'list' });
      expect(listed.structuredContent?.processes).toEqual(
        expect.arrayContaining([expect.objectContaining({ process_id: id, state: 'exited' })]),
      );
      // The other sandbox's process was out of reach, and still runs.
      expect(processesWithCmdline(theirs)).toHaveLength(1);
      await b.callTool('manage_process', { action: 'kill', process_id: 'p1' });
    },
  );

  it('names the host `sandbox` (its own uts namespace)', async () => {
    expect(hostname()).not.toBe('sandbox');
    expect(await stdoutOf(a, 'cat /proc/sys/kernel/hostname; uname -n')).toBe('sandbox\nsandbox\n');
  });

  it(
    'mounts the system read-only: a write to /usr, /etc or /opt fails with EROFS, even into a directory every user ' +
      'may write',
    async () => {
      const targets = ['/usr', '/etc', '/opt', host.openDir].map((dir) => join(dir, `written-${RUN_MARK}`));
      const out = await stdoutOf(a, targets.map((file) => `touch ${file} 2>&1; echo "exit $?"`).join('; '));
      const lines = out.trim().split('\n');
      expect(lines).toHaveLength(targets.length * 2);
      for (let i = 0; i < targets.length; i += 1) {
        expect(lines[2 * i]).toMatch(/Read-only file system/);
        expect(lines[2 * i + 1]).toBe('exit 1');
      }
      for (const file of targets) expect(existsSync(file)).toBe(false);
    },
  );

  it('shows only the system directories, its own workspace at /home/user and its own /tmp', async () => {
    expect((await stdoutOf(a, 'ls -A /')).trim().split('\n').sort()).toEqual(BWRAP_ROOT);
    expect(await stdoutOf(a, 'ls -A /home')).toBe('user\n');
    // Nothing of the host's /tmp, of LOCAL_SANDBOX_ROOT, or of the other sandbox's workspace and /tmp.
    await a.callTool('write_file', { path: 'a-only.txt', content: 'a' });
    const aHome = readdirSync(server.sandboxRoot)
      .map((name) => join(server.sandboxRoot, name, 'home'))
      .find((home) => existsSync(join(home, 'a-only.txt')));
    expect(aHome).toBeDefined();
    expect((await run(a, `echo a > /tmp/a-tmp-${RUN_MARK}; ls /tmp`)).stdout).toBe(`a-tmp-${RUN_MARK}\n`);
    const fromB = await run(b, `cat ${hostTmpFile}; ls ${server.sandboxRoot}; cat ${aHome}/a-only.txt; ls /tmp`);
    expect(fromB.stdout).toBe('');
    expect(fromB.stderr.match(/No such file or directory/g)).toHaveLength(3);
    expect(existsSync(join(tmpdir(), `a-tmp-${RUN_MARK}`))).toBe(false);
  });

  it(
    'can read world-readable host files (not what only their owner may read): ' + '/etc/os-release, a file under /opt',
    async () => {
      expect(await stdoutOf(a, 'cat /etc/os-release')).toBe(readFileSync('/etc/os-release', 'utf8'));
      const read = await run(a, `cat ${host.publicFile}; cat ${host.privateFile}`);
      expect(read.stdout).toBe(`public ${RUN_MARK}\n`);
      expect(read.stderr).toMatch(/Permission denied/);
    },
  );

  it(
    'runs each sandbox as a user of its own, with the rlimits: ' + '512 processes, 4096 open files, 2 GiB per file',
    async () => {
      const [uidA, uidB] = await Promise.all(
        [a, b].map(async (client) => Number((await stdoutOf(client, 'id -u')).trim())),
      );
      expect(uidA).toBeGreaterThanOrEqual(100_000);
      expect(uidB).toBeGreaterThanOrEqual(100_000);
      expect(uidA).not.toBe(uidB);
      // The supervisor, the parent of every command, runs as that user too.
      expect(await stdoutOf(a, 'cat /proc/$PPID/comm; stat -c %u /proc/$PPID')).toBe(`sandbox-init\n${uidA}\n`);
      const limits = await stdoutOf(a, 'cat /proc/self/limits');
      expect(limitOf(limits, 'Max processes')).toEqual(['512', '512']);
      expect(limitOf(limits, 'Max open files')).toEqual(['4096', '4096']);
      expect(limitOf(limits, 'Max file size')).toEqual([RLIMIT_FSIZE, RLIMIT_FSIZE]);
    },
  );

  it(
    'keeps what lives only in its namespaces (/dev/shm, a setsid process) until its supervisor goes, and never on ' +
      'the host',
    async () => {
      const detached = markedSleep(1203);
      const started = await run(a, `echo kept > ${SHM_MARK}; ${DETACH(detached)}`);
      expect(started).toMatchObject({ exit_code: 0, stdout: 'started\n' });
      // The command ended; what it detached runs on, and the in-memory file is there for the sandbox's later commands
      // only.
      expect(
        await pollUntil(
          () => processesWithCmdline(detached),
          (list) => list.length > 0,
          SETTLE_MS,
        ),
      ).toHaveLength(1);
      expect(await stdoutOf(a, `cat ${SHM_MARK}`)).toBe('kept\n');
      expect(existsSync(SHM_MARK)).toBe(false);
      expect((await run(b, `cat ${SHM_MARK}`)).stderr).toMatch(/No such file/);
      // Its supervisor (the parent of every command) killed: all of it goes, and the next call starts afresh.
      await run(a, 'kill -9 $PPID');
      expect(await waitUntilGone(() => processesWithCmdline(detached), SETTLE_MS)).toEqual([]);
      const after = await run(a, `cat ${SHM_MARK}; echo next`);
      expect(after.stdout).toBe('next\n');
      expect(after.stderr).toMatch(/No such file/);
    },
  );
});

describeWithBwrap('bwrap, server not root (the server runs as an unprivileged user)', () => {
  let root: string;
  let server: StartedServer;
  let a: TestClient;
  let b: TestClient;
  let hostTmpFile: string;
  let host: ReturnType<typeof makeHostFiles>;

  beforeAll(async () => {
    host = makeHostFiles('/opt');
    hostTmpFile = join(tmpdir(), `mcp-isolation-host-tmp-nr-${RUN_MARK}.txt`);
    writeFileSync(hostTmpFile, 'host tmp\n', { mode: 0o644 });
    root = rootOwnedBy(SERVER_UID);
    // A disk limit asked for: images need root, so nothing holds it here.
    server = await startServer({
      node: asUser(SERVER_UID),
      sandboxRoot: root,
      env: { MCP_AUTH_TOKENS: TOKEN, HOME: '/tmp', LOCAL_SANDBOX_DISK_MB: '64' },
    });
    a = await connectClient('v2', server.url, { token: TOKEN });
    b = await connectClient('v2', server.url, { token: TOKEN });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await stopAllServers();
    killProcessesOf(SERVER_UID);
    rmSync(root, { recursive: true, force: true });
    rmSync(host.dir, { recursive: true, force: true });
    rmSync(hostTmpFile, { force: true });
  });

  it('runs the server as that user', () => {
    expect(processesOfUid(SERVER_UID).map((p) => p.pid)).toContain(server.child.pid);
  });

  it(
    'holds the same namespaces and mounts: its own namespaces, hostname, read-only system, /home/user, /tmp, no ' +
      'network',
    async () => {
      expect(await stdoutOf(a, 'echo started')).toBe('started\n');
      expect((await a.callTool('sandbox_status')).structuredContent).toMatchObject({
        isolation: 'bwrap',
        network: 'disabled',
        workdir: '/home/user',
      });
      const hostNs = hostNamespaces();
      const [ofA, ofB] = await Promise.all([namespacesOf(a), namespacesOf(b)]);
      NAMESPACES.forEach((_, i) => {
        expect(ofA[i]).not.toBe(hostNs[i]);
        expect(ofB[i]).not.toBe(ofA[i]);
      });
      expect(await stdoutOf(a, 'cat /proc/sys/kernel/hostname')).toBe('sandbox\n');
      expect((await stdoutOf(a, 'ls -A /')).trim().split('\n').sort()).toEqual(BWRAP_ROOT);
      const written = await run(a, `touch /usr/x-${RUN_MARK} ${host.openDir}/x-${RUN_MARK}`);
      expect(written.stderr.match(/Read-only file system/g)).toHaveLength(2);
      expect(existsSync(join(host.openDir, `x-${RUN_MARK}`))).toBe(false);
      expect((await run(a, `cat ${hostTmpFile}`)).stderr).toMatch(/No such file/);
      const seen = (await stdoutOf(a, VISIBLE_PROCESSES)).split('\n').filter((line) => line !== '');
      expect(seen.some((line) => line.includes('dist/index.js'))).toBe(false);
      const connected = await run(a, CONNECT(server.port));
      expect(connected.stdout).toBe('');
      expect(connected.exit_code).not.toBe(0);
    },
  );

  it(
    'runs the sandbox as the server’s user (in a user namespace), ' + 'with no process-count limit per sandbox',
    async () => {
      const [uidA, uidB] = await Promise.all(
        [a, b].map(async (client) => Number((await stdoutOf(client, 'id -u')).trim())),
      );
      expect([uidA, uidB]).toEqual([SERVER_UID, SERVER_UID]);
      // One uid mapped, in a user namespace of its own (the host's maps all of them): that namespace is what separates
      // it.
      const map = (await stdoutOf(a, 'cat /proc/self/uid_map')).trim();
      expect(map).not.toBe(readFileSync('/proc/self/uid_map', 'utf8').trim());
      expect(map.split(/\s+/).filter((_, i) => i !== 1)).toEqual([String(SERVER_UID), '1']);
      const limits = await stdoutOf(a, 'cat /proc/self/limits');
      // RLIMIT_NPROC as the server has it (it would count the server user's processes): not the sandbox's 512.
      expect(limitOf(limits, 'Max processes')).toEqual(
        limitOf(readFileSync(`/proc/${server.child.pid}/limits`, 'utf8'), 'Max processes'),
      );
      expect(limitOf(limits, 'Max processes')).not.toEqual(['512', '512']);
      // No cgroup either: memory per process only (RLIMIT_DATA), and nothing holds processes or CPU.
      expect(limitOf(limits, 'Max data size')).toEqual([String(2 ** 30), String(2 ** 30)]);
      const status = (await a.callTool('sandbox_status')).structuredContent as {
        limits: Record<string, { value: number | null; enforced_by: string }>;
      };
      expect(status.limits).toMatchObject({
        memory_bytes: { value: 2 ** 30, enforced_by: 'rlimit' },
        processes: { value: null, enforced_by: 'none' },
        cpus: { value: null, enforced_by: 'none' },
        disk_bytes: { value: null, enforced_by: expect.stringMatching(/^none \(.+\)$/) },
      });
      expect(server.logs()).toContainEqual(
        expect.objectContaining({
          level: 'warn',
          msg: expect.stringContaining('without part of their resource limits'),
          unlimited: 'processes cpu',
        }),
      );
    },
  );
});

describeAsRoot('none, server as root', () => {
  let server: StartedServer;
  let a: TestClient;
  let b: TestClient;
  let host: ReturnType<typeof makeHostFiles>;
  let tokenDir: string;
  let tokenFile: string;

  beforeAll(async () => {
    host = makeHostFiles(tmpdir());
    ({ dir: tokenDir, file: tokenFile } = makeTokenFile());
    server = await startServer({
      env: {
        MCP_AUTH_TOKENS: TOKEN,
        MCP_AUTH_TOKEN_FILE: tokenFile,
        LOCAL_SANDBOX_ISOLATION: 'none',
        ISOLATION_TEST_SECRET: SERVER_SECRET,
      },
    });
    a = await connectClient('v2', server.url, { token: TOKEN });
    b = await connectClient('v2', server.url, { token: TOKEN });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await stopAllServers();
    rmSync(host.dir, { recursive: true, force: true });
    rmSync(tokenDir, { recursive: true, force: true });
  });

  it('refuses a world-readable MCP_AUTH_TOKEN_FILE at start-up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-isolation-readable-'));
    try {
      const file = join(dir, 'tokens');
      writeFileSync(file, `${FILE_TOKEN}\n`, { mode: 0o644 });
      const refused = await runServerToExit({
        MCP_AUTH_TOKEN_FILE: file,
        LOCAL_SANDBOX_ISOLATION: 'none',
        LOCAL_SANDBOX_ROOT: dir,
      });
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/MCP_AUTH_TOKEN_FILE is readable by every user.*chmod 600/);
      expect(refused.stdout).not.toContain('"msg":"listening"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it(
    'runs each sandbox as a user of its own: ' + 'it cannot read the server’s token file nor signal the server',
    async () => {
      const [uidA, uidB] = await Promise.all(
        [a, b].map(async (client) => Number((await stdoutOf(client, 'id -u')).trim())),
      );
      expect(uidA).toBeGreaterThanOrEqual(100_000);
      expect(uidA).not.toBe(uidB);
      expect((await a.callTool('sandbox_status')).structuredContent).toMatchObject({
        isolation: 'none',
        network: 'host',
      });
      const tried = await run(
        a,
        `cat ${tokenFile}; kill -0 ${server.child.pid ?? 0}; cat /proc/${server.child.pid ?? 0}/environ`,
      );
      expect(tried.stdout).toBe('');
      expect(tried.stderr).toMatch(/Permission denied[\s\S]*Operation not permitted[\s\S]*Permission denied/);
      expect(JSON.stringify(tried)).not.toContain(FILE_TOKEN);
      // Nor another sandbox's processes, which it can see (no pid namespace).
      const theirs = markedSleep(1205);
      await b.callTool('run_command', { command: theirs, background: true });
      const [found] = await pollUntil(
        () => processesWithCmdline(theirs),
        (list) => list.length > 0,
        SETTLE_MS,
      );
      expect(found?.uid).toBe(uidB);
      const signalled = await run(a, `ps -p ${found?.pid} -o args=; kill -9 ${found?.pid}`);
      expect(signalled.stdout).toBe(`${theirs}\n`);
      expect(signalled.stderr).toMatch(/Operation not permitted/);
      expect(processesWithCmdline(theirs)).toHaveLength(1);
      await b.callTool('manage_process', { action: 'kill', process_id: 'p1' });
    },
  );

  it('gives every process the rlimits and a minimal environment, nothing of the server’s', async () => {
    const limits = await stdoutOf(a, 'cat /proc/self/limits');
    expect(limitOf(limits, 'Max processes')).toEqual(['512', '512']);
    expect(limitOf(limits, 'Max open files')).toEqual(['4096', '4096']);
    expect(limitOf(limits, 'Max file size')).toEqual([RLIMIT_FSIZE, RLIMIT_FSIZE]);
    expect(await envNamesOf(a)).toEqual(BASE_ENV);
    expect(await stdoutOf(a, 'env')).not.toMatch(new RegExp(`${TOKEN}|${SERVER_SECRET}|LOCAL_SANDBOX|MCP_`));
  });

  it(
    'has no mount or network isolation: the host’s namespaces, ' + 'files and network, with that user’s rights',
    async () => {
      const hostNs = hostNamespaces();
      const ofA = await namespacesOf(a);
      expect(ofA[NAMESPACES.indexOf('mnt')]).toBe(hostNs[NAMESPACES.indexOf('mnt')]);
      expect(ofA[NAMESPACES.indexOf('net')]).toBe(hostNs[NAMESPACES.indexOf('net')]);
      expect(await stdoutOf(a, 'hostname')).toBe(`${hostname()}\n`);
      // Anything on the host its user may read, in the host's /tmp too; not what only its owner may read.
      const read = await run(a, `cat ${host.publicFile}; cat ${host.privateFile}`);
      expect(read.stdout).toBe(`public ${RUN_MARK}\n`);
      expect(read.stderr).toMatch(/Permission denied/);
      expect(await stdoutOf(a, `ls -d ${server.sandboxRoot}`)).toBe(`${server.sandboxRoot}\n`);
      // Anything its user may write, where the host keeps it: no read-only system, no private /dev/shm or /var/tmp.
      const written = ['/dev/shm', '/var/tmp', host.openDir].map((dir) => join(dir, `none-${RUN_MARK}`));
      try {
        expect(await run(a, `touch ${written.join(' ')} && echo written`)).toMatchObject({
          exit_code: 0,
          stdout: 'written\n',
        });
        for (const file of written) expect(existsSync(file)).toBe(true);
      } finally {
        for (const file of written) rmSync(file, { force: true });
      }
      expect((await run(a, `touch /usr/none-${RUN_MARK}`)).stderr).toMatch(/Permission denied/);
      expect(await stdoutOf(a, CONNECT(server.port))).toBe('connected\n');
    },
  );

  it(
    'ends every process of the sandbox’s user with the session (a setsid one too) ' + 'and deletes its workspace',
    async () => {
      const leaving = await connectClient('v2', server.url, { token: TOKEN });
      const before = workspacesIn(server.sandboxRoot);
      const detached = markedSleep(1204);
      expect(await run(leaving, DETACH(detached))).toMatchObject({ stdout: 'started\n' });
      const uid = Number((await stdoutOf(leaving, 'id -u')).trim());
      const ws = workspacesIn(server.sandboxRoot).filter((name) => !before.includes(name));
      expect(ws).toHaveLength(1);
      expect(
        await pollUntil(
          () => processesWithCmdline(detached),
          (list) => list.length > 0,
          SETTLE_MS,
        ),
      ).toHaveLength(1);
      await leaving.terminate();
      expect(await waitUntilGone(() => processesOfUid(uid), SETTLE_MS)).toEqual([]);
      expect(existsSync(join(server.sandboxRoot, ws[0] ?? ''))).toBe(false);
    },
  );
});

describeAsRoot('none, server not root', () => {
  let root: string;
  let server: StartedServer;
  let client: TestClient;
  let tokenDir: string;
  let tokenFile: string;

  beforeAll(async () => {
    root = rootOwnedBy(SERVER_UID_NONE);
    // The server's own token file, as it should be: its user's only (0600).
    ({ dir: tokenDir, file: tokenFile } = makeTokenFile(SERVER_UID_NONE));
    server = await startServer({
      node: asUser(SERVER_UID_NONE),
      sandboxRoot: root,
      env: {
        MCP_AUTH_TOKEN_FILE: tokenFile,
        LOCAL_SANDBOX_ISOLATION: 'none',
        HOME: '/tmp',
        ISOLATION_TEST_SECRET: SERVER_SECRET,
      },
    });
    client = await connectClient('v2', server.url, { token: FILE_TOKEN });
  });
  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await stopAllServers();
    killProcessesOf(SERVER_UID_NONE);
    rmSync(root, { recursive: true, force: true });
    rmSync(tokenDir, { recursive: true, force: true });
  });

  it('is refused at start-up on a non-loopback address and on FC', async () => {
    const env = { MCP_AUTH_TOKENS: TOKEN, LOCAL_SANDBOX_ISOLATION: 'none', HOME: '/tmp' };
    await expect(
      startServer({ node: asUser(SERVER_UID_NONE), sandboxRoot: root, env: { ...env, HOST: '0.0.0.0' } }),
    ).rejects.toThrow(/LOCAL_SANDBOX_ISOLATION=none runs sandbox code as the server's own user.*refused on 0\.0\.0\.0/);
    const port = await findFreePort();
    await expect(
      startServer({
        node: asUser(SERVER_UID_NONE),
        sandboxRoot: root,
        env: { ...env, FC_FUNCTION_NAME: 'isolation', FC_CUSTOM_LISTEN_PORT: String(port) },
      }),
    ).rejects.toThrow(/refused on FC/);
  });

  it('gives rlimits and a minimal environment only: no process-count limit, no user of its own', async () => {
    const limits = await stdoutOf(client, 'cat /proc/self/limits');
    expect((await client.callTool('sandbox_status')).structuredContent).toMatchObject({
      isolation: 'none',
      network: 'host',
    });
    expect(limitOf(limits, 'Max open files')).toEqual(['4096', '4096']);
    expect(limitOf(limits, 'Max file size')).toEqual([RLIMIT_FSIZE, RLIMIT_FSIZE]);
    expect(limitOf(limits, 'Max processes')).toEqual(
      limitOf(readFileSync(`/proc/${server.child.pid}/limits`, 'utf8'), 'Max processes'),
    );
    expect(limitOf(limits, 'Max processes')).not.toEqual(['512', '512']);
    expect(await envNamesOf(client)).toEqual(BASE_ENV);
    expect(Number((await stdoutOf(client, 'id -u')).trim())).toBe(SERVER_UID_NONE);
  });

  it('runs sandbox code as the server’s user: it reads the server’s own files and stops it', async () => {
    const pid = server.child.pid ?? 0;
    const read = await run(client, `cat ${tokenFile}; tr '\\0' '\\n' < /proc/${pid}/environ`);
    expect(read.stdout).toContain(FILE_TOKEN);
    expect(read.stdout).toContain(`ISOLATION_TEST_SECRET=${SERVER_SECRET}`);
    expect(server.child.exitCode).toBeNull();
    const exited = new Promise<unknown>((resolve) =>
      server.child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    const stopped = client.callTool('run_command', { command: `kill -KILL ${pid}` }).then(
      () => 'answered',
      () => 'no answer',
    );
    expect(await exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await stopped).toBe('no answer');
  });
});

describeAsRoot('auto (the default) without working bubblewrap', () => {
  afterEach(stopAllServers);

  it('falls back to none with a warning on a loopback-only server', async () => {
    const server = await startServer({ node: withoutBwrap(), env: { MCP_AUTH_TOKENS: TOKEN } });
    const client = await connectClient('v2', server.url, { token: TOKEN });
    const ran = await run(client, 'echo ran; id -u');
    expect(ran.stdout).toMatch(/^ran\n\d+\n$/);
    // The user of its own stays (the server is root); the isolation does not.
    expect(Number(ran.stdout.split('\n')[1])).toBeGreaterThanOrEqual(100_000);
    expect((await client.callTool('sandbox_status')).structuredContent).toMatchObject({
      isolation: 'none',
      network: 'host',
    });
    // The host's network (the server's mount namespace is the wrapper's own here).
    expect((await namespacesOf(client))[NAMESPACES.indexOf('net')]).toBe(hostNamespaces()[NAMESPACES.indexOf('net')]);
    expect(server.logs()).toContainEqual(
      expect.objectContaining({ level: 'warn', msg: expect.stringContaining('NOT a security boundary') }),
    );
    await client.close();
  });

  it.each([
    ['a non-loopback address', (): Record<string, string> => ({ HOST: '0.0.0.0' })],
    [
      'FC',
      (port: number): Record<string, string> => ({
        FC_FUNCTION_NAME: 'isolation',
        FC_CUSTOM_LISTEN_PORT: String(port),
      }),
    ],
  ])('refuses to run sandbox code on %s: /health is degraded and every call says why', async (_where, placement) => {
    const port = await findFreePort();
    const server = await startServer({ node: withoutBwrap(), env: { MCP_AUTH_TOKENS: TOKEN, ...placement(port) } });
    const client = await connectClient('v2', server.url, { token: TOKEN });
    const refused = await client.callTool('run_command', { command: `echo ran > /tmp/ran-${RUN_MARK}` });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(
      /bubblewrap does not work here.*sandbox code is not run without isolation.*LOCAL_SANDBOX_ISOLATION=none/,
    );
    expect(existsSync(`/tmp/ran-${RUN_MARK}`)).toBe(false);
    expect(workspacesIn(server.sandboxRoot)).toEqual([]);
    const health = (await (await fetch(`${server.origin}/health`)).json()) as {
      status: string;
      backend: Record<string, unknown>;
    };
    expect(health).toMatchObject({
      status: 'degraded',
      backend: {
        name: 'local',
        ready: false,
        detail: expect.stringMatching(/^bubblewrap does not work here .*LOCAL_SANDBOX_ISOLATION=none/),
      },
    });
    expect(server.logs()).toContainEqual(
      expect.objectContaining({ level: 'error', msg: expect.stringContaining('local sandbox refused') }),
    );
    await client.close();
  });

  it('runs unisolated on a non-loopback address when none is set on purpose', async () => {
    const server = await startServer({
      node: withoutBwrap(),
      env: { MCP_AUTH_TOKENS: TOKEN, HOST: '0.0.0.0', LOCAL_SANDBOX_ISOLATION: 'none' },
    });
    const client = await connectClient('v2', server.url, { token: TOKEN });
    expect(await run(client, 'echo ran')).toMatchObject({ exit_code: 0, stdout: 'ran\n' });
    expect((await client.callTool('sandbox_status')).structuredContent).toMatchObject({ isolation: 'none' });
    await client.close();
  });
});

needs('root', 'bubblewrap', 'disk images', 'cgroups').describe(
  'the limits at work (root: cgroups and a disk image per sandbox)',
  () => {
    const MIB = 2 ** 20;
    let root: string;
    let server: StartedServer;
    let a: TestClient;
    let b: TestClient;
    /** The host directory of `client`'s workspace (found by a file it writes). */
    async function workspaceOf(client: TestClient): Promise<string> {
      const mark = `mark-${Math.random().toString(36).slice(2)}`;
      expect((await client.callTool('write_file', { path: mark, content: '' })).isError).toBeFalsy();
      const name = workspacesIn(root).find((ws) => existsSync(join(root, ws, 'home', mark)));
      if (name === undefined) throw new Error('the workspace was not found');
      return join(root, name);
    }

    beforeAll(async () => {
      root = makeSandboxRoot();
      server = await startServer({
        sandboxRoot: root,
        env: {
          MCP_AUTH_TOKENS: TOKEN,
          LOCAL_SANDBOX_MAX_PROCESSES: '16',
          LOCAL_SANDBOX_CPUS: '0.1',
          LOCAL_SANDBOX_DISK_MB: '32',
        },
      });
      a = await connectClient('v2', server.url, { token: TOKEN });
      b = await connectClient('v2', server.url, { token: TOKEN });
    });
    afterAll(async () => {
      // DELETE unmounts and removes each image; what a failed test left goes below.
      await a?.terminate().catch(() => undefined);
      await b?.terminate().catch(() => undefined);
      await stopAllServers();
      await removeCgroupsOf(root);
      removeRootWithDisks(root);
    });

    it('fails fork with EAGAIN at the process limit, inside that sandbox only', async () => {
      const holder = [
        'import errno, os, time',
        'count, err = 0, None',
        'while True:',
        '    try:',
        '        pid = os.fork()',
        '    except OSError as e:',
        '        err = e',
        '        break',
        '    if pid == 0:',
        '        time.sleep(120)',
        '        os._exit(0)',
        '    count += 1',
        'open("forks.txt", "w").write(f"{errno.errorcode[err.errno]} {err.strerror} {count}")',
        'time.sleep(120)',
      ].join('\n');
      await a.callTool('write_file', { path: 'hold.py', content: holder });
      const started = await a.callTool('run_command', { command: 'python3 hold.py', background: true });
      const id = (started.structuredContent as { process_id: string }).process_id;
      try {
        const said = await pollUntil(
          async () =>
            (
              (await a.callTool('read_file', { path: 'forks.txt' })).structuredContent as
                | { content?: string }
                | undefined
            )?.content ?? '',
          (text) => text !== '',
          SETTLE_MS,
          100,
        );
        expect(said).toMatch(/^EAGAIN Resource temporarily unavailable \d+$/);
        expect(Number(said.split(' ').pop())).toBeLessThan(16);
        // While that sandbox is at its limit, the other one forks as it likes.
        expect(await run(b, 'for i in 1 2 3 4 5 6 7 8; do sleep 0.2 & done; wait; echo forked')).toMatchObject({
          exit_code: 0,
          stdout: 'forked\n',
        });
      } finally {
        await a.callTool('manage_process', { action: 'kill', process_id: id });
      }
      expect(await run(a, 'echo back')).toMatchObject({ exit_code: 0, stdout: 'back\n' });
    });

    it('counts threads against the process limit', async () => {
      const threads = [
        'import threading',
        'stop = threading.Event()',
        'started = 0',
        'try:',
        '    for _ in range(40):',
        '        threading.Thread(target=stop.wait, daemon=True).start()',
        '        started += 1',
        'except RuntimeError as e:',
        '    print(e)',
        'print(started)',
        'stop.set()',
      ].join('\n');
      await a.callTool('write_file', { path: 'threads.py', content: threads });
      const out = await run(a, 'python3 threads.py');
      expect(out.exit_code).toBe(0);
      const [said, count] = out.stdout.trim().split('\n');
      expect(said).toMatch(/can't start new thread/);
      expect(Number(count)).toBeLessThan(16);
    });

    it('throttles a busy sandbox to its CPU share (its group counts throttled periods) and kills nothing', async () => {
      const line = server.logs().find((l) => l.msg === 'sandbox limits');
      const parents = String(line?.cgroups ?? '')
        .split(' ')
        .filter((p) => p.startsWith('/'));
      const workspace = (await workspaceOf(a)).split('/').pop() ?? '';
      const group = parents
        .map((parent) => join(parent, workspace))
        .find((dir) => existsSync(join(dir, 'cpu.cfs_quota_us')) || existsSync(join(dir, 'cpu.max')));
      expect(group).toBeDefined();
      const throttled = (): number =>
        Number(/^nr_throttled (\d+)$/m.exec(readFileSync(join(group ?? '', 'cpu.stat'), 'utf8'))?.[1] ?? NaN);
      const before = throttled();
      // About 0.3 s of CPU: at 0.1 CPU per 100 ms period it runs over many periods, held back in each.
      expect(await run(a, 'python3 -c "sum(range(10**7))" && echo done')).toMatchObject({
        exit_code: 0,
        stdout: 'done\n',
      });
      expect(throttled()).toBeGreaterThan(before);
    });

    it(
      'mounts each workspace from its image nosuid, nodev and discard, no blocks kept for root, with a journal, ' +
        'the server’s own files inside',
      async () => {
        const dir = await workspaceOf(b);
        const image = join(root, '.disks', `${dir.split('/').pop() ?? ''}.img`);
        const mount = readFileSync('/proc/self/mountinfo', 'utf8')
          .split('\n')
          .map((l) => l.split(' '))
          .find((fields) => fields[4] === dir);
        expect(mount).toBeDefined();
        const [options, superOptions] = [mount?.[5] ?? '', mount?.slice(mount.indexOf('-') + 3).join(' ') ?? ''];
        expect(options.split(',')).toEqual(expect.arrayContaining(['nosuid', 'nodev']));
        expect(superOptions).toMatch(/\bdiscard\b/);
        const fs = execFileSync('tune2fs', ['-l', image], { encoding: 'utf8' });
        expect(fs).toMatch(/^Reserved block count:\s+0$/m);
        expect(fs).toMatch(/^Filesystem features:.*\bhas_journal\b/m);
        // The uid record and background logs count against the same limit: they are on the image.
        await b.callTool('run_command', { command: 'echo logged', background: true });
        const logs = await pollUntil(() => existsSync(join(dir, 'processes')), Boolean, SETTLE_MS);
        expect(logs).toBe(true);
        const device = statSync(join(dir, 'home')).dev;
        expect(device).not.toBe(statSync(root).dev);
        expect([statSync(join(dir, 'uid')).dev, statSync(join(dir, 'processes')).dev]).toEqual([device, device]);
      },
    );

    it('gives the host back the blocks of deleted files (discard)', async () => {
      const dir = await workspaceOf(b);
      const image = join(root, '.disks', `${dir.split('/').pop() ?? ''}.img`);
      const allocated = (): number => statSync(image).blocks * 512;
      const before = allocated();
      expect(await run(b, 'head -c 12M /dev/urandom > big && sync && echo written')).toMatchObject({
        stdout: 'written\n',
      });
      expect(allocated()).toBeGreaterThanOrEqual(before + 12 * MIB);
      expect(await run(b, 'rm big && sync && echo deleted')).toMatchObject({ stdout: 'deleted\n' });
      expect(await pollUntil(allocated, (bytes) => bytes < before + 4 * MIB, SETTLE_MS, 200)).toBeLessThan(
        before + 4 * MIB,
      );
    });
  },
);
