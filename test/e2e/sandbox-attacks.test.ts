/**
 * Attacks on the local sandbox's boundary from code running inside it, through the built bundle and the
 * official client: the server (root in CI, bubblewrap, a user per sandbox) must never read, list or delete a
 * path the sandbox controls with its own rights. The victim is another session's workspace on the same host.
 */
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { connectClient, type TestClient } from '../support/clients';
import {
  runServerToExit,
  startServer,
  stopAllServers,
  type StartedServer,
  uidClaimsIn,
  workspacesIn,
} from '../support/server';
import { needs } from '../support/needs';

const TOKEN = 'e2e-attack-token-0123456789abcdef';
const VICTIM_MARK = 'victim-only-entry';

interface Listed {
  entries: Array<{ path: string }>;
}

describe('the local sandbox under attack from inside', () => {
  let server: StartedServer;
  let attacker: TestClient;
  let victim: TestClient;
  /** The victim's working directory on the host. */
  let victimHome: string;

  beforeAll(async () => {
    server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
    attacker = await connectClient('v2', server.url, { token: TOKEN });
    victim = await connectClient('v2', server.url, { token: TOKEN });
    expect(
      (await victim.callTool('write_file', { path: `${VICTIM_MARK}/Main.java`, content: 'the victim’s source' }))
        .isError,
    ).toBeFalsy();
    const workspace = readdirSync(server.sandboxRoot).find((name) =>
      existsSync(join(server.sandboxRoot, name, 'home', VICTIM_MARK)),
    );
    if (workspace === undefined) throw new Error('the victim’s workspace was not found');
    victimHome = join(server.sandboxRoot, workspace, 'home');
  });
  afterAll(async () => {
    await attacker?.close();
    await victim?.close();
    await stopAllServers();
  });

  it(
    'list_files never lists another workspace through a ' + 'directory swapped for a symlink (RENAME_EXCHANGE)',
    async () => {
      const swap = [
        'import ctypes, os, time',
        'os.makedirs("x/d", exist_ok=True)',
        'open("x/d/own-entry", "w").close()',
        `os.path.lexists("x/l") or os.symlink(${JSON.stringify(victimHome)}, "x/l")`,
        'libc = ctypes.CDLL(None, use_errno=True)',
        'end = time.time() + 120',
        'while time.time() < end:',
        '    libc.renameat2(-100, b"x/d", -100, b"x/l", 2)',
      ].join('\n');
      expect((await attacker.callTool('write_file', { path: 'swap.py', content: swap })).isError).toBeFalsy();
      expect(
        (await attacker.callTool('run_command', { command: 'python3 swap.py', background: true })).isError,
      ).toBeFalsy();
      const seen = new Set<string>();
      for (let i = 0; i < 200; i += 1) {
        const listed = await attacker.callTool('list_files', { path: 'x', depth: 2 });
        for (const entry of (listed.structuredContent as Listed | undefined)?.entries ?? []) seen.add(entry.path);
      }
      await attacker.callTool('manage_process', { action: 'kill', process_id: 'p1' });
      // The race ran (the real directory was listed under both names), and nothing of the victim showed.
      expect([...seen].filter((path) => path.endsWith('own-entry'))).toEqual(expect.arrayContaining(['d/own-entry']));
      expect([...seen].filter((path) => path.includes(VICTIM_MARK))).toEqual([]);
    },
  );

  it('cleaning up after a Java run never deletes through a symlink the program left in its place', async () => {
    // The program swaps every Java source and scratch directory in /tmp for a link into the victim's files.
    const java = `import java.nio.file.*;
public class Main {
  public static void main(String[] args) throws Exception {
    try (DirectoryStream<Path> tmp = Files.newDirectoryStream(Paths.get("/tmp"))) {
      for (Path p : tmp) {
        String name = p.getFileName().toString();
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS) && name.startsWith("java-")) {
          Files.walk(p).sorted(java.util.Comparator.reverseOrder()).forEach(q -> q.toFile().delete());
          Files.createSymbolicLink(p, Paths.get(${JSON.stringify(join(victimHome, VICTIM_MARK))}));
        } else if (name.endsWith(".java")) {
          Files.delete(p);
          Files.createSymbolicLink(p, Paths.get(${JSON.stringify(join(victimHome, VICTIM_MARK, 'Main.java'))}));
        }
      }
    }
    System.out.println("swapped");
  }
}`;
    const ran = await attacker.callTool('run_code', { code: java, language: 'java', timeout_ms: 60_000 });
    expect(ran.structuredContent).toMatchObject({ stdout: 'swapped\n', error: null });
    expect(existsSync(join(victimHome, VICTIM_MARK, 'Main.java'))).toBe(true);
    const read = await victim.callTool('read_file', { path: `${VICTIM_MARK}/Main.java` });
    expect(read.structuredContent).toMatchObject({ content: 'the victim’s source' });
  });

  needs('root').it(
    'runs each sandbox as a user of its own, allocated (not derived from the session), recorded with its ' +
      'workspace and given back at the end',
    async () => {
      const uidOf = async (client: TestClient): Promise<number> =>
        Number(
          (
            (await client.callTool('run_command', { command: 'id -u' })).structuredContent as { stdout: string }
          ).stdout.trim(),
        );
      const clients = await Promise.all([0, 1, 2].map(() => connectClient('v2', server.url, { token: TOKEN })));
      const uids = await Promise.all(clients.map(uidOf));
      expect(new Set(uids).size).toBe(3);
      const recorded = workspacesIn(server.sandboxRoot).map((ws) =>
        Number(readFileSync(join(server.sandboxRoot, ws, 'uid'), 'utf8')),
      );
      expect(recorded).toEqual(expect.arrayContaining(uids));
      expect(uidClaimsIn(server.sandboxRoot)).toEqual(expect.arrayContaining(uids));
      await clients[0]?.terminate();
      expect(uidClaimsIn(server.sandboxRoot)).not.toContain(uids[0]);
      for (const client of clients.slice(1)) await client.close();
    },
  );

  needs('bubblewrap').it(
    'refuses nested user namespaces and the system calls escapes start from (seccomp), and refuses x32 calls',
    async () => {
      const probe = [
        'import ctypes, os',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'for name, nr in [("mount", 165), ("unshare", 272), ("keyctl", 250), ("bpf", 321), ("io_uring_setup", ' +
          '425), ("userfaultfd", 323), ("perf_event_open", 298), ("open_by_handle_at", 304), ("getpid", 39)]:',
        '    r = libc.syscall(nr, 0, 0, 0, 0, 0)',
        '    print(name, "refused" if r < 0 and ctypes.get_errno() == 1 else "allowed")',
      ].join('\n');
      expect((await attacker.callTool('write_file', { path: 'probe.py', content: probe })).isError).toBeFalsy();
      const out = (
        (
          await attacker.callTool('run_command', {
            command: 'python3 probe.py; unshare -U true 2>/dev/null && echo userns allowed || echo userns refused',
          })
        ).structuredContent as { stdout: string }
      ).stdout;
      expect(out.trim().split('\n')).toEqual([
        'mount refused',
        'unshare refused',
        'keyctl refused',
        'bpf refused',
        'io_uring_setup refused',
        'userfaultfd refused',
        'perf_event_open refused',
        'open_by_handle_at refused',
        'getpid allowed',
        'userns refused',
      ]);
      // An x32 system call (getpid with the x32 bit) would slip past the numbers: the filter refuses it.
      const x32 = (
        (
          await attacker.callTool('run_command', {
            command: `python3 -c 'import ctypes; print(ctypes.CDLL(None).syscall(0x40000000 | 39))'`,
          })
        ).structuredContent as { stdout: string }
      ).stdout;
      expect(x32.trim()).toBe('-1');
    },
  );

  it(
    "killing or stopping the sandbox's own supervisor ends what runs in that sandbox, never hangs a call, and the " +
      'next call works',
    async () => {
      // Everything of the sandbox's user, the supervisor included: the call still comes back.
      const killed = await attacker.callTool('run_command', { command: 'kill -9 -1' });
      // Killed by SIGKILL, or (when its kill beat the supervisor's report that it started) the supervisor's end.
      if (killed.isError)
        expect(killed.content[0]?.text).toMatch(
          /^The sandbox's supervisor was stopped or killed before it reported the process/,
        );
      else expect(killed.structuredContent).toMatchObject({ exit_code: null, timed_out: false });
      expect((await attacker.callTool('run_command', { command: 'echo back' })).structuredContent).toMatchObject({
        exit_code: 0,
        stdout: 'back\n',
      });
      // A stopped supervisor reports nothing: the call's deadline, then the server, kill it.
      const stopped = await attacker.callTool('run_command', { command: 'kill -STOP $PPID', timeout_ms: 1000 });
      expect(stopped.isError).toBe(true);
      if (stopped.structuredContent === undefined)
        expect(stopped.content[0]?.text).toMatch(
          /^The sandbox's supervisor was stopped or killed before it reported the process/,
        );
      else expect(stopped.structuredContent).toMatchObject({ timed_out: true });
      expect((await attacker.callTool('run_command', { command: 'echo back again' })).structuredContent).toMatchObject({
        exit_code: 0,
        stdout: 'back again\n',
      });
      // The other session's sandbox never noticed.
      expect((await victim.callTool('run_command', { command: 'echo untouched' })).structuredContent).toMatchObject({
        exit_code: 0,
        stdout: 'untouched\n',
      });
    },
  );

  it(
    "an endless line on the Python kernel's control channel is passed over, not held: the call ends, the kernel " +
      'and its state stay',
    async () => {
      await attacker.callTool('run_code', { code: 'kept = 1' });
      const flooded = await attacker.callTool('run_code', {
        code: 'import os\nos.write(3, b"x" * (65 << 20))\n"after"',
        timeout_ms: 60_000,
      });
      expect(flooded.structuredContent).toMatchObject({
        state_lost: false,
        timed_out: false,
        error: null,
        results: [{ text: "'after'" }],
        results_omitted: { count: 1, bytes: 65 << 20 },
      });
      expect(
        (await attacker.callTool('run_code', { code: "'kept' in globals(), 1 + 1" })).structuredContent,
      ).toMatchObject({ results: [{ text: '(True, 2)' }] });
      expect((await fetch(`${server.origin}/health`)).status).toBe(200);
    },
  );
});

