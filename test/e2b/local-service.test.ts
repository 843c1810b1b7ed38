/**
 * The local E2B service itself (test/support/e2b-local/), driven by the real `e2b` and `@e2b/code-interpreter`
 * SDKs: the control plane and its lease, commands run for real in each sandbox's own namespace, files as the
 * sandbox sees them (no way out to the host), envd becoming unreachable, and stop leaving no process behind.
 * One service for the file, few sandboxes.
 */
import { readFileSync, existsSync, writeFileSync, rmSync } from 'node:fs';
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
import { listProcesses, markedSleep, pollUntil, RUN_MARK, SETTLE_MS } from '../support/processes';
import { needs } from '../support/needs';

/** `pids` and all their descendants, from the parent pids in /proc. */
function descendants(pids: number[]): Set<number> {
  const parentOf = new Map<number, number>();
  for (const p of listProcesses()) {
    try {
      const stat = readFileSync(`/proc/${p.pid}/stat`, 'latin1');
      parentOf.set(p.pid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
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
      // Created without `timeoutMs`: the SDK sends no `timeout`, and the service's default applies.
      expect(creates.map((r) => r.body)).toContainEqual({
        templateID: 'code-interpreter-v1',
        metadata,
        envVars: { FROM_CREATE: 'created' },
      });
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

    it('holds a request scripted NO_ANSWER unanswered until the client gives up, or until the service stops', async () => {
      const hanging = await startLocalE2B();
      try {
        const hangingOpts = { apiKey: hanging.apiKey, apiUrl: hanging.url, sandboxUrl: hanging.url };
        hanging.fault('create', NO_ANSWER);
        // The SDK's own request timer gives up on it (a fetch aborted by its timeout).
        await expect(Sandbox.create('base', { ...hangingOpts, requestTimeoutMs: 300 })).rejects.toMatchObject({
          name: 'TimeoutError',
        });
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
        await hanging.stop();
        await expect(held).rejects.toThrow();
      } finally {
        await hanging.stop();
      }
    });

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
      const cat = await sbx.commands.run('cat', { background: true, stdin: true, onStdout: (d) => void (seen += d) });
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
          `ln -sfn / root-link && ln -sfn ${e2b.hostPath(other.sandboxId, '/home/user')} other-link && ln -sfn ${hostTmpFile} host-link`,
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
      } finally {
        await alibaba.stop();
      }
    });

    it('stops with no process left behind', async () => {
      const mark = markedSleep(304);
      await sbx.commands.run(mark, { background: true });
      await other.commands.run(mark, { background: true });
      const root = e2b.hostPath(sbx.sandboxId, '/home/user').split(`/${sbx.sandboxId}/`)[0]!;
      // bwrap (its command line names the root) and everything under it: the agents, the sleeps.
      const tree = descendants(
        listProcesses()
          .filter((p) => p.cmdline.includes(root))
          .map((p) => p.pid),
      );
      expect(tree.size).toBeGreaterThanOrEqual(8);
      expect(listProcesses().filter((p) => p.cmdline === mark)).toHaveLength(2);
      await e2b.stop();
      expect(listProcesses().filter((p) => tree.has(p.pid) || p.cmdline === mark)).toEqual([]);
      expect(existsSync(root)).toBe(false);
      expect(e2b.sandboxes()).toEqual([]);
    });
  });
});
