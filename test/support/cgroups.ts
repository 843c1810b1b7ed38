/**
 * The cgroups a local-backend server makes for its sandboxes (functions/mcp/sandbox/local/cgroups.ts), seen from
 * the tests: where they are, and removing what a server killed outright (SIGKILL) left of them, since no later
 * server with its (deleted) LOCAL_SANDBOX_ROOT will ever sweep them.
 */
import { existsSync, readdirSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';

import { parentGroupName } from '../../functions/mcp/sandbox/local/cgroups';

/**
 * The parent groups (one per hierarchy) that a server with LOCAL_SANDBOX_ROOT `root` has now: beneath this
 * process's own cgroup (servers the tests start inherit it), or at the top of a hierarchy.
 */
export function cgroupParentsOf(root: string): string[] {
  const name = parentGroupName(root);
  const own = new Map<string, string>();
  for (const line of readOrEmpty('/proc/self/cgroup').split('\n')) {
    const [, controllers, ...rest] = line.split(':');
    if (controllers !== undefined && rest.length > 0)
      for (const c of controllers.split(',')) own.set(c, rest.join(':'));
  }
  const found = new Set<string>();
  for (const line of readOrEmpty('/proc/self/mountinfo').split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-', 6);
    const fsType = fields[dash + 1];
    if (dash === -1 || (fsType !== 'cgroup' && fsType !== 'cgroup2')) continue;
    const mountRoot = fields[3] ?? '/';
    const mountPoint = fields[4] ?? '';
    const controllers = fsType === 'cgroup2' ? [''] : (fields[dash + 3] ?? '').split(',');
    const ownPath = controllers.map((c) => own.get(c)).find((p) => p !== undefined) ?? '/';
    const below = mountRoot === '/' ? ownPath : ownPath.startsWith(mountRoot) ? ownPath.slice(mountRoot.length) : '/';
    for (const base of [join(mountPoint, below), mountPoint]) {
      if (existsSync(join(base, name))) found.add(join(base, name));
    }
  }
  return [...found];
}

/**
 * Removes the groups of a server with LOCAL_SANDBOX_ROOT `root` that is gone (killed, say): kills what still runs
 * in them (its sandboxes' processes, on their way out), then removes them. Only for a root no other server uses.
 * Resolves with the groups that stayed (none, normally).
 */
export async function removeCgroupsOf(root: string, timeoutMs = 10_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left: string[] = [];
    for (const parent of cgroupParentsOf(root)) {
      for (const child of readdirSync(parent, { withFileTypes: true })) {
        if (!child.isDirectory()) continue;
        const dir = join(parent, child.name);
        for (const pid of readOrEmpty(join(dir, 'cgroup.procs')).split('\n').filter(Boolean)) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // gone
          }
        }
        if (!tryRmdir(dir)) left.push(dir);
      }
      if (!tryRmdir(parent)) left.push(parent);
    }
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function tryRmdir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch {
    return !existsSync(dir);
  }
}

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
