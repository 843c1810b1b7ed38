import {
  buildLaunch,
  DEFAULT_PROCESS_LIMITS,
  ENTER_CGROUPS_SCRIPT,
  type LaunchOptions,
} from '../../../../functions/mcp/sandbox/local/launch';
import type { Workspace } from '../../../../functions/mcp/sandbox/local/workspace';

const ws: Workspace = {
  dir: '/r/ws',
  home: '/r/ws/home',
  tmp: '/r/ws/tmp',
  workdir: '/home/user',
  owner: { uid: 123456, gid: 123456 },
};
const base: LaunchOptions = {
  isolation: 'bwrap',
  workspace: ws,
  tools: { bwrap: '/usr/bin/bwrap', prlimit: '/usr/bin/prlimit', setpriv: '/usr/bin/setpriv' },
  limits: DEFAULT_PROCESS_LIMITS,
  allowNetwork: false,
  hiddenPaths: ['/etc/mcp/tokens'],
  extraReadOnlyDirs: [],
  argv: ['bash', '-c', 'echo hi'],
  cwd: '/home/user',
  env: { FOO: 'bar' },
};

describe('buildLaunch', () => {
  it('chains prlimit, setpriv and bubblewrap, with the workspace at /home/user and no network', () => {
    const spec = buildLaunch(base);
    const argv = [spec.file, ...spec.args];
    expect(argv.slice(0, 1)).toEqual(['/usr/bin/prlimit']);
    expect(argv).toContain(`--nproc=${DEFAULT_PROCESS_LIMITS.maxProcesses}`);
    expect(argv.join(' ')).toContain(
      '/usr/bin/setpriv --reuid=123456 --regid=123456 --clear-groups -- /usr/bin/bwrap --unshare-all',
    );
    expect(argv).not.toContain('--share-net');
    expect(argv.join(' ')).toContain('--bind /r/ws/home /home/user --bind /r/ws/tmp /tmp');
    expect(argv.join(' ')).toContain('--ro-bind-try /dev/null /etc/mcp/tokens');
    expect(argv.slice(-4)).toEqual(['--', 'bash', '-c', 'echo hi']);
  });

  it('makes the host’s top-level symlinks symlinks inside (merged /usr), never a second view of their target', () => {
    const argv = buildLaunch({
      ...base,
      rootLinks: new Map([
        ['/lib', 'usr/lib'],
        ['/bin', 'usr/bin'],
      ]),
    }).args.join(' ');
    expect(argv).toContain('--symlink usr/lib /lib');
    expect(argv).toContain('--symlink usr/bin /bin');
    expect(argv).not.toContain('--ro-bind-try /lib /lib');
    expect(argv).not.toContain('--ro-bind-try /bin /bin');
    expect(argv).toContain('--ro-bind-try /usr /usr');
    expect(argv).toContain('--ro-bind-try /sbin /sbin');
  });

  it('shares the network only when allowed', () => {
    expect(buildLaunch({ ...base, allowNetwork: true }).args).toContain('--share-net');
  });

  it('gives children a minimal environment plus the caller’s variables, nothing of the server', () => {
    const spec = buildLaunch(base);
    expect(Object.keys(spec.env).sort()).toEqual([
      'FOO',
      'HOME',
      'LANG',
      'MPLBACKEND',
      'PATH',
      'PYTHONUNBUFFERED',
      'TERM',
      'TMPDIR',
      'USER',
    ]);
    expect(spec.env).toMatchObject({ HOME: '/home/user', TMPDIR: '/tmp', FOO: 'bar' });
  });

  it('runs plain processes in the host workspace without isolation', () => {
    const spec = buildLaunch({
      ...base,
      isolation: 'none',
      workspace: { ...ws, workdir: ws.home, owner: undefined },
      cwd: '/r/ws/home',
    });
    expect(spec.args).not.toContain('--unshare-all');
    expect(spec.args).not.toContain('--reuid=123456');
    // Without a user of its own, a process limit would count the server user's processes too.
    expect(spec.args.some((a) => a.startsWith('--nproc'))).toBe(false);
    expect(spec.args).toContain('--nofile=4096');
    expect(spec.cwd).toBe('/r/ws/home');
    expect(spec.env).toMatchObject({ HOME: '/r/ws/home', TMPDIR: '/r/ws/tmp' });
  });

  it('enters the sandbox’s groups first, as the server, before rlimits, the sandbox user and bubblewrap', () => {
    const spec = buildLaunch({ ...base, cgroupProcs: ['/cg/memory/x/cgroup.procs', '/cg/pids/x/cgroup.procs'] });
    const argv = [spec.file, ...spec.args];
    expect(argv.slice(0, 8)).toEqual([
      '/bin/sh',
      '-c',
      ENTER_CGROUPS_SCRIPT,
      'sh',
      '/cg/memory/x/cgroup.procs',
      '/cg/pids/x/cgroup.procs',
      '--',
      '/usr/bin/prlimit',
    ]);
    expect(argv.indexOf('/usr/bin/setpriv')).toBeGreaterThan(argv.indexOf('/usr/bin/prlimit'));
    expect(argv.slice(-3)).toEqual(['bash', '-c', 'echo hi']);
    // Without groups (none on this host) there is no wrapper.
    expect(buildLaunch(base).file).toBe('/usr/bin/prlimit');
  });

  it('limits private memory per process (RLIMIT_DATA) only when asked to (no memory cgroup)', () => {
    expect(buildLaunch({ ...base, limits: { ...DEFAULT_PROCESS_LIMITS, maxDataBytes: 2 ** 30 } }).args).toContain(
      `--data=${2 ** 30}`,
    );
    expect(buildLaunch(base).args.some((a) => a.startsWith('--data'))).toBe(false);
  });
});
