/**
 * The start-up probe of the cgroups this host lets the server use for its sandboxes (cgroups.ts): from the mounts
 * and the server's own groups, a parent group per hierarchy where one can be made and limited.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';

import { describeError, toErrnoCode } from '../../errors';
import {
  CHILD_NAME,
  type CgroupController,
  type CgroupFs,
  type CgroupLimits,
  type CgroupPlacement,
  CONTROLLERS,
  configure,
  HOST_FS,
  makeParent,
  parentGroupName,
  SandboxCgroups,
  words,
} from './cgroups';

export interface ProbeCgroupsOptions {
  /** LOCAL_SANDBOX_ROOT: names the parent group. */
  readonly root: string;
  readonly limits: CgroupLimits;
  /** The text of /proc/self/mountinfo. @default read here */
  readonly mountinfo?: string;
  /** The text of /proc/self/cgroup. @default read here */
  readonly selfCgroup?: string;
  readonly fs?: CgroupFs;
}

export interface CgroupProbe {
  /** `undefined` when no controller could be used. */
  readonly cgroups: SandboxCgroups | undefined;
  /** Why a controller is not used (one line each; empty when all are). */
  readonly problems: readonly string[];
}

/**
 * Finds the cgroups this host lets the server use: v2 first, v1 for the controllers v2 does not offer. A
 * controller counts only once a group was made under it and its limit written (then removed again). Removes
 * the empty children an earlier server left.
 */
export async function probeCgroups(options: ProbeCgroupsOptions): Promise<CgroupProbe> {
  const fs = options.fs ?? HOST_FS;
  const [mountinfo, selfCgroup] = await Promise.all([
    options.mountinfo ?? readFile('/proc/self/mountinfo', 'utf8').catch(() => ''),
    options.selfCgroup ?? readFile('/proc/self/cgroup', 'utf8').catch(() => ''),
  ]);
  const mounts = parseMountinfo(mountinfo);
  const own = parseSelfCgroup(selfCgroup);
  const name = parentGroupName(options.root);
  const problems: string[] = [];
  const placements: CgroupPlacement[] = [];

  const v2 = mounts.find((m) => m.fsType === 'cgroup2');
  if (v2 !== undefined) {
    const found = await placeV2(v2, own.get('') ?? '/', name, options.limits, fs);
    if (typeof found === 'string') problems.push(`cgroup v2 (${v2.mountPoint}): ${found}`);
    else placements.push(found);
  }
  for (const controller of CONTROLLERS) {
    if (placements.some((p) => p.controllers.includes(controller))) continue;
    const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes(controller));
    if (mount === undefined) {
      const why = v2 === undefined ? ' and no cgroup2 mount' : ' and not offered by cgroup v2';
      problems.push(`${controller}: no cgroup v1 hierarchy${why}`);
      continue;
    }
    const found = await placeV1(mount, own.get(controller) ?? '/', controller, name, options.limits, fs);
    if (typeof found === 'string') problems.push(`cgroup v1 ${controller} (${mount.mountPoint}): ${found}`);
    else {
      const shared = placements.findIndex((p) => p.version === 1 && p.parent === found.parent);
      if (shared === -1) placements.push(found);
      else placements[shared] = { ...found, controllers: [...(placements[shared]?.controllers ?? []), controller] };
    }
  }
  for (const placement of placements) await removeStaleChildren(placement.parent, fs);
  return {
    cgroups: placements.length === 0 ? undefined : new SandboxCgroups(placements, options.limits, fs),
    problems,
  };
}

interface Mount {
  readonly root: string;
  readonly mountPoint: string;
  readonly readOnly: boolean;
  readonly fsType: string;
  readonly superOptions: readonly string[];
}

/**
 * The mounts of /proc/self/mountinfo (`id parent dev root mountpoint options [optional…] - fstype source
 * superoptions`).
 */
function parseMountinfo(text: string): Mount[] {
  const unescaped = (field: string): string =>
    field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
  const mounts: Mount[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-', 6);
    if (dash === -1 || fields.length < dash + 3) continue;
    mounts.push({
      root: unescaped(fields[3] ?? '/'),
      mountPoint: unescaped(fields[4] ?? ''),
      readOnly: (fields[5] ?? '').split(',').includes('ro'),
      fsType: fields[dash + 1] ?? '',
      superOptions: (fields[dash + 3] ?? '').split(','),
    });
  }
  return mounts;
}

