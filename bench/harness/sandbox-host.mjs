// What a server's local sandboxes leave on the host, seen from /proc and /sys: the server's descendant processes
// (a running sandbox's bubblewrap, init and supervisor), the mounts and loop devices of disk images under a sandbox
// root, and removing such a root. Everything is counted under one server or one root, never globally: another
// benchmark or test may run beside this one. As test/support/disks.ts, without its TypeScript imports.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';

/** The pids of every descendant of `pid` (children, their children, ...); none where there is no /proc. */
export function descendantsOf(pid) {
  const parents = new Map();
  for (const name of existsSync('/proc') ? readdirSync('/proc') : []) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The name in parentheses may hold spaces and parentheses: the fields after the last `)` are fixed.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited meanwhile
    }
  }
  const found = new Set([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [child, parent] of parents) {
      if (found.has(parent) && !found.has(child)) {
        found.add(child);
        grew = true;
      }
    }
  }
  found.delete(pid);
  return [...found];
}

/** Mount points at or under `root`, deepest first. */
export function mountsUnder(root) {
  if (!existsSync('/proc/self/mountinfo')) return [];
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) =>
      (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_, octal) => String.fromCharCode(Number.parseInt(octal, 8))),
    )
    .filter((point) => point === root || point.startsWith(`${root}/`))
    .sort((a, b) => b.length - a.length);
}

/** Loop devices (`/dev/loopN`) whose backing file lies under `root`. */
export function loopDevicesUnder(root) {
  if (!existsSync('/sys/block')) return [];
  const found = [];
  for (const name of readdirSync('/sys/block').filter((n) => n.startsWith('loop'))) {
    try {
      if (readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim().startsWith(`${root}/`))
        found.push(`/dev/${name}`);
    } catch {
      // not attached
    }
  }
  return found;
}

/**
 * Unmounts everything under `root` (lazily), detaches the loop devices of files under it and deletes it; a few
 * passes a moment apart, since a mount, a device or a file of a process that is just ending may be let go of
 * meanwhile. Stop the server first. What it could not remove is said on stderr (a clean-up in a `finally` must not
 * hide the error that got there).
 */
export async function removeRootWithDisks(root) {
  for (let pass = 0; pass < 5; pass += 1) {
    if (pass > 0) await new Promise((resolve) => setTimeout(resolve, 200));
    for (const point of mountsUnder(root)) quietly('umount', ['-l', point]);
    for (const device of loopDevicesUnder(root)) quietly('losetup', ['-d', device]);
    try {
      rmSync(root, { recursive: true, force: true });
    } catch {
      // EBUSY or ENOTEMPTY: mounted under, or written to, meanwhile
    }
    if (!existsSync(root) && loopDevicesUnder(root).length === 0) return;
  }
  process.stderr.write(
    `[bench] could not remove ${root}: mounts [${mountsUnder(root)}], loop devices [${loopDevicesUnder(root)}]\n`,
  );
}

function quietly(command, args) {
  try {
    execFileSync(command, args, { stdio: 'pipe' });
  } catch {
    // gone meanwhile, or not ours to remove
  }
}
