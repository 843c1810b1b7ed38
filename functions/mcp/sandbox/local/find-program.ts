/** Finding a program where sandboxed processes find it (their PATH). */
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';

/** Directories searched for host programs and interpreters (the sandbox's own PATH). */
export const SANDBOX_PATH_DIRS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** The absolute path of `name` in the sandbox's PATH, or `undefined`. */
export function findProgram(name: string): string | undefined {
  for (const dir of SANDBOX_PATH_DIRS) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
