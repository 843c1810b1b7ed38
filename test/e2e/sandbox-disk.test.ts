/**
 * The local sandbox's disk limit through the bundle (LOCAL_SANDBOX_DISK_MB=64): each workspace lives on an ext4
 * image of that size, loop-mounted at its directory. A write past it fails inside the sandbox (home and /tmp
 * together), the tool results name the limit, the host pays at most the image, the server and other sessions go
 * on, DELETE takes the mount, the loop device and the image away, and a restarted server finds the files again.
 * No mount or loop device outlives the server that made it: a SIGTERMed one unmounts what it let go, and a start-up
 * releases what a SIGKILLed one left, never what a live server on the same root holds.
 * Needs root and loop devices (CI); elsewhere it says plainly that it was skipped.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { connectClient, type TestClient, textOf, type ToolResult } from '../support/clients';
import { loopDevicesSettledUnder, loopDevicesUnder, mountsUnder, removeRootWithDisks } from '../support/disks';
import { pollUntil, SETTLE_MS } from '../support/processes';
import {
  findFreePort,
  makeSandboxRoot,
  startServer,
  type StartedServer,
  stopAllServers,
  workspacesIn,
} from '../support/server';
import { needs } from '../support/needs';

const TOKEN = 'e2e-disk-token-0123456789abcdef';
const SECRET = 'e2e-disk-secret-0123456789abcdef0123456789';
const MIB = 2 ** 20;
const ENV = { MCP_AUTH_TOKENS: TOKEN, MCP_SESSION_SECRET: SECRET, LOCAL_SANDBOX_DISK_MB: '64' };
/** What every result about a full disk starts with. */
const FULL = /The sandbox's disk is full \(limit 64 MiB, LOCAL_SANDBOX_DISK_MB\)/;

const describeWithDisks = needs('disk images').describe;

interface CommandOutput {
  exit_code: number | null;
  stdout: string;
  stderr: string;
  disk_full?: { disk_limit_bytes: number };
}
const outputOf = (result: ToolResult): CommandOutput => result.structuredContent as unknown as CommandOutput;

