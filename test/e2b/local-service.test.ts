/**
 * The local E2B service itself (test/support/e2b-local/), driven by the real `e2b` and `@e2b/code-interpreter`
 * SDKs: the control plane and its lease, commands run for real in each sandbox's own namespace, files as the
 * sandbox sees them (no way out to the host), pause and resume (with memory: frozen processes; or files only),
 * snapshots, the service's options, envd becoming unreachable, and stop leaving no process behind.
 * One service for the file (and a few small ones for its options), few sandboxes.
 */
import { readFileSync, existsSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Sandbox } from '@e2b/code-interpreter';
import {
  AuthenticationError,
  CommandExitError,
  FileNotFoundError,
  RateLimitError,
  SandboxError,
  SandboxNotFoundError,
  ServiceBusyError,
  TimeoutError,
} from 'e2b';

import { type LocalE2B, NO_ANSWER, startLocalE2B } from '../support/e2b-local';
import { listProcesses, markedSleep, pollUntil, RUN_MARK, SETTLE_MS, waitUntilGone } from '../support/processes';
import { needs } from '../support/needs';

/** A process's state letter and parent pid from /proc/<pid>/stat (`gone` when it has exited). */
function statOf(pid: number): { state: string; parent: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: state!, parent: Number(parent) };
  } catch {
    return { state: 'gone', parent: 0 };
  }
}

/** `pids` and all their descendants, from the parent pids in /proc. */
function descendants(pids: number[]): Set<number> {
  const parentOf = new Map<number, number>();
  for (const p of listProcesses()) {
    const { state, parent } = statOf(p.pid);
    if (state !== 'gone') parentOf.set(p.pid, parent);
  }
  const found = new Set(pids);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, parent] of parentOf) {
      if (found.has(parent) && !found.has(pid)) {
        found.add(pid);
        grew = true;
      }
    }
  }
  return found;
}

/**
 * The host pids of everything in a sandbox's namespace (its init, the agent, the kernels, the commands): the
 * descendants of the bwrap this test process started for it, that bwrap (outside the namespace) left out.
 */
function insideSandbox(sandboxId: string): number[] {
  const bwrap = listProcesses()
    .filter((p) => p.cmdline.includes(sandboxId) && statOf(p.pid).parent === process.pid)
    .map((p) => p.pid);
  const tree = descendants(bwrap);
  for (const pid of bwrap) tree.delete(pid);
  return [...tree];
}

/**
 * The host processes whose command line is `cmdline`, once there are `count` of them (a background command's
 * shell execs it a moment after its start is answered).
 */
function started(cmdline: string, count = 1) {
  return pollUntil(
    () => listProcesses().filter((p) => p.cmdline === cmdline),
    (found) => found.length >= count,
    SETTLE_MS,
    20,
  );
}

