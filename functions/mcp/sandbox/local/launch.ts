/**
 * How a sandbox's supervisor is started (supervisor.ts; every other process of the sandbox is forked from it,
 * inheriting all of this): its sandbox's cgroups entered first (a tiny shell wrapper, when the host offers
 * them), rlimits (prlimit), a per-session user (setpriv, when the server is root), bubblewrap when isolation
 * is on, and a minimal environment. Pure: builds argv and env only.
 */
import { BWRAP_WORKDIR, type Workspace } from './workspace';

/** Host programs the launcher uses; absent ones are skipped (with a start-up warning elsewhere). */
export interface HostTools {
  readonly bwrap?: string;
  readonly prlimit?: string;
  readonly setpriv?: string;
}

/** Resource limits applied to every sandboxed process tree. */
export interface ProcessLimits {
  /**
   * Processes the sandbox user may run at once (RLIMIT_NPROC; only when sandboxes have their own user). @default 512
   */
  readonly maxProcesses: number;
  /** Open files per process (RLIMIT_NOFILE). @default 4096 */
  readonly maxOpenFiles: number;
  /** Largest file a process may write, in bytes (RLIMIT_FSIZE). @default 2 GiB */
  readonly maxFileBytes: number;
  /**
   * Private writable memory per process, in bytes (RLIMIT_DATA): the memory limit where no memory cgroup holds
   * one. Unlike RLIMIT_AS it ignores reserved address space, so Java and V8 still start. @default none
   */
  readonly maxDataBytes?: number;
}

export const DEFAULT_PROCESS_LIMITS: ProcessLimits = Object.freeze({
  maxProcesses: 512,
  maxOpenFiles: 4096,
  maxFileBytes: 2 * 1024 * 1024 * 1024,
});

/**
 * What hardens bubblewrap beyond its namespaces, as far as this host allows (found by the start-up probe):
 * no nested user namespaces (`--disable-userns`, bubblewrap 0.8+) and the seccomp filter of seccomp.ts.
 */
export interface BwrapHardening {
  readonly disableUserns: boolean;
  /** The filter program, passed to bubblewrap on SECCOMP_FD. */
  readonly seccomp: Buffer | undefined;
}

export const NO_HARDENING: BwrapHardening = Object.freeze({ disableUserns: false, seccomp: undefined });

/** The descriptor the seccomp program reaches bubblewrap on (a pipe the spawner fills). */
export const SECCOMP_FD = 9;

/** bubblewrap's hardening arguments. */
export function hardeningArgs(hardening: BwrapHardening): string[] {
  return [
    ...(hardening.disableUserns ? ['--unshare-user', '--disable-userns'] : []),
    ...(hardening.seccomp === undefined ? [] : ['--seccomp', String(SECCOMP_FD)]),
  ];
}

/**
 * Host directories made visible (read-only) inside bubblewrap. Those that are symlinks on the host (`/lib` →
 * `usr/lib` on a merged-/usr system) are made the same symlinks inside: bound on their own they would be a second
 * view of their target, where a file masked under the target (the token file) shows unmasked.
 */
export const BWRAP_RO_DIRS: readonly string[] = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/etc',
  '/opt',
];

/**
 * Writes its own pid to each `cgroup.procs` file named before `--`, then becomes the rest of its arguments: the
 * process is in its sandbox's groups before anything the sandbox controls runs, so no fork escapes them. A
 * group it cannot enter stops the launch (exit 125) rather than run the process unlimited.
 */
export const ENTER_CGROUPS_SCRIPT =
  'while [ "$1" != -- ]; do echo $$ > "$1" || { echo "sandbox: cannot enter $1" >&2; exit 125; }; shift; ' +
  'done; shift; exec "$@"';

export interface LaunchOptions {
  isolation: 'bwrap' | 'none';
  workspace: Workspace;
  tools: HostTools;
  limits: ProcessLimits;
  /** Network access under bubblewrap (always on without it). */
  allowNetwork: boolean;
  /** Host files to hide inside bubblewrap (the token file), by their real paths. */
  hiddenPaths: readonly string[];
  /**
   * Which of BWRAP_RO_DIRS are symlinks on this host, and their targets (host-tools.ts `findRootLinks`). @default none
   */
  rootLinks?: ReadonlyMap<string, string>;
  /** What hardens bubblewrap here. @default none */
  hardening?: BwrapHardening;
  /** Extra read-only host directories (an interpreter's install prefix). */
  extraReadOnlyDirs: readonly string[];
  /** Host files bound read-only at a path inside, over what is there (the egress trust bundle). @default none */
  readOnlyFiles?: readonly (readonly [string, string])[];
  /** The program and its arguments, as the sandbox sees them. */
  argv: readonly string[];
  /** Working directory as the sandbox sees it. */
  cwd: string;
  /** Variables beyond the minimal base environment. */
  env: Readonly<Record<string, string>>;
  /** The `cgroup.procs` files of the sandbox's groups, entered first (cgroups.ts). @default none */
  cgroupProcs?: readonly string[];
}