needs('bubblewrap', 'disk images').describe('the local sandbox’s disk limit (LOCAL_SANDBOX_DISK_MB=64)', () => {
  let root: string;
  let port: number;
  let server: StartedServer;
  let client: TestClient;
  /** The workspace directory of `client` on the host. */
  let dir: string;
  const image = (workspace: string): string => join(root, '.disks', `${workspace.split('/').pop() ?? ''}.img`);
  const allocated = (workspace: string): number => statSync(image(workspace)).blocks * 512;
  const run = async (command: string, on: TestClient = client): Promise<ToolResult> =>
    on.callTool('run_command', { command, timeout_ms: 120_000 });

  beforeAll(async () => {
    root = makeSandboxRoot();
    port = await findFreePort();
    server = await startServer({ env: ENV, sandboxRoot: root, port });
    client = await connectClient('v2', server.url, { token: TOKEN });
    expect((await client.callTool('write_file', { path: 'mark/here.txt', content: 'client' })).isError).toBeFalsy();
    const name = workspacesIn(root).find((ws) => existsSync(join(root, ws, 'home', 'mark', 'here.txt')));
    if (name === undefined) throw new Error('the client’s workspace was not found');
    dir = join(root, name);
  });
  afterAll(async () => {
    await client?.close();
    await stopAllServers();
    removeRootWithDisks(root);
    // Nothing of these tests outlives them, failed or not.
    expect(await loopDevicesSettledUnder(root)).toEqual([]);
  });
  /** Stops `which` with `signal` and waits for it to exit. */
  const stop = async (which: StartedServer, signal: NodeJS.Signals): Promise<void> => {
    const exited = new Promise((resolve) => which.child.once('exit', resolve));
    which.child.kill(signal);
    await exited;
  };
  /** The workspace directory whose home holds `marker`. */
  const workspaceWith = (marker: string): string => {
    const name = workspacesIn(root).find((ws) => existsSync(join(root, ws, 'home', marker)));
    if (name === undefined) throw new Error(`no mounted workspace holds ${marker}`);
    return join(root, name);
  };

  it('mounts the workspace on its own image and reports the limit (sandbox_status)', async () => {
    expect(mountsUnder(root)).toEqual([dir]);
    expect(statSync(image(dir)).size).toBe(64 * MIB);
    const status = await client.callTool('sandbox_status');
    expect(status.structuredContent?.limits).toMatchObject({
      disk_bytes: { value: 64 * MIB, enforced_by: 'ext4 image' },
    });
    // What the file system keeps for itself (lost+found) is beside the working directory, never in it.
    const listed = await client.callTool('list_files', { path: '/home/user', include_hidden: true });
    expect(JSON.stringify(listed.structuredContent)).not.toContain('lost+found');
  });

  it(
    'fails fallocate, head -c and dd past the limit inside the sandbox, names the limit, and the host pays at most ' +
      '64 MiB',
    async () => {
      const fallocate = await run('fallocate -l 200M big');
      expect(outputOf(fallocate).exit_code).not.toBe(0);
      expect(outputOf(fallocate).stderr).toMatch(/No space left on device/);
      expect(textOf(fallocate)).toMatch(FULL);
      expect(outputOf(fallocate).disk_full).toEqual({ disk_limit_bytes: 64 * MIB });
      expect(allocated(dir)).toBeLessThanOrEqual(64 * MIB);

      // Real bytes this time, in home and then in /tmp: the two share the one limit.
      const head = await run('rm -f big; head -c 200M /dev/zero > filler; echo "head exit $?"');
      expect(outputOf(head).stdout).toMatch(/head exit 1/);
      expect(outputOf(head).stderr).toMatch(/No space left on device/);
      expect(textOf(head)).toMatch(FULL);
      expect(allocated(dir)).toBeLessThanOrEqual(64 * MIB);

      const dd = await run('rm -f filler; head -c 30M /dev/zero > half; dd if=/dev/zero of=/tmp/more bs=1M count=60');
      expect(outputOf(dd).exit_code).not.toBe(0);
      expect(outputOf(dd).stderr).toMatch(/No space left on device/);
      expect(textOf(dd)).toMatch(FULL);
      expect(allocated(dir)).toBeLessThanOrEqual(64 * MIB);
      // Nothing went around the image: the root's own file system holds next to nothing beside it.
      expect(
        Number(execFileSync('du', ['-skx', '--exclude=.disks', root], { encoding: 'utf8' }).split('\t')[0]) * 1024,
      ).toBeLessThan(64 * MIB);
    },
  );

  it(
    'gives write_file a clear error at the limit, ' + 'keeps serving others, and writes again once files are deleted',
    async () => {
      // The disk is still full (30 MB in home, the rest in /tmp).
      const written = await client.callTool('write_file', { path: 'more.bin', content: 'x'.repeat(2 * MIB) });
      expect(written.isError).toBe(true);
      expect(textOf(written)).toMatch(new RegExp(`^${FULL.source}; delete files`));
      const edited = await client.callTool('edit_file', {
        path: 'mark/here.txt',
        old_string: 'client',
        new_string: 'y'.repeat(2 * MIB),
      });
      expect(edited.isError).toBe(true);
      expect(textOf(edited)).toMatch(FULL);
      // A write that found the disk full leaves the file as it was (the new part is written first, and taken back).
      expect((await client.callTool('read_file', { path: 'mark/here.txt' })).structuredContent).toMatchObject({
        content: 'client',
      });

      // Another session is not touched by this one's full disk, and the server answers as ever.
      const other = await connectClient('v2', server.url, { token: TOKEN });
      expect(
        (await other.callTool('write_file', { path: 'fits.bin', content: 'z'.repeat(2 * MIB) })).isError,
      ).toBeFalsy();
      expect(outputOf(await run('wc -c < fits.bin', other)).stdout.trim()).toBe(String(2 * MIB));
      expect((await fetch(`${server.origin}/health`)).status).toBe(200);
      await other.terminate();

      const freed = await run('rm -f half /tmp/more; echo ok');
      expect(outputOf(freed).disk_full).toBeUndefined();
      expect(textOf(freed)).not.toMatch(FULL);
      expect(
        (await client.callTool('write_file', { path: 'more.bin', content: 'x'.repeat(2 * MIB) })).isError,
      ).toBeFalsy();
    },
  );

  it(
    'unmounts every workspace and frees its loop device when SIGTERMed (the image stays); the next server mounts ' +
      'it again for its session',
    async () => {
      expect(mountsUnder(root)).toEqual([dir]);
      await stop(server, 'SIGTERM');
      expect(mountsUnder(root)).toEqual([]);
      expect(await loopDevicesSettledUnder(root)).toEqual([]);
      expect(statSync(image(dir)).size).toBe(64 * MIB);
      server = await startServer({ env: ENV, sandboxRoot: root, port });
      expect((await client.callTool('read_file', { path: 'mark/here.txt' })).structuredContent).toMatchObject({
        content: 'client',
      });
      expect(mountsUnder(root)).toEqual([dir]);
      expect(loopDevicesUnder(root)).toHaveLength(1);
    },
  );

  it(
    'releases at start-up what a SIGKILLed server left mounted, ' + 'never what a live server on the same root holds',
    async () => {
      // A second server on the root, live, with a session whose workspace it has mounted.
      const sibling = await startServer({ env: ENV, sandboxRoot: root });
      const other = await connectClient('v2', sibling.url, { token: TOKEN });
      expect((await other.callTool('write_file', { path: 'sibling.txt', content: 'sibling' })).isError).toBeFalsy();
      const otherDir = workspaceWith('sibling.txt');
      // Killed outright: nothing could unmount its workspace, which keeps its mount and its loop device.
      await stop(server, 'SIGKILL');
      expect(mountsUnder(root).sort()).toEqual([dir, otherDir].sort());

      server = await startServer({ env: ENV, sandboxRoot: root, port });
      // No request needed: the start-up releases it (before any workspace is opened), and then says so.
      const released = (): Array<Record<string, unknown>> =>
        server.logs().filter((line) => line.msg === 'released the workspace disks of servers that are gone');
      expect(await pollUntil(released, (lines) => lines.length > 0, SETTLE_MS)).toEqual([
        expect.objectContaining({ unmounted: 1 }),
      ]);
      // (The start-up's own probe, right after, mounts a tiny image in .disks for a moment.)
      expect(mountsUnder(root).filter((point) => !point.startsWith(join(root, '.disks')))).toEqual([otherDir]);
      expect(await loopDevicesSettledUnder(root, 1)).toEqual([expect.stringContaining(image(otherDir))]);
      // The live server's session goes on, on its own mount; the killed server's comes back to its files.
      expect((await other.callTool('read_file', { path: 'sibling.txt' })).structuredContent).toMatchObject({
        content: 'sibling',
      });
      expect((await client.callTool('read_file', { path: 'mark/here.txt' })).structuredContent).toMatchObject({
        content: 'client',
      });
      expect(mountsUnder(root).sort()).toEqual([dir, otherDir].sort());
      await other.terminate();
      await sibling.stop();
      expect(mountsUnder(root)).toEqual([dir]);
    },
  );

  it('keeps the files when the host restarts (nothing mounted, the image in place) and mounts them once', async () => {
    await stop(server, 'SIGKILL');
    execFileSync('umount', [dir]);
    expect(readdirSync(dir)).toEqual([]);
    server = await startServer({ env: ENV, sandboxRoot: root, port });
    expect((await client.callTool('read_file', { path: 'mark/here.txt' })).structuredContent).toMatchObject({
      content: 'client',
    });
    expect(mountsUnder(root).filter((point) => point === dir)).toHaveLength(1);
    expect(outputOf(await run('wc -c < more.bin')).stdout.trim()).toBe(String(2 * MIB));
  });

  it('unmounts the workspace, frees its loop device and deletes its image when the session is deleted', async () => {
    const before = workspacesIn(root);
    const session = await connectClient('v2', server.url, { token: TOKEN });
    // A background process still running at DELETE: stopped first, so nothing holds the mount.
    expect(
      (await session.callTool('run_command', { command: 'sleep 600 > /tmp/held', background: true })).isError,
    ).toBeFalsy();
    const name = workspacesIn(root).find((ws) => !before.includes(ws)) ?? '';
    expect(mountsUnder(root)).toContain(join(root, name));
    const devicesBefore = loopDevicesUnder(root).length;
    await session.terminate();
    expect(mountsUnder(root)).not.toContain(join(root, name));
    expect(existsSync(join(root, name))).toBe(false);
    expect(existsSync(image(name))).toBe(false);
    // An autoclear loop device is detached by the kernel after its last close, asynchronously: wait for it to settle.
    expect(await loopDevicesSettledUnder(root, devicesBefore - 1)).toHaveLength(devicesBefore - 1);

    await client.terminate();
    expect(mountsUnder(root)).toEqual([]);
    expect(await loopDevicesSettledUnder(root)).toEqual([]);
    expect(readdirSync(join(root, '.disks'))).toEqual([]);
  });
});

describeWithDisks('a server SIGTERMed without a configured secret (LOCAL_SANDBOX_DISK_MB=64)', () => {
  afterAll(() => stopAllServers());

  it('destroys its sandboxes, images and all: nothing stays mounted or attached under its root', async () => {
    const server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN, LOCAL_SANDBOX_DISK_MB: '64' } });
    const root = server.sandboxRoot;
    const client = await connectClient('v2', server.url, { token: TOKEN });
    expect((await client.callTool('write_file', { path: 'gone.txt', content: 'gone' })).isError).toBeFalsy();
    expect(mountsUnder(root)).toHaveLength(1);
    const exited = new Promise((resolve) => server.child.once('exit', resolve));
    server.child.kill('SIGTERM');
    await exited;
    // Nobody could come back to them (the secret was this process's own).
    expect(mountsUnder(root)).toEqual([]);
    expect(await loopDevicesSettledUnder(root)).toEqual([]);
    expect(readdirSync(join(root, '.disks'))).toEqual([]);
    expect(workspacesIn(root)).toEqual([]);
    await client.close().catch(() => undefined);
  });
});
