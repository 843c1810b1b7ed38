/**
 * Whether E2B_STATE_DIR is on storage the instances share. On Function Compute a directory on the instance's own
 * disk (the root file system) is seen by no other instance and is lost with the instance: revocations and sleeping
 * sandboxes recorded there would be forgotten. The deploy CLI mounts a NAS for it (docs/deploy-fc.md, "Shared state
 * on NAS"); this check reports at start-up a function that was set up otherwise. Pure: the caller reads
 * /proc/self/mountinfo.
 */
import { posix } from 'node:path';

export interface MountOf {
  /** The mount point the directory lies under (the longest that contains it). */
  readonly mountPoint: string;
  /** Its file system type, e.g. nfs, nfs4, ext4, overlay. */
  readonly fsType: string;
}

/** mountinfo escapes space, tab, newline and backslash in paths as octal (\040). */
function unescapeMountPath(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/**
 * The mount `dir` lies under, from the text of /proc/self/mountinfo (proc(5): field 5 is the mount point, the file
 * system type follows the `-` separator); undefined when no line names one.
 */
export function mountOf(dir: string, mountinfo: string): MountOf | undefined {
  const path = posix.normalize(dir);
  let best: MountOf | undefined;
  for (const line of mountinfo.split('\n')) {
    const fields = line.trim().split(' ');
    const separator = fields.indexOf('-');
    const raw = fields[4];
    if (raw === undefined || separator < 0) continue;
    const mountPoint = unescapeMountPath(raw);
    const under = mountPoint === '/' || path === mountPoint || path.startsWith(`${mountPoint}/`);
    if (under && (best === undefined || mountPoint.length >= best.mountPoint.length))
      best = { mountPoint, fsType: fields[separator + 1] ?? 'unknown' };
  }
  return best;
}

/**
 * What to report of `stateDir` at start-up on FC: undefined when it is under a mount of its own, else why not.
 */
export function stateDirProblem(stateDir: string, mountinfo: string): string | undefined {
  const mount = mountOf(stateDir, mountinfo);
  if (mount !== undefined && mount.mountPoint !== '/') return undefined;
  return (
    `E2B_STATE_DIR=${stateDir} is on the instance's own disk${mount === undefined ? '' : ` (${mount.fsType} at /)`}, ` +
    'which no other instance sees and which goes with the instance: revocations and sleeping sandboxes recorded ' +
    'there are forgotten. Mount a NAS there (node scripts/deploy.js --nas; docs/deploy-fc.md, "Shared state on NAS")'
  );
}