/**
 * What every supervisor of this host is launched with, the same for each of its sandboxes: the host's findings
 * (host-profile.ts) and the settings.
 */
export interface SandboxLaunch {
  readonly isolation: 'bwrap' | 'none';
  readonly tools: HostTools;
  readonly limits: ProcessLimits;
  /** Network access under bubblewrap (always on without it). */
  readonly allowNetwork: boolean;
  /** Host files to hide inside bubblewrap (the token file), by their real paths. */
  readonly hiddenPaths: readonly string[];
  /** Which of BWRAP_RO_DIRS are symlinks on this host, and their targets. */
  readonly rootLinks: ReadonlyMap<string, string>;
  readonly hardening: BwrapHardening;
  /** Python, for run_code and the sandbox's supervisor (LOCAL_SANDBOX_PYTHON). */
  readonly python: string;
}

/** A ready `spawn` call. */
export interface LaunchSpec {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Record<string, string>;
  /** Host working directory for `spawn`. */
  readonly cwd: string;
  /** A seccomp program to hand the child on SECCOMP_FD. */
  readonly seccomp?: Buffer;
}

/** The environment every sandboxed process starts from: nothing of the server's own. */
export function toBaseEnv(ws: Workspace, isolation: 'bwrap' | 'none'): Record<string, string> {
  return {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: ws.workdir,
    TMPDIR: isolation === 'bwrap' ? '/tmp' : ws.tmp,
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    USER: 'user',
    PYTHONUNBUFFERED: '1',
    MPLBACKEND: 'Agg',
  };
}

/** Builds the argv and environment that start `argv` inside the sandbox. */
export function buildLaunch(options: LaunchOptions): LaunchSpec {
  const { isolation, workspace: ws, tools, limits } = options;
  const env = { ...toBaseEnv(ws, isolation), ...options.env };
  const argv: string[] = [];
  // As the server (root), before rlimits and the sandbox's user: entering a group needs the rights to it.
  if (options.cgroupProcs !== undefined && options.cgroupProcs.length > 0)
    argv.push('/bin/sh', '-c', ENTER_CGROUPS_SCRIPT, 'sh', ...options.cgroupProcs, '--');
  if (tools.prlimit !== undefined) {
    argv.push(tools.prlimit);
    // RLIMIT_NPROC counts every process of the real user: only a sandbox-owned user can be given one.
    if (ws.owner !== undefined) argv.push(`--nproc=${limits.maxProcesses}`);
    if (limits.maxDataBytes !== undefined) argv.push(`--data=${limits.maxDataBytes}`);
    argv.push(`--nofile=${limits.maxOpenFiles}`, `--fsize=${limits.maxFileBytes}`, '--core=0', '--');
  }
  if (ws.owner !== undefined && tools.setpriv !== undefined) {
    argv.push(tools.setpriv, `--reuid=${ws.owner.uid}`, `--regid=${ws.owner.gid}`, '--clear-groups', '--');
  }
  if (isolation === 'bwrap' && tools.bwrap !== undefined) {
    const hardening = options.hardening ?? NO_HARDENING;
    argv.push(tools.bwrap, '--unshare-all', ...hardeningArgs(hardening));
    if (options.allowNetwork) argv.push('--share-net');
    argv.push('--die-with-parent', '--hostname', 'sandbox');
    const links = options.rootLinks ?? new Map<string, string>();
    for (const dir of [...BWRAP_RO_DIRS, ...options.extraReadOnlyDirs]) {
      const target = links.get(dir);
      if (target === undefined) argv.push('--ro-bind-try', dir, dir);
      else argv.push('--symlink', target, dir);
    }
    for (const hidden of options.hiddenPaths) argv.push('--ro-bind-try', '/dev/null', hidden);
    for (const [file, inside] of options.readOnlyFiles ?? []) argv.push('--ro-bind', file, inside);
    argv.push('--proc', '/proc', '--dev', '/dev', '--bind', ws.home, BWRAP_WORKDIR, '--bind', ws.tmp, '/tmp');
    argv.push('--chdir', options.cwd, '--');
    argv.push(...options.argv);
    const [file, ...args] = argv;
    return {
      file: file ?? tools.bwrap,
      args,
      env,
      cwd: ws.home,
      ...(hardening.seccomp === undefined ? {} : { seccomp: hardening.seccomp }),
    };
  }
  argv.push(...options.argv);
  const [file, ...args] = argv;
  return { file: file ?? 'false', args, env, cwd: options.cwd };
}