needs('bubblewrap').describe('the local E2B service, through the real SDK', () => {
  let e2b: LocalE2B;
  let opts: { apiKey: string; apiUrl: string; sandboxUrl: string };
  /** The main sandbox (code-interpreter template). */
  let sbx: Sandbox;
  /** A second sandbox (base template), for isolation. */
  let other: Sandbox;
  const metadata = { suite: `local-service-${RUN_MARK}`, 'with space': 'a=b&c' };

  beforeAll(async () => {
    e2b = await startLocalE2B();
    opts = { apiKey: e2b.apiKey, apiUrl: e2b.url, sandboxUrl: e2b.url };
    [sbx, other] = await Promise.all([
      Sandbox.create({ ...opts, metadata, envs: { FROM_CREATE: 'created' } }),
      Sandbox.create('base', opts),
    ]);
  });
  afterAll(() => e2b?.stop());

  describe('control plane', () => {
    it('lists a sandbox by its metadata, gives its info, and connects to it', async () => {
      const found = await Sandbox.list({ ...opts, query: { metadata } }).nextItems();
      expect(found.map((s) => s.sandboxId)).toEqual([sbx.sandboxId]);
      expect(found[0]).toMatchObject({ templateId: 'code-interpreter-v1', metadata, state: 'running' });
      expect(await Sandbox.list({ ...opts, query: { metadata: { suite: 'nobody' } } }).nextItems()).toEqual([]);
      expect(await Sandbox.list({ ...opts, query: { metadata, state: ['paused'] } }).nextItems()).toEqual([]);
      // Pages, newest first.
      const pages = Sandbox.list({ ...opts, limit: 1 });
      const first = await pages.nextItems();
      expect(pages.hasNext).toBe(true);
      const second = await pages.nextItems();
      expect(pages.hasNext).toBe(false);
      expect([...first, ...second].map((s) => s.sandboxId).sort()).toEqual([sbx.sandboxId, other.sandboxId].sort());
      expect(first[0]!.startedAt.getTime()).toBeGreaterThanOrEqual(second[0]!.startedAt.getTime());

      const info = await Sandbox.getInfo(sbx.sandboxId, opts);
      expect(info).toMatchObject({
        sandboxId: sbx.sandboxId,
        templateId: 'code-interpreter-v1',
        metadata,
        state: 'running',
      });
      expect(info.endAt.getTime()).toBeGreaterThan(info.startedAt.getTime());

      const again = await Sandbox.connect(sbx.sandboxId, opts);
      expect((await again.commands.run('echo connected')).stdout).toBe('connected\n');
    });

    it('moves endAt with setTimeout', async () => {
      await sbx.setTimeout(3_600_000);
      const later = (await sbx.getInfo()).endAt.getTime();
      await sbx.setTimeout(1_200_000);
      const earlier = (await sbx.getInfo()).endAt.getTime();
      expect(earlier).toBeLessThan(later);
      expect(
        e2b
          .sandboxes()
          .find((s) => s.sandboxId === sbx.sandboxId)
          ?.endAt.getTime(),
      ).toBe(earlier);
    });

    it('refuses a wrong API key', async () => {
      const wrong = { ...opts, apiKey: 'e2b_wrong' };
      await expect(Sandbox.create(wrong)).rejects.toBeInstanceOf(AuthenticationError);
      await expect(Sandbox.list(wrong).nextItems()).rejects.toBeInstanceOf(AuthenticationError);
      await expect(Sandbox.getInfo(sbx.sandboxId, wrong)).rejects.toBeInstanceOf(AuthenticationError);
    });

    it('answers a missing template with 404, and scripted faults first', async () => {
      await expect(Sandbox.create('missing-template', opts)).rejects.toThrow(/^404: /);
      e2b.fault('create', { status: 503, body: { code: 503, message: 'no capacity' } });
      await expect(Sandbox.create(opts)).rejects.toBeInstanceOf(ServiceBusyError);
      expect(
        e2b
          .requests()
          .filter((r) => r.route === 'create')
          .at(-1)?.headers['x-api-key'],
      ).toBe(e2b.apiKey);
    });

    it('records the JSON body of control-plane requests, and none for sandbox traffic', async () => {
      const creates = e2b.requests().filter((r) => r.route === 'create');
      expect(creates.map((r) => r.body)).toContainEqual(
        expect.objectContaining({
          templateID: 'code-interpreter-v1',
          metadata,
          envVars: { FROM_CREATE: 'created' },
          timeout: expect.any(Number),
        }),
      );
      await sbx.setTimeout(1_500_000);
      expect(
        e2b
          .requests()
          .filter((r) => r.route === 'timeout')
          .at(-1)?.body,
      ).toEqual({ timeout: 1_500 });
      // A Connect call whose body is JSON too.
      const mark = e2b.requests().length;
      expect(await sbx.files.makeDir('/tmp/no-body-recorded')).toBe(true);
      const sandboxTraffic = e2b.requests().slice(mark);
      expect(sandboxTraffic.map((r) => [r.route, r.body])).toEqual([['envd', undefined]]);
    });

    it('answers every request with a standing fault, after the one-shot ones, until it is cleared', async () => {
      const get = () => Sandbox.getInfo(sbx.sandboxId, { ...opts, retries: 0 });
      e2b.fault('get', { status: 429, body: { code: 429, message: 'slow down' } });
      e2b.standingFault('get', { status: 503, body: { code: 503, message: 'no capacity' } });
      await expect(get()).rejects.toBeInstanceOf(RateLimitError);
      await expect(get()).rejects.toBeInstanceOf(ServiceBusyError);
      await expect(get()).rejects.toBeInstanceOf(ServiceBusyError);
      e2b.standingFault('get', undefined);
      expect((await get()).sandboxId).toBe(sbx.sandboxId);
    });

    it(
      'holds a request scripted NO_ANSWER unanswered until the client gives up, ' + 'or until the service stops',
      async () => {
        // Each step is bounded on its own, so a hang names the step that hung rather than the test's timeout.
        const step = <T>(label: string, work: Promise<T>): Promise<T> => {
          let timer: NodeJS.Timeout | undefined;
          const bound = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`${label}: not settled within ${SETTLE_MS} ms`)), SETTLE_MS);
          });
          return Promise.race([work, bound]).finally(() => clearTimeout(timer));
        };
        const hanging = await step('start', startLocalE2B());
        try {
          const hangingOpts = { apiKey: hanging.apiKey, apiUrl: hanging.url, sandboxUrl: hanging.url };
          hanging.fault('create', NO_ANSWER);
          // The SDK's own request timer gives up on it (a fetch aborted by its timeout).
          await expect(
            step('the SDK timing out', Sandbox.create('base', { ...hangingOpts, requestTimeoutMs: 300 })),
          ).rejects.toMatchObject({ name: 'TimeoutError' });
          // A standing one holds every create; stop drops them.
          hanging.standingFault('create', NO_ANSWER);
          let settled = false;
          const held = fetch(`${hanging.url}/sandboxes`, {
            method: 'POST',
            headers: { 'X-API-Key': hanging.apiKey, 'Content-Type': 'application/json' },
            body: JSON.stringify({ templateID: 'base' }),
          }).finally(() => {
            settled = true;
          });
          const creates = () => hanging.requests().filter((r) => r.route === 'create');
          expect(
            await pollUntil(
              () => creates().length,
              (n) => n === 2,
              SETTLE_MS,
            ),
          ).toBe(2);
          expect(settled).toBe(false);
          expect(hanging.sandboxes()).toEqual([]);
          // Its end observed from now on: it fails while stop runs, before stop resolves.
          const outcome = held.then(
            () => 'answered',
            (err: unknown) => err,
          );
          await step('stop', hanging.stop());
          expect(await step('the held request failing', outcome)).toMatchObject({
            name: 'TypeError',
            message: 'fetch failed',
          });
        } finally {
          await step('stop', hanging.stop());
        }
      },
    );

    it('kills a sandbox: gone from the control plane, envd answers it is not running', async () => {
      const doomed = await Sandbox.create('base', opts);
      const home = e2b.hostPath(doomed.sandboxId, '/home/user');
      expect(existsSync(home)).toBe(true);
      expect(await Sandbox.kill(doomed.sandboxId, opts)).toBe(true);
      expect(existsSync(home)).toBe(false);
      expect(await Sandbox.kill(doomed.sandboxId, opts)).toBe(false);
      await expect(Sandbox.getInfo(doomed.sandboxId, opts)).rejects.toBeInstanceOf(SandboxNotFoundError);
      await expect(Sandbox.connect(doomed.sandboxId, opts)).rejects.toBeInstanceOf(SandboxNotFoundError);
      expect(await doomed.isRunning()).toBe(false);
      await expect(doomed.commands.run('true')).rejects.toBeInstanceOf(SandboxNotFoundError);
      await expect(doomed.files.read('/etc/hostname')).rejects.toBeInstanceOf(TimeoutError);
    });
  });

  describe('commands', () => {
    it('runs in the foreground: stdout, stderr, exit code, cwd and env', async () => {
      expect(await sbx.commands.run('echo out; echo err >&2')).toMatchObject({
        exitCode: 0,
        stdout: 'out\n',
        stderr: 'err\n',
      });
      const failed = await sbx.commands.run('echo partial; exit 3').catch((err: unknown) => err);
      expect(failed).toBeInstanceOf(CommandExitError);
      expect(failed).toMatchObject({ exitCode: 3, stdout: 'partial\n', error: 'exit status 3' });
      expect((await sbx.commands.run('pwd')).stdout).toBe('/home/user\n');
      expect((await sbx.commands.run('mkdir -p sub/dir && pwd', { cwd: '/tmp' })).stdout).toBe('/tmp\n');
      expect(await sbx.commands.run('pwd', { cwd: 'sub' }).catch((e: Error) => e.message)).toMatch(
        /cwd '\/home\/user\/sub' does not exist/,
      );
      const env = await sbx.commands.run('echo "$HOME $USER $LANG $FROM_CREATE $GREETING"', {
        envs: { GREETING: 'héllo wörld' },
      });
      expect(env.stdout).toBe('/home/user user C.UTF-8 created héllo wörld\n');
    });

    it('runs in the background: stdin, list, closeStdin, kill', async () => {
      let seen = '';
      const cat = await sbx.commands.run('cat', {
        background: true,
        stdin: true,
        onStdout: (d) => {
          seen += d;
        },
      });
      await sbx.commands.sendStdin(cat.pid, 'ping\n');
      await pollUntil(
        () => seen,
        (s) => s.includes('ping'),
        SETTLE_MS,
      );
      expect(seen).toBe('ping\n');
      expect((await sbx.commands.list()).map((p) => p.pid)).toContain(cat.pid);
      await cat.closeStdin();
      expect(await cat.wait()).toMatchObject({ exitCode: 0, stdout: 'ping\n' });

      const sleeper = await sbx.commands.run(markedSleep(300), { background: true });
      expect(await sleeper.kill()).toBe(true);
      expect(await sleeper.wait().catch((e: unknown) => e)).toMatchObject({ exitCode: -1, error: 'signal: killed' });
      expect((await sbx.commands.list()).map((p) => p.pid)).not.toContain(sleeper.pid);
      expect(await sbx.commands.kill(sleeper.pid)).toBe(false);
    });

    it('keeps a process running after its stream went away, and re-attaches to it', async () => {
      const handle = await sbx.commands.run('while [ ! -f /tmp/go ]; do sleep 0.05; done; echo done; exit 7', {
        background: true,
      });
      await handle.disconnect();
      expect((await sbx.commands.list()).map((p) => p.pid)).toContain(handle.pid);
      const again = await sbx.commands.connect(handle.pid);
      await sbx.files.write('/tmp/go', '');
      expect(await again.wait().catch((e: unknown) => e)).toMatchObject({ exitCode: 7, stdout: 'done\n' });
      // Once it exited, a late connect still gets its end.
      expect(await (await sbx.commands.connect(handle.pid)).wait().catch((e: unknown) => e)).toMatchObject({
        exitCode: 7,
      });
    });

    it('kills a command at its timeoutMs (Connect-Timeout-Ms)', async () => {
      const timedOut = await sbx.commands.run(markedSleep(301), { timeoutMs: 500 }).catch((e: unknown) => e);
      expect(timedOut).toBeInstanceOf(TimeoutError);
      const list = await pollUntil(
        () => sbx.commands.list(),
        (l) => !l.some((p) => p.args.join(' ').includes('301')),
        SETTLE_MS,
      );
      expect(list.map((p) => p.args.join(' '))).not.toContainEqual(expect.stringContaining('301'));
    });

    it('gives each sandbox its own pids and processes', async () => {
      expect(Number((await sbx.commands.run('echo $$')).stdout)).toBeLessThan(100);
      const mark = markedSleep(302);
      const sleeper = await other.commands.run(mark, { background: true });
      // Once its login shell (whose profile may fork copies of it) has exec'd the sleep.
      expect(await started(mark)).toHaveLength(1);
      expect(sleeper.pid).toBeLessThan(100);
      const pattern = `'${mark.slice(0, -1)}[${mark.slice(-1)}]'`;
      expect((await other.commands.run(`pgrep -f ${pattern}`)).stdout.trim()).toBe(String(sleeper.pid));
      expect(await sbx.commands.run(`pgrep -f ${pattern}`).catch((e: unknown) => e)).toMatchObject({ exitCode: 1 });
      // Only the sandbox's own processes are in its /proc.
      const own = (await sbx.commands.run('ls /proc | grep -c "^[0-9]"')).stdout;
      expect(Number(own)).toBeLessThan(20);
      await sleeper.kill();
    });
  });

  describe('files', () => {
    it('writes and reads text, binary and 5 MB, which land in the sandbox', async () => {
      const text = 'héllo ✓ 日本語 🎉\n';
      await sbx.files.write('docs/unicode.txt', text);
      expect(await sbx.files.read('/home/user/docs/unicode.txt')).toBe(text);
      expect(readFileSync(e2b.hostPath(sbx.sandboxId, '/home/user/docs/unicode.txt'), 'utf8')).toBe(text);

      const bytes = Buffer.from(Array.from({ length: 1024 }, (_, i) => i % 256));
      await sbx.files.write('/tmp/all.bin', new Uint8Array(bytes).buffer);
      expect(Buffer.from(await sbx.files.read('/tmp/all.bin', { format: 'bytes' })).equals(bytes)).toBe(true);

      const big = randomBytes(5 * 1024 * 1024);
      await sbx.files.write('big.bin', new Uint8Array(big).buffer);
      expect(readFileSync(e2b.hostPath(sbx.sandboxId, '/home/user/big.bin')).equals(big)).toBe(true);
      expect(Buffer.from(await sbx.files.read('big.bin', { format: 'bytes' })).equals(big)).toBe(true);
      expect((await sbx.commands.run('sha256sum big.bin')).stdout.split(' ')[0]).toBe(
        createHash('sha256').update(big).digest('hex'),
      );
    });

    it('uploads as octet-stream and gzip, several files at once, and through signed URLs', async () => {
      await sbx.files.write('up/raw.txt', 'raw body', { useOctetStream: true });
      await sbx.files.write('up/zipped.txt', 'gzipped body', { gzip: true });
      expect(await sbx.files.read('up/raw.txt')).toBe('raw body');
      expect(await sbx.files.read('up/zipped.txt', { gzip: true })).toBe('gzipped body');
      const written = await sbx.files.write([
        { path: 'up/one.txt', data: 'one' },
        { path: '/tmp/up/two.txt', data: 'two' },
      ]);
      expect(written.map((w) => w.path)).toEqual(['/home/user/up/one.txt', '/tmp/up/two.txt']);
      expect(readFileSync(e2b.hostPath(sbx.sandboxId, '/tmp/up/two.txt'), 'utf8')).toBe('two');

      // Signed URLs carry no access token: the signature stands for it.
      const upload = new FormData();
      upload.append('file', new Blob(['signed']), 'signed.txt');
      expect((await fetch(await sbx.uploadUrl('up/signed.txt'), { method: 'POST', body: upload })).status).toBe(200);
      const download = await fetch(await sbx.downloadUrl('up/signed.txt', { useSignatureExpiration: 60 }));
      expect(await download.text()).toBe('signed');
      const unsigned = await fetch(`${e2b.url}/files?path=up/signed.txt`, {
        headers: { 'E2b-Sandbox-Id': sbx.sandboxId },
      });
      expect(unsigned.status).toBe(401);
    });

    it('lists to a depth, stats, checks existence, makes, renames and removes', async () => {
      await sbx.commands.run(
        'mkdir -p tree/a/b && echo 1 > tree/a/one.txt && echo 22 > tree/a/b/two.txt && ln -s a/one.txt tree/link',
      );
      const listed = await sbx.files.list('tree', { depth: 2 });
      expect(listed.map((e) => [e.path, e.type])).toEqual([
        ['/home/user/tree/a', 'dir'],
        ['/home/user/tree/a/b', 'dir'],
        ['/home/user/tree/a/one.txt', 'file'],
        ['/home/user/tree/link', 'file'],
      ]);
      expect(listed.find((e) => e.name === 'link')).toMatchObject({
        symlinkTarget: '/home/user/tree/a/one.txt',
        permissions: 'Lrwxrwxrwx',
      });
      expect(await sbx.files.getInfo('tree/a/b/two.txt')).toMatchObject({
        name: 'two.txt',
        type: 'file',
        size: 3,
        path: '/home/user/tree/a/b/two.txt',
      });
      await expect(sbx.files.getInfo('tree/nothing')).rejects.toBeInstanceOf(FileNotFoundError);
      expect(await sbx.files.exists('tree/a/one.txt')).toBe(true);
      expect(await sbx.files.exists('tree/none')).toBe(false);
      expect(await sbx.files.makeDir('made/deep')).toBe(true);
      expect(await sbx.files.makeDir('made/deep')).toBe(false);
      expect(await sbx.files.rename('tree/a/one.txt', 'made/deep/one.txt')).toMatchObject({
        path: '/home/user/made/deep/one.txt',
        type: 'file',
      });
      // Across the sandbox's /home/user and /tmp (separate mounts here).
      expect(await sbx.files.rename('made', '/tmp/made')).toMatchObject({ path: '/tmp/made', type: 'dir' });
      expect(await sbx.files.read('/tmp/made/deep/one.txt')).toBe('1\n');
      await sbx.files.remove('/tmp/made');
      expect(await sbx.files.exists('/tmp/made')).toBe(false);
      await expect(sbx.files.read('tree')).rejects.toThrow(/is a directory/);
      await expect(sbx.files.read('no-such-file')).rejects.toBeInstanceOf(FileNotFoundError);
    });

    it('reads the rest of the system as the sandbox sees it, read-only', async () => {
      expect(await sbx.files.read('/etc/hostname')).toBe(readFileSync('/etc/hostname', 'utf8'));
      await expect(sbx.files.write('/usr/x', 'no')).rejects.toThrow(/read-only file system/);
      await expect(sbx.files.makeDir('/usr/newdir')).rejects.toThrow(/read-only file system/);
      await expect(sbx.commands.run('touch /usr/x')).rejects.toBeInstanceOf(CommandExitError);
      expect(existsSync('/usr/x')).toBe(false);
    });

    it('never lets a path or a symlink reach the host outside what the sandbox sees', async () => {
      await other.files.write('/home/user/secret.txt', 'other sandbox');
      const hostTmpFile = join(tmpdir(), `e2b-local-host-${RUN_MARK}-${randomBytes(4).toString('hex')}`);
      writeFileSync(hostTmpFile, 'host');
      try {
        await sbx.commands.run(
          `ln -sfn / root-link && ln -sfn ${e2b.hostPath(other.sandboxId, '/home/user')} other-link && ln -sfn ` +
            `${hostTmpFile} host-link`,
        );
        expect(await sbx.files.read('root-link/etc/hostname')).toBe(readFileSync('/etc/hostname', 'utf8'));
        await expect(sbx.files.read('other-link/secret.txt')).rejects.toBeInstanceOf(FileNotFoundError);
        await expect(sbx.files.read('host-link')).rejects.toBeInstanceOf(FileNotFoundError);
        await expect(sbx.files.read(hostTmpFile)).rejects.toBeInstanceOf(FileNotFoundError);
        await expect(sbx.files.write('other-link/secret.txt', 'overwritten')).rejects.toThrow();
        await expect(sbx.files.write('root-link/usr/evil', 'x')).rejects.toThrow(/read-only file system/);
        await expect(sbx.files.write('../../../etc/escape', 'x')).rejects.toThrow(/read-only file system/);
        // Through the link to / a write lands in the sandbox's own /tmp.
        await sbx.files.write('root-link/tmp/through.txt', 'inside');
        expect(readFileSync(e2b.hostPath(sbx.sandboxId, '/tmp/through.txt'), 'utf8')).toBe('inside');
        expect(readFileSync(hostTmpFile, 'utf8')).toBe('host');
        expect(await other.files.read('/home/user/secret.txt')).toBe('other sandbox');
        expect(existsSync('/etc/escape') || existsSync('/usr/evil')).toBe(false);
      } finally {
        rmSync(hostTmpFile, { force: true });
      }
    });
  });

  describe('interpreter port', () => {
    it('reaches the sandbox’s interpreter on a code-interpreter template', async () => {
      const execution = await sbx.runCode('import os\nprint(os.environ["FROM_CREATE"])\n21 * 2');
      expect(execution.results.map((r) => r.text)).toEqual(['42']);
      expect(execution.logs.stdout).toEqual(['created\n']);
    });

    it('is closed on a base template', async () => {
      // A short request timeout: on an error answer the SDK leaves its request timer running (runCode clears
      // it on success only), and a 60 s one would hold the test process open.
      await expect(other.runCode('1 + 1', { requestTimeoutMs: 1_000 })).rejects.toThrow(/port is not open/);
    });
  });

  describe('persistence', () => {
    /** A raw control-plane request with the service's key. */
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${e2b.url}${path}`, {
        method,
        headers: { 'X-API-Key': e2b.apiKey, 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const infoOf = (id: string) => e2b.sandboxes().find((s) => s.sandboxId === id);

    it('records the lifecycle a sandbox is created with, reports it, and refuses what E2B refuses', async () => {
      const pausing = await Sandbox.create('base', { ...opts, lifecycle: { onTimeout: 'pause', autoResume: true } });
      expect((await Sandbox.getInfo(pausing.sandboxId, opts)).lifecycle).toEqual({
        onTimeout: 'pause',
        autoResume: true,
      });
      expect((await Sandbox.getInfo(sbx.sandboxId, opts)).lifecycle).toEqual({ onTimeout: 'kill', autoResume: false });
      const listed = (await (await api('GET', '/v2/sandboxes')).json()) as Array<{ sandboxID: string }>;
      expect(listed.find((s) => s.sandboxID === pausing.sandboxId)).toMatchObject({
        state: 'running',
        lifecycle: { onTimeout: 'pause', autoResume: true },
      });
      expect(infoOf(pausing.sandboxId)).toMatchObject({
        state: 'running',
        lifecycle: { onTimeout: 'pause', keepMemory: true, autoResume: true },
      });
      expect(
        e2b
          .requests()
          .filter((r) => r.route === 'create')
          .at(-1)?.body,
      ).toMatchObject({
        autoPause: true,
        autoResume: { enabled: true },
      });
      // What the SDK would not send, sent raw.
      const live = e2b.sandboxes().length;
      const refused = async (body: Record<string, unknown>) => {
        const res = await api('POST', '/sandboxes', { templateID: 'base', ...body });
        return { status: res.status, message: ((await res.json()) as { message: string }).message };
      };
      expect(await refused({ autoResume: { enabled: true } })).toEqual({
        status: 400,
        message: expect.stringMatching(/autoResume can only be enabled when autoPause is true/),
      });
      expect(await refused({ autoPauseMemory: false })).toEqual({
        status: 400,
        message: expect.stringMatching(/autoPauseMemory=false only applies when autoPause is true/),
      });
      expect(await refused({ autoPause: true, autoPauseMemory: false, autoResume: { enabled: true } })).toEqual({
        status: 400,
        message: expect.stringMatching(/cannot be auto-resumed by traffic/),
      });
      expect(await refused({ autoPause: 'yes' })).toMatchObject({ status: 400 });
      expect(e2b.sandboxes()).toHaveLength(live);
      await Sandbox.kill(pausing.sandboxId, opts);
    });

    it('pauses at the end of its lease a sandbox made to pause on timeout, with memory or files only', async () => {
      const marked = { ...metadata, suite: `persistence-${RUN_MARK}` };
      const [withMemory, filesOnly] = await Promise.all([
        Sandbox.create('base', { ...opts, timeoutMs: 1_000, metadata: marked, lifecycle: { onTimeout: 'pause' } }),
        Sandbox.create('base', {
          ...opts,
          timeoutMs: 1_000,
          metadata: marked,
          lifecycle: { onTimeout: { action: 'pause', keepMemory: false } },
        }),
      ]);
      // As the SDK sends them (the two creates in either order): autoPauseMemory only when keepMemory is given.
      const sent = e2b
        .requests()
        .filter((r) => r.route === 'create')
        .slice(-2)
        .map((r) => r.body as { autoPause?: boolean; autoPauseMemory?: boolean })
        .map((b) => `${b.autoPause}/${b.autoPauseMemory}`);
      expect(sent.sort()).toEqual(['true/false', 'true/undefined']);
      const ids = [withMemory.sandboxId, filesOnly.sandboxId];
      const states = await pollUntil(
        () => ids.map((id) => infoOf(id)?.state),
        (s) => s.every((state) => state === 'paused'),
        SETTLE_MS,
      );
      expect(states).toEqual(['paused', 'paused']);
      expect(ids.map((id) => infoOf(id)?.memory)).toEqual([true, false]);
      // Not killed: listed as paused with their metadata, their files kept; the lease no longer runs.
      const listed = await Sandbox.list({ ...opts, query: { metadata: marked } }).nextItems();
      expect(listed.map((s) => [s.sandboxId, s.state, s.metadata]).sort()).toEqual(
        ids.map((id) => [id, 'paused', marked]).sort(),
      );
      const info = await Sandbox.getInfo(withMemory.sandboxId, opts);
      expect(info).toMatchObject({ state: 'paused', lifecycle: { onTimeout: 'pause', autoResume: false } });
      expect(info.endAt.getTime()).toBeLessThanOrEqual(Date.now());
      expect(existsSync(e2b.hostPath(filesOnly.sandboxId, '/home/user'))).toBe(true);
      // Only an explicit resume wakes them; then the lease runs again and ends in a pause again.
      await Sandbox.connect(filesOnly.sandboxId, { ...opts, timeoutMs: 1_000 });
      expect(infoOf(filesOnly.sandboxId)?.state).toBe('running');
      expect((await filesOnly.commands.run('echo awake')).stdout).toBe('awake\n');
      const again = await pollUntil(
        () => infoOf(filesOnly.sandboxId)?.state,
        (state) => state === 'paused',
        SETTLE_MS,
      );
      expect(again).toBe('paused');
      await Promise.all(ids.map((id) => Sandbox.kill(id, opts)));
    });

    it('pauses with memory: every process frozen, traffic refused at once; connect thaws the same ones', async () => {
      const mark = markedSleep(310);
      const box = await Sandbox.create({ ...opts, metadata: { suite: `memory-${RUN_MARK}` } });
      expect((await box.runCode('x = 41')).error).toBeUndefined();
      const sleeper = await box.commands.run(mark, { background: true });
      const [hostSleep] = await started(mark);
      expect(hostSleep).toBeDefined();
      // A shell that keeps forking while the pause freezes the sandbox.
      const spawned = markedSleep(315);
      await box.commands.run(`for i in $(seq 300); do ${spawned} & sleep 0.002; done`, { background: true });
      await started(spawned, 10);
      const inFlight = box.commands.run('sleep 30; echo late').catch((e: unknown) => e);
      let printed = '';
      const codeInFlight = box
        .runCode('print("sleeping", flush=True)\nimport time\ntime.sleep(600)', {
          timeoutMs: 120_000,
          onStdout: (m) => {
            printed += m.line;
          },
        })
        .catch((e: unknown) => e);
      await pollUntil(
        () => printed,
        (p) => p.includes('sleeping'),
        SETTLE_MS,
        20,
      );
      await pollUntil(
        () => e2b.requests().filter((r) => r.sandboxId === box.sandboxId && r.path.endsWith('/Start')).length,
        (n) => n === 3,
        SETTLE_MS,
        20,
      );

      expect(await Sandbox.pause(box.sandboxId, opts)).toBe(true);
      expect(
        e2b
          .requests()
          .filter((r) => r.route === 'pause')
          .at(-1)?.body,
      ).toEqual({ memory: true });
      // Every process in the namespace is stopped: the sleeps, the forking shell, the agent, the kernel, the init.
      const inside = insideSandbox(box.sandboxId);
      expect(inside.length).toBeGreaterThanOrEqual(15);
      expect(inside).toContain(hostSleep!.pid);
      expect(inside.map((pid) => statOf(pid).state)).toEqual(inside.map(() => 'T'));
      expect(infoOf(box.sandboxId)).toMatchObject({ state: 'paused', memory: true });
      // Its lease of 5 minutes stopped at the pause.
      expect((await Sandbox.getInfo(box.sandboxId, opts)).endAt.getTime()).toBeLessThanOrEqual(Date.now());
      // The calls in flight were dropped; new traffic is refused as for a sandbox that is not running.
      expect(await inFlight).toBeInstanceOf(TimeoutError);
      expect(await codeInFlight).toMatchObject({ name: 'TypeError', message: 'terminated' });
      expect(await box.isRunning()).toBe(false);
      await expect(box.commands.run('true')).rejects.toBeInstanceOf(SandboxNotFoundError);
      await expect(box.files.read('/etc/hostname')).rejects.toBeInstanceOf(TimeoutError);
      await expect(box.runCode('x', { requestTimeoutMs: 1_000 })).rejects.toBeInstanceOf(TimeoutError);
      // Paused already: the SDK's pause says false (E2B's 409); its lease cannot be set until it is resumed.
      expect(await Sandbox.pause(box.sandboxId, opts)).toBe(false);
      await expect(Sandbox.setTimeout(box.sandboxId, 60_000, opts)).rejects.toBeInstanceOf(SandboxNotFoundError);
      expect(statOf(hostSleep!.pid).state).toBe('T');

      const before = Date.now();
      const woken = await Sandbox.connect(box.sandboxId, { ...opts, timeoutMs: 120_000 });
      expect(inside.map((pid) => statOf(pid).state)).not.toContain('T');
      expect(infoOf(box.sandboxId)?.state).toBe('running');
      expect(infoOf(box.sandboxId)!.endAt.getTime()).toBeGreaterThanOrEqual(before + 120_000);
      expect((await woken.commands.list()).map((p) => p.pid)).toContain(sleeper.pid);
      expect((await woken.commands.run(`pgrep -f '^sleep 310'`)).stdout.trim()).toBe(String(sleeper.pid));
      expect((await woken.runCode('x + 1')).text).toBe('42');
      await Sandbox.kill(box.sandboxId, opts);
      const left = () => listProcesses().filter((p) => p.cmdline === mark || p.cmdline === spawned);
      expect(await waitUntilGone(left, SETTLE_MS)).toEqual([]);
    });

    it('pauses without memory: the namespace ends, the files stay; connect boots it afresh on them', async () => {
      const mark = markedSleep(311);
      const box = await Sandbox.create(opts);
      await box.files.write('kept.txt', 'kept');
      await box.files.write('/tmp/kept.txt', 'kept in tmp');
      expect((await box.runCode('y = 1')).error).toBeUndefined();
      const sleeper = await box.commands.run(mark, { background: true });
      expect(await started(mark)).toHaveLength(1);

      expect(await box.pause({ keepMemory: false })).toBe(true);
      expect(
        e2b
          .requests()
          .filter((r) => r.route === 'pause')
          .at(-1)?.body,
      ).toEqual({ memory: false });
      expect(infoOf(box.sandboxId)).toMatchObject({ state: 'paused', memory: false });
      expect(await waitUntilGone(() => listProcesses().filter((p) => p.cmdline === mark), SETTLE_MS)).toEqual([]);
      expect(insideSandbox(box.sandboxId)).toEqual([]);
      expect(readFileSync(e2b.hostPath(box.sandboxId, '/home/user/kept.txt'), 'utf8')).toBe('kept');
      await expect(box.commands.run('true')).rejects.toBeInstanceOf(SandboxNotFoundError);
      expect(await box.pause({ keepMemory: false })).toBe(false);

      const woken = await Sandbox.connect(box.sandboxId, opts);
      expect(await woken.files.read('kept.txt')).toBe('kept');
      expect(await woken.files.read('/tmp/kept.txt')).toBe('kept in tmp');
      expect((await woken.commands.list()).map((p) => p.pid)).not.toContain(sleeper.pid);
      expect(listProcesses().filter((p) => p.cmdline === mark)).toEqual([]);
      expect((await woken.runCode('y')).error).toMatchObject({ name: 'NameError' });
      await Sandbox.kill(box.sandboxId, opts);
    });

    it('answers connect 200 for a running sandbox, 201 for a paused one; serves the deprecated resume', async () => {
      const box = await Sandbox.create('base', opts);
      const connect = (body: unknown) => api('POST', `/sandboxes/${box.sandboxId}/connect`, body);
      const resume = (body: unknown) => api('POST', `/sandboxes/${box.sandboxId}/resume`, body);
      expect((await connect({ timeout: 60 })).status).toBe(200);
      expect((await resume({ timeout: 60 })).status).toBe(409);
      expect((await api('POST', `/sandboxes/${box.sandboxId}/pause`)).status).toBe(204);
      const resumed = await connect({ timeout: 60 });
      expect(resumed.status).toBe(201);
      expect(await resumed.json()).toMatchObject({ sandboxID: box.sandboxId, envdAccessToken: expect.any(String) });
      expect((await box.commands.run('echo back')).stdout).toBe('back\n');
      await e2b.pauseSandbox(box.sandboxId, { memory: false });
      expect((await resume({ timeout: 60 })).status).toBe(201);
      expect((await box.commands.run('echo back again')).stdout).toBe('back again\n');
      // `onResume: 'reboot'` (memory: false) cold-boots a sandbox paused with its memory.
      const mark = markedSleep(312);
      await box.commands.run(mark, { background: true });
      expect(await started(mark)).toHaveLength(1);
      expect(await e2b.pauseSandbox(box.sandboxId)).toBe(true);
      expect(await e2b.pauseSandbox(box.sandboxId)).toBe(false);
      await Sandbox.connect(box.sandboxId, { ...opts, onResume: 'reboot' });
      expect(
        e2b
          .requests()
          .filter((r) => r.route === 'connect')
          .at(-1)?.body,
      ).toMatchObject({ memory: false });
      expect(await waitUntilGone(() => listProcesses().filter((p) => p.cmdline === mark), SETTLE_MS)).toEqual([]);
      expect((await box.commands.run('echo rebooted')).stdout).toBe('rebooted\n');
      await box.kill();
    });

    it('lists by state and kills a paused sandbox, frozen processes and all', async () => {
      const marked = { suite: `states-${RUN_MARK}` };
      const mark = markedSleep(313);
      const [running, paused] = await Promise.all([
        Sandbox.create('base', { ...opts, metadata: marked }),
        Sandbox.create('base', { ...opts, metadata: marked }),
      ]);
      await paused.commands.run(mark, { background: true });
      expect(await started(mark)).toHaveLength(1);
      await paused.pause();
      const ids = (state: Array<'running' | 'paused'> | undefined) =>
        Sandbox.list({ ...opts, query: { metadata: marked, ...(state === undefined ? {} : { state }) } })
          .nextItems()
          .then((found) => found.map((s) => s.sandboxId).sort());
      expect(await ids(['paused'])).toEqual([paused.sandboxId]);
      expect(await ids(['running'])).toEqual([running.sandboxId]);
      expect(await ids(['running', 'paused'])).toEqual([running.sandboxId, paused.sandboxId].sort());
      expect(await ids(undefined)).toEqual([running.sandboxId, paused.sandboxId].sort());
      expect(
        e2b
          .requests()
          .filter((r) => r.route === 'list')
          .at(-2)?.path,
      ).toContain('state=running,paused');
      // The deprecated list has no state query: running sandboxes only, as E2B's.
      const deprecated = (await (await api('GET', '/sandboxes')).json()) as Array<{ sandboxID: string }>;
      expect(deprecated.map((s) => s.sandboxID)).toContain(running.sandboxId);
      expect(deprecated.map((s) => s.sandboxID)).not.toContain(paused.sandboxId);

      const home = e2b.hostPath(paused.sandboxId, '/home/user');
      expect(
        listProcesses()
          .filter((p) => p.cmdline === mark)
          .map((p) => statOf(p.pid).state),
      ).toEqual(['T']);
      expect(await Sandbox.kill(paused.sandboxId, opts)).toBe(true);
      expect(existsSync(home)).toBe(false);
      expect(listProcesses().filter((p) => p.cmdline === mark)).toEqual([]);
      expect(await ids(undefined)).toEqual([running.sandboxId]);
      await expect(Sandbox.connect(paused.sandboxId, opts)).rejects.toBeInstanceOf(SandboxNotFoundError);
      expect(await Sandbox.pause(running.sandboxId, { ...opts, keepMemory: false })).toBe(true);
      await e2b.killSandbox(running.sandboxId);
      expect(await ids(undefined)).toEqual([]);
    });

    it('snapshots the files: a sandbox made from one has them, and neither sees the other’s writes', async () => {
      const source = await Sandbox.create('base', opts);
      await source.files.write('project/notes.txt', 'v1');
      await source.files.write('/tmp/scratch.txt', 'scratch');
      const mark = markedSleep(314);
      const sleeper = await source.commands.run(mark, { background: true });
      const [hostSleep] = await started(mark);

      const plain = await source.createSnapshot();
      expect(plain).toEqual({ snapshotId: expect.stringMatching(/^[a-z0-9]{20}:default$/), names: [] });
      // Briefly frozen for the copy, then running on.
      expect(statOf(hostSleep!.pid).state).not.toBe('T');
      expect((await source.commands.list()).map((p) => p.pid)).toContain(sleeper.pid);
      expect(infoOf(source.sandboxId)?.state).toBe('running');
      const named = await Sandbox.createSnapshot(source.sandboxId, { ...opts, name: 'notes' });
      expect(named).toEqual({ snapshotId: 'local/notes:default', names: ['local/notes'] });
      expect(
        e2b
          .requests()
          .filter((r) => r.route === 'snapshot')
          .map((r) => r.body),
      ).toEqual([{}, { name: 'notes' }]);

      const copy = await Sandbox.create(plain.snapshotId, opts);
      const byName = await Sandbox.create('local/notes', opts);
      expect(await copy.files.read('project/notes.txt')).toBe('v1');
      expect(await byName.files.read('/tmp/scratch.txt')).toBe('scratch');
      expect(await copy.commands.run(`pgrep -f '^sleep 314'`).catch((e: unknown) => e)).toMatchObject({ exitCode: 1 });
      await copy.files.write('project/notes.txt', 'v2 in the copy');
      await source.files.write('project/notes.txt', 'v2 in the source');
      expect(await source.files.read('project/notes.txt')).toBe('v2 in the source');
      expect(await copy.files.read('project/notes.txt')).toBe('v2 in the copy');
      expect(await byName.files.read('project/notes.txt')).toBe('v1');

      const listed = async (o: { sandboxId?: string; name?: string; limit?: number } = {}) => {
        const pages = Sandbox.listSnapshots({ ...opts, ...o });
        const found = await pages.nextItems();
        return { ids: found.map((s) => s.snapshotId), more: pages.hasNext };
      };
      expect(await listed({ sandboxId: source.sandboxId })).toEqual({
        ids: [named.snapshotId, plain.snapshotId],
        more: false,
      });
      expect(await listed({ name: 'notes' })).toEqual({ ids: [named.snapshotId], more: false });
      expect(await listed({ name: 'local/notes:default' })).toEqual({ ids: [named.snapshotId], more: false });
      expect(await listed({ sandboxId: copy.sandboxId })).toEqual({ ids: [], more: false });
      expect(await listed({ sandboxId: source.sandboxId, limit: 1 })).toEqual({ ids: [named.snapshotId], more: true });
      expect(e2b.snapshots()).toEqual([
        { snapshotId: named.snapshotId, names: ['local/notes'], sandboxId: source.sandboxId },
        { snapshotId: plain.snapshotId, names: [], sandboxId: source.sandboxId },
      ]);

      // Deleted (as the SDK sends it, DELETE /templates/{id}): gone, and the sandboxes made from it keep their files.
      expect(await Sandbox.deleteSnapshot(plain.snapshotId, opts)).toBe(true);
      expect(
        e2b
          .requests()
          .filter((r) => r.route === 'deleteSnapshot')
          .at(-1)?.path,
      ).toBe(`/templates/${encodeURIComponent(plain.snapshotId)}`);
      expect(await Sandbox.deleteSnapshot(plain.snapshotId, opts)).toBe(false);
      expect(await listed()).toEqual({ ids: [named.snapshotId], more: false });
      expect(await copy.files.read('project/notes.txt')).toBe('v2 in the copy');
      await expect(Sandbox.create(plain.snapshotId, opts)).rejects.toThrow(/^404: /);
      // A name taken again gets the new build.
      await Sandbox.createSnapshot(source.sandboxId, { ...opts, name: 'notes' });
      const rebuilt = await Sandbox.create('local/notes:default', opts);
      expect(await rebuilt.files.read('project/notes.txt')).toBe('v2 in the source');
      expect(await Sandbox.deleteSnapshot(named.snapshotId, opts)).toBe(true);
      expect(e2b.snapshots()).toEqual([]);
      // E2B snapshots running sandboxes only.
      await source.pause();
      await expect(source.createSnapshot()).rejects.toBeInstanceOf(SandboxNotFoundError);
      await Promise.all([source, copy, byName, rebuilt].map((s) => s.kill()));
    });

    it('answers scripted faults on the new routes first, and records them', async () => {
      const box = await Sandbox.create('base', opts);
      e2b.fault('pause', { status: 503, body: { code: 503, message: 'node is busy, please retry' } });
      await expect(box.pause()).rejects.toBeInstanceOf(ServiceBusyError);
      expect(infoOf(box.sandboxId)?.state).toBe('running');
      e2b.fault('snapshot', { status: 500, body: { code: 500, message: 'Error creating snapshot template' } });
      await expect(box.createSnapshot()).rejects.toThrow(/^500: Error creating snapshot template/);
      e2b.standingFault('snapshots', { status: 429, body: { code: 429, message: 'slow down' } });
      await expect(Sandbox.listSnapshots({ ...opts, retries: 0 }).nextItems()).rejects.toBeInstanceOf(RateLimitError);
      await expect(Sandbox.listSnapshots({ ...opts, retries: 0 }).nextItems()).rejects.toBeInstanceOf(RateLimitError);
      e2b.standingFault('snapshots', undefined);
      expect(await Sandbox.listSnapshots(opts).nextItems()).toEqual([]);
      e2b.fault('deleteSnapshot', { status: 401, body: { code: 401, message: 'Invalid API key' } });
      await expect(Sandbox.deleteSnapshot('anything', opts)).rejects.toBeInstanceOf(AuthenticationError);
      expect(await box.pause()).toBe(true);
      // A connect held unanswered until the client gives up: the sandbox stays paused.
      e2b.fault('connect', NO_ANSWER);
      const connects = () => e2b.requests().filter((r) => r.route === 'connect').length;
      const before = connects();
      const gaveUp = new AbortController();
      const held = fetch(`${e2b.url}/sandboxes/${box.sandboxId}/connect`, {
        method: 'POST',
        headers: { 'X-API-Key': e2b.apiKey, 'Content-Type': 'application/json' },
        body: JSON.stringify({ timeout: 60 }),
        signal: gaveUp.signal,
      }).then(
        () => 'answered',
        (err: unknown) => err,
      );
      expect(await pollUntil(connects, (n) => n > before, SETTLE_MS, 20)).toBe(before + 1);
      gaveUp.abort();
      expect(await held).toMatchObject({ name: 'AbortError' });
      expect(infoOf(box.sandboxId)?.state).toBe('paused');
      e2b.fault('resume', { status: 503, body: { code: 503, message: 'busy' } });
      expect((await api('POST', `/sandboxes/${box.sandboxId}/resume`, {})).status).toBe(503);
      expect(
        e2b
          .requests()
          .filter((r) => r.sandboxId === box.sandboxId)
          .map((r) => r.route),
      ).toEqual(expect.arrayContaining(['pause', 'snapshot', 'connect', 'resume']));
      expect(e2b.requests().some((r) => r.route === 'deleteSnapshot' && r.path === '/templates/anything')).toBe(true);
      await box.kill();
    });

    it('refuses what a service without memory snapshots, or without persistence, does not offer', async () => {
      const root = mkdtempSync(join(tmpdir(), `e2b-local-root-${RUN_MARK}-`));
      const filesOnly = await startLocalE2B({ pause: 'files', root });
      const none = await startLocalE2B({ pause: 'none' });
      const noSnapshots = await startLocalE2B({ snapshots: false });
      try {
        const o = (s: LocalE2B) => ({ apiKey: s.apiKey, apiUrl: s.url, sandboxUrl: s.url });
        // pause: 'files': a pause or an autoPause that keeps memory is refused 400, a filesystem-only one is not.
        const box = await Sandbox.create('base', o(filesOnly));
        const refusal = await Sandbox.pause(box.sandboxId, o(filesOnly)).catch((e: unknown) => e);
        expect(refusal).toBeInstanceOf(SandboxError);
        expect(refusal).toMatchObject({
          statusCode: 400,
          message: expect.stringMatching(/^400: Memory snapshots are not enabled for this team/),
        });
        await expect(
          Sandbox.create('base', { ...o(filesOnly), lifecycle: { onTimeout: 'pause' } }),
        ).rejects.toMatchObject({
          statusCode: 400,
          message: expect.stringMatching(/Memory snapshots are not enabled/),
        });
        await expect(filesOnly.pauseSandbox(box.sandboxId, { memory: true })).rejects.toThrow(/pause: 'files'/);
        const filesPausing = await Sandbox.create('base', {
          ...o(filesOnly),
          lifecycle: { onTimeout: { action: 'pause', keepMemory: false } },
        });
        expect(filesOnly.sandboxes().find((s) => s.sandboxId === filesPausing.sandboxId)?.lifecycle).toEqual({
          onTimeout: 'pause',
          keepMemory: false,
          autoResume: false,
        });
        expect(await Sandbox.pause(box.sandboxId, { ...o(filesOnly), keepMemory: false })).toBe(true);
        expect(await filesOnly.pauseSandbox(filesPausing.sandboxId)).toBe(true);
        expect(filesOnly.sandboxes().map((s) => s.memory)).toEqual([false, false]);
        await Sandbox.connect(box.sandboxId, o(filesOnly));
        expect((await Sandbox.createSnapshot(box.sandboxId, o(filesOnly))).names).toEqual([]);
        // The raw answer: E2B's shape for a feature the team does not have.
        const raw = await fetch(`${filesOnly.url}/sandboxes/${box.sandboxId}/pause`, {
          method: 'POST',
          headers: { 'X-API-Key': filesOnly.apiKey, 'Content-Type': 'application/json' },
          body: JSON.stringify({ memory: true }),
        });
        expect(raw.status).toBe(400);
        expect(await raw.json()).toMatchObject({ code: 400, error_code: 'sandbox_memory_snapshots_disabled' });

        // pause: 'none': no pause route (404, which the SDK reads as a sandbox not found), no autoPause, no snapshots.
        const plain = await Sandbox.create('base', o(none));
        await expect(Sandbox.pause(plain.sandboxId, o(none))).rejects.toBeInstanceOf(SandboxNotFoundError);
        await expect(Sandbox.create('base', { ...o(none), lifecycle: { onTimeout: 'pause' } })).rejects.toMatchObject({
          statusCode: 400,
          message: expect.stringMatching(/autoPause is not supported/),
        });
        await expect(none.pauseSandbox(plain.sandboxId)).rejects.toThrow(/pause: 'none'/);
        await expect(plain.createSnapshot()).rejects.toBeInstanceOf(SandboxNotFoundError);
        await expect(Sandbox.listSnapshots(o(none)).nextItems()).rejects.toThrow(/^404: Not Found/);
        expect((await Sandbox.getInfo(plain.sandboxId, o(none))).state).toBe('running');
        expect((await plain.commands.run('echo still here')).stdout).toBe('still here\n');

        // snapshots: false: pause works, the snapshot routes are not served.
        const other = await Sandbox.create('base', o(noSnapshots));
        await expect(other.createSnapshot()).rejects.toBeInstanceOf(SandboxNotFoundError);
        await expect(Sandbox.deleteSnapshot('x:default', o(noSnapshots))).resolves.toBe(false);
        expect(await other.pause()).toBe(true);
      } finally {
        await Promise.all([filesOnly.stop(), none.stop(), noSnapshots.stop()]);
        // The snapshots under a root the service was given go with it; the root stays.
        const left = { root: existsSync(root), snapshots: existsSync(join(root, 'snapshots')) };
        rmSync(root, { recursive: true, force: true });
        expect(left).toEqual({ root: true, snapshots: false });
      }
    });
  });

  describe('lifecycle', () => {
    it('ends a sandbox at the end of its lease', async () => {
      const short = await Sandbox.create('base', { ...opts, timeoutMs: 2_000 });
      await short.commands.run(markedSleep(303), { background: true });
      const home = e2b.hostPath(short.sandboxId, '/home/user');
      const live = await pollUntil(
        () => e2b.sandboxes().map((s) => s.sandboxId),
        (ids) => !ids.includes(short.sandboxId),
        SETTLE_MS,
        100,
      );
      expect(live).not.toContain(short.sandboxId);
      await expect(Sandbox.getInfo(short.sandboxId, opts)).rejects.toBeInstanceOf(SandboxNotFoundError);
      // Forgotten at once, then killed and removed.
      const left = () => ({
        home: existsSync(home),
        sleeps: listProcesses().filter((p) => p.cmdline === markedSleep(303)).length,
      });
      expect(await pollUntil(left, (l) => !l.home && l.sleeps === 0, SETTLE_MS)).toEqual({ home: false, sleeps: 0 });
      await expect(short.commands.run('true')).rejects.toBeInstanceOf(SandboxNotFoundError);
    });

    it('with envd cut, drops the call in flight and fails the next, while the sandbox still runs', async () => {
      const cut = await Sandbox.create('base', opts);
      const starts = () =>
        e2b.requests().filter((r) => r.sandboxId === cut.sandboxId && r.path.endsWith('/Start')).length;
      const before = starts();
      const inFlight = cut.commands.run('sleep 30; echo late').catch((e: unknown) => e);
      await pollUntil(starts, (n) => n > before, SETTLE_MS, 20);
      e2b.cutEnvd(cut.sandboxId);
      expect(await inFlight).toBeInstanceOf(SandboxError);
      await expect(cut.commands.run('true')).rejects.toBeInstanceOf(SandboxError);
      await expect(cut.files.read('/etc/hostname')).rejects.toBeInstanceOf(TimeoutError);
      expect(await cut.isRunning()).toBe(false);
      expect((await Sandbox.getInfo(cut.sandboxId, opts)).state).toBe('running');
      await e2b.killSandbox(cut.sandboxId);
      await expect(Sandbox.getInfo(cut.sandboxId, opts)).rejects.toBeInstanceOf(SandboxNotFoundError);
    });

    it('serves no /v2/sandboxes in the alibaba flavor', async () => {
      const alibaba = await startLocalE2B({ flavor: 'alibaba' });
      try {
        const alibabaOpts = { apiKey: alibaba.apiKey, apiUrl: alibaba.url, sandboxUrl: alibaba.url };
        await expect(Sandbox.list(alibabaOpts).nextItems()).rejects.toThrow(/^404: /);
        // Pause (with memory) and snapshots, which Alibaba Cloud offers per account.
        const box = await Sandbox.create('base', alibabaOpts);
        await box.files.write('a.txt', 'alibaba');
        expect(await box.pause()).toBe(true);
        expect(alibaba.sandboxes()).toMatchObject([{ state: 'paused', memory: true }]);
        await Sandbox.connect(box.sandboxId, alibabaOpts);
        const { snapshotId } = await box.createSnapshot();
        expect(await (await Sandbox.create(snapshotId, alibabaOpts)).files.read('a.txt')).toBe('alibaba');
      } finally {
        await alibaba.stop();
      }
    });

    it('stops with no process left behind, a paused sandbox’s frozen ones included', async () => {
      const mark = markedSleep(304);
      const frozen = await Sandbox.create('base', opts);
      await Promise.all([sbx, other, frozen].map((s) => s.commands.run(mark, { background: true })));
      expect(await started(mark, 3)).toHaveLength(3);
      expect(await frozen.pause()).toBe(true);
      const root = e2b.hostPath(sbx.sandboxId, '/home/user').split(`/${sbx.sandboxId}/`)[0]!;
      // bwrap (its command line names the root) and everything under it: the agents, the sleeps.
      const tree = descendants(
        listProcesses()
          .filter((p) => p.cmdline.includes(root))
          .map((p) => p.pid),
      );
      expect(tree.size).toBeGreaterThanOrEqual(12);
      expect(listProcesses().filter((p) => p.cmdline === mark)).toHaveLength(3);
      await e2b.stop();
      expect(listProcesses().filter((p) => tree.has(p.pid) || p.cmdline === mark)).toEqual([]);
      expect(existsSync(root)).toBe(false);
      expect(e2b.sandboxes()).toEqual([]);
    });
  });
});