/** /proc/self/cgroup as controller → path (`''` for the v2 line `0::/path`). */
function parseSelfCgroup(text: string): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of text.split('\n')) {
    const [, controllers, ...rest] = line.split(':');
    if (controllers === undefined || rest.length === 0) continue;
    for (const controller of controllers.split(',')) paths.set(controller, rest.join(':'));
  }
  return paths;
}

/** The server's own group in `mount` (where it is visible there), then the mount's top: where a parent may go. */
function candidateBases(mount: Mount, ownPath: string): string[] {
  let below = '';
  if (!ownPath.split('/').includes('..')) {
    if (mount.root === '/') below = ownPath;
    else if (ownPath === mount.root || ownPath.startsWith(`${mount.root}/`)) below = ownPath.slice(mount.root.length);
  }
  const own = join(mount.mountPoint, below);
  return own === mount.mountPoint ? [own] : [own, mount.mountPoint];
}

async function placeV2(
  mount: Mount,
  ownPath: string,
  name: string,
  limits: CgroupLimits,
  fs: CgroupFs,
): Promise<CgroupPlacement | string> {
  if (mount.readOnly) return 'mounted read-only';
  let problem = 'no usable group';
  for (const base of candidateBases(mount, ownPath)) {
    const offered = words(await readFile(join(base, 'cgroup.controllers'), 'utf8').catch(() => ''));
    const controllers = CONTROLLERS.filter((c) => offered.includes(c));
    if (controllers.length === 0) {
      problem = `offers none of memory, pids, cpu (it has: ${offered.join(' ') || 'nothing'})`;
      continue;
    }
    try {
      const enabled = words(await readFile(join(base, 'cgroup.subtree_control'), 'utf8'));
      const missing = controllers.filter((c) => !enabled.includes(c));
      // A group with processes of its own cannot hand controllers down (EBUSY): then the next base is tried.
      if (missing.length > 0)
        await fs.write(join(base, 'cgroup.subtree_control'), missing.map((c) => `+${c}`).join(' '));
      const placement: CgroupPlacement = { version: 2, parent: join(base, name), controllers };
      await probePlacement(placement, limits, fs);
      return placement;
    } catch (err: unknown) {
      problem = `cannot make a limited group under ${base} (${toErrnoCode(err) ?? describeError(err)})`;
    }
  }
  return problem;
}

async function placeV1(
  mount: Mount,
  ownPath: string,
  controller: CgroupController,
  name: string,
  limits: CgroupLimits,
  fs: CgroupFs,
): Promise<CgroupPlacement | string> {
  if (mount.readOnly) return 'mounted read-only';
  let problem = 'no usable group';
  for (const base of candidateBases(mount, ownPath)) {
    const placement: CgroupPlacement = { version: 1, parent: join(base, name), controllers: [controller] };
    try {
      await probePlacement(placement, limits, fs);
      return placement;
    } catch (err: unknown) {
      problem = `cannot make a limited group under ${base} (${toErrnoCode(err) ?? describeError(err)})`;
    }
  }
  return problem;
}

/** Makes the parent and a child in it, sets the child's limits, and removes the child again. */
async function probePlacement(placement: CgroupPlacement, limits: CgroupLimits, fs: CgroupFs): Promise<void> {
  await makeParent(placement, fs);
  const probe = join(placement.parent, `probe-${process.pid}`);
  await fs.mkdir(probe).catch((err: unknown) => {
    if (toErrnoCode(err) !== 'EEXIST') throw err;
  });
  try {
    await configure(placement, probe, limits, fs);
  } finally {
    await fs.rmdir(probe).catch(() => undefined);
  }
}

/** Removes the empty children of `parent` (an earlier server's, or a probe's), then `parent` if it emptied. */
async function removeStaleChildren(parent: string, fs: CgroupFs): Promise<void> {
  const names = await readdir(parent, { withFileTypes: true }).catch(() => []);
  // A child that still has processes stays (EBUSY): they belong to a sandbox that may yet be re-attached.
  await Promise.all(
    names
      .filter((e) => e.isDirectory() && CHILD_NAME.test(e.name))
      .map((e) => fs.rmdir(join(parent, e.name)).catch(() => undefined)),
  );
  await fs.rmdir(parent).catch(() => undefined);
}