describe('a token file reached by another name', () => {
  /** The mask is bubblewrap's; root, to write the token file under /opt and /usr/lib. */
  const asRoot = needs('root', 'bubblewrap').it;
  /** What each path is inside the sandbox, one line each: `%F` (the mask is a character device) or `absent`. */
  const typesOf = (paths: string[]) =>
    paths.map((path) => `stat -L -c %F ${path} 2>/dev/null || echo absent`).join('; ');

  asRoot('is masked where a symlink to it leads, and every sandbox still starts', async () => {
    // Under /opt, which sandboxes see read-only.
    const dir = mkdtempSync('/opt/mcp-attack-');
    chmodSync(dir, 0o755);
    try {
      writeFileSync(join(dir, 'tokens'), `${TOKEN}\n`, { mode: 0o600 });
      symlinkSync(join(dir, 'tokens'), join(dir, 'link'));
      const server = await startServer({ env: { MCP_AUTH_TOKEN_FILE: join(dir, 'link') } });
      const client = await connectClient('v2', server.url, { token: TOKEN });
      const read = await client.callTool('run_command', {
        command:
          `cat ${join(dir, 'tokens')}; cat ${join(dir, 'link')}; ` +
          `${typesOf([join(dir, 'tokens'), join(dir, 'link')])}`,
      });
      expect(read.structuredContent).toMatchObject({ stdout: 'character special file\ncharacter special file\n' });
      expect(JSON.stringify(read)).not.toContain(TOKEN);
      await client.close();
    } finally {
      await stopAllServers();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // A merged-/usr host (/lib → usr/lib) shows /usr/lib a second time at /lib unless /lib is a symlink inside too.
  const mergedUsr = lstatSync('/lib').isSymbolicLink() && readlinkSync('/lib') === 'usr/lib' ? asRoot : it.skip;
  mergedUsr('is masked under every alias of its directory (/lib and /usr/lib)', async () => {
    const dir = mkdtempSync('/usr/lib/mcp-attack-');
    chmodSync(dir, 0o755);
    const name = dir.slice('/usr/lib/'.length);
    try {
      writeFileSync(join(dir, 'tokens'), `${TOKEN}\n`, { mode: 0o600 });
      const server = await startServer({ env: { MCP_AUTH_TOKEN_FILE: join(dir, 'tokens') } });
      const client = await connectClient('v2', server.url, { token: TOKEN });
      const paths = [`/usr/lib/${name}/tokens`, `/lib/${name}/tokens`];
      const read = await client.callTool('run_command', {
        command: `readlink /lib; cat ${paths.join(' ')}; ${typesOf(paths)}`,
      });
      expect(read.structuredContent).toMatchObject({
        stdout: 'usr/lib\ncharacter special file\ncharacter special file\n',
      });
      expect(JSON.stringify(read)).not.toContain(TOKEN);
      await client.close();
    } finally {
      await stopAllServers();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is refused at start-up when every user may read it, isolated or not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-attack-readable-'));
    try {
      writeFileSync(join(dir, 'tokens'), `${TOKEN}\n`, { mode: 0o644 });
      const refused = await runServerToExit({ MCP_AUTH_TOKEN_FILE: join(dir, 'tokens'), LOCAL_SANDBOX_ROOT: dir });
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/MCP_AUTH_TOKEN_FILE is readable by every user.*chmod 600/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
