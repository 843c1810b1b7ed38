/**
 * Finds the host programs the local backend relies on, probes whether bubblewrap works here (and with how much
 * hardening), and reads the host's top-level layout.
 */
import { lstat, readlink } from 'node:fs/promises';

import { findProgram } from './find-program';
import { BWRAP_RO_DIRS, type BwrapHardening, hardeningArgs, type HostTools, NO_HARDENING } from './launch';
import { spawnGroup } from './process-group';
import { seccompProgram } from './seccomp';

/** Locates bwrap, prlimit and setpriv. */
export function findHostTools(): HostTools {
  return { bwrap: findProgram('bwrap'), prlimit: findProgram('prlimit'), setpriv: findProgram('setpriv') };
}

/** The directories bubblewrap shows that are symlinks on this host (merged /usr), with their targets. */
export async function findRootLinks(dirs: readonly string[] = BWRAP_RO_DIRS): Promise<Map<string, string>> {
  const links = new Map<string, string>();
  for (const dir of dirs) {
    const info = await lstat(dir).catch(() => undefined);
    if (info?.isSymbolicLink() === true) links.set(dir, await readlink(dir));
  }
  return links;
}

/**
 * Runs bubblewrap once, as the user sandboxes will run as, to see whether it can create namespaces here with
 * `hardening` (a seccomp program is handed over as it will be for every sandbox).
 */
export function probeBwrap(
  tools: HostTools,
  uid: number | undefined,
  hardening: BwrapHardening = NO_HARDENING,
): Promise<{ ok: boolean; detail: string }> {
  if (tools.bwrap === undefined) return Promise.resolve({ ok: false, detail: 'bwrap is not installed' });
  const argv: string[] = [];
  if (uid !== undefined && tools.setpriv !== undefined)
    argv.push(tools.setpriv, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--');
  argv.push(
    tools.bwrap,
    '--unshare-all',
    ...hardeningArgs(hardening),
    '--die-with-parent',
    '--ro-bind',
    '/',
    '/',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    'true',
  );
  const [file, ...args] = argv;
  return new Promise((resolve) => {
    const spec = {
      file: file ?? tools.bwrap ?? 'bwrap',
      args,
      env: { PATH: '/usr/bin:/bin' },
      cwd: '/',
      ...(hardening.seccomp === undefined ? {} : { seccomp: hardening.seccomp }),
    };
    const child = spawnGroup(spec, ['ignore', 'ignore', 'pipe']);
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.once('error', (err) => resolve({ ok: false, detail: err.message }));
    child.once('close', (code) =>
      resolve(
        code === 0
          ? { ok: true, detail: 'bubblewrap works' }
          : { ok: false, detail: stderr.trim().slice(0, 200) || `exit ${code}` },
      ),
    );
  });
}

/** What the bubblewrap probe found: whether it works here, what it says about it, and the hardening it works with. */
export interface HardeningProbe {
  readonly ok: boolean;
  readonly detail: string;
  readonly hardening: BwrapHardening;
}

/**
 * Probes bubblewrap with as much hardening as this host allows: no nested user namespaces and the seccomp
 * filter, else the filter alone, else none. The detail says which.
 */
export async function probeHardening(tools: HostTools, uid: number | undefined): Promise<HardeningProbe> {
  const seccomp = seccompProgram();
  const candidates: BwrapHardening[] = [
    { disableUserns: true, seccomp },
    { disableUserns: false, seccomp },
    NO_HARDENING,
  ];
  let last = { ok: false, detail: 'bwrap is not installed' };
  for (const hardening of candidates) {
    if (hardening !== NO_HARDENING && hardening.seccomp === undefined && !hardening.disableUserns) continue;
    last = await probeBwrap(tools, uid, hardening);
    if (last.ok) {
      const parts = [
        hardening.disableUserns ? 'nested user namespaces refused' : 'nested user namespaces allowed',
        hardening.seccomp === undefined ? `no seccomp filter (${process.arch})` : 'seccomp filter on',
      ];
      return { ok: true, detail: `${last.detail}; ${parts.join('; ')}`, hardening };
    }
    if (tools.bwrap === undefined) break;
  }
  return { ...last, hardening: NO_HARDENING };
}
