/**
 * Finding a path beneath a workspace's working directory the way the kernel's openat2(RESOLVE_IN_ROOT) would,
 * for a server that may be root while the sandbox user can swap any name for a symlink at any moment. Every
 * directory is opened from its parent's descriptor with O_NOFOLLOW, so no path is ever resolved by the kernel
 * past a name the sandbox controls; a symlink met on the way is read through the descriptor of the directory
 * holding it and followed by hand, as the sandbox sees it (absolute targets under the working directory, or
 * relative ones), and one that leads anywhere else is refused. Nothing is checked first and used later: a name
 * swapped between two steps makes the next step fail (ELOOP, ENOTDIR), never reach outside.
 */
import { constants, existsSync } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, readlink } from 'node:fs/promises';
import { join, posix } from 'node:path';

import { AppError, toErrnoCode } from '../../errors';
import type { Workspace } from './workspace';

/** Symlinks followed at most on one path (the kernel's own limit). */
const MAX_LINKS = 40;

/**
 * Linux names an open descriptor `/proc/self/fd/N`, a link that leads to the very file opened. Elsewhere
 * (macOS laptops) the host path stands in: racy, but there the server is not root and drops no privileges.
 */
const FD_LINKS = existsSync('/proc/self/fd');

/** An open directory beneath the working directory, and its host path (for messages and non-Linux hosts). */
export interface OpenDir {
  readonly handle: FileHandle;
  readonly hostPath: string;
}

/** A path that reaches `dir` itself, or the entry `name` inside it, through its descriptor. */
export function inside(dir: OpenDir, name?: string): string {
  const base = FD_LINKS ? `/proc/self/fd/${dir.handle.fd}` : dir.hostPath;
  return name === undefined ? base : join(base, name);
}

/** Where a path ends: the open directory that holds it and the name in it (not a symlink when looked at). */
export interface Located {
  readonly parent: OpenDir;
  /** The last name; `undefined` for the working directory itself. */
  readonly name: string | undefined;
  /** Whether the name exists (as anything but a symlink) when looked at. */
  readonly exists: boolean;
  /** Whether the last name came from following a symlink in the last place (a link to a missing file dangles). */
  readonly lastWasLink: boolean;
}

export interface LocateOptions {
  /** Create missing directories on the way (mode 0755, owned by the workspace's owner). */
  readonly createDirs?: boolean;
  /** The path as the tool was given it, for messages. */
  readonly shown: string;
}

const outside = (shown: string): AppError =>
  new AppError(
    'invalid_input',
    `Path "${shown}" leads outside the sandbox's working directory through a symbolic link.`,
  );

/** Opens a directory by a path that only the server controls (the working directory itself). */
async function openTrusted(hostPath: string): Promise<OpenDir> {
  return { handle: await open(hostPath, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW), hostPath };
}

/**
 * Walks `parts` (a path relative to the working directory, already free of leading `..`) beneath it. The
 * caller owns `parent.handle` and must close it.
 */
export async function locate(ws: Workspace, parts: readonly string[], options: LocateOptions): Promise<Located> {
  const chain: OpenDir[] = [await openTrusted(ws.home)];
  const closeAbove = async (keep: number): Promise<void> => {
    while (chain.length > keep) await chain.pop()?.handle.close();
  };
  try {
    const pending = [...parts];
    let links = 0;
    let lastWasLink = false;
    while (pending.length > 0) {
      const part = pending.shift() as string;
      if (part === '' || part === '.') continue;
      if (part === '..') {
        // Only a link's target can climb (the tool's path was normalized): never above the working directory.
        if (chain.length === 1) throw outside(options.shown);
        await closeAbove(chain.length - 1);
        continue;
      }
      const dir = chain[chain.length - 1] as OpenDir;
      const info = await lstat(inside(dir, part)).catch((err: unknown) => {
        if (toErrnoCode(err) === 'ENOENT') return undefined;
        throw err;
      });
      if (info?.isSymbolicLink() === true) {
        links += 1;
        if (links > MAX_LINKS)
          throw new AppError('invalid_input', `Path "${options.shown}" has too many levels of symbolic links.`);
        if (pending.length === 0) lastWasLink = true;
        const target = await readlink(inside(dir, part));
        if (posix.isAbsolute(target)) {
          // The sandbox's view: only targets under its working directory stay inside.
          const rel = posix.relative(ws.workdir, posix.normalize(target));
          if (rel.startsWith('..') || posix.isAbsolute(rel)) throw outside(options.shown);
          await closeAbove(1);
          pending.unshift(...rel.split('/'));
        } else {
          pending.unshift(...target.split('/'));
        }
        continue;
      }
      if (pending.length === 0) {
        const parent = chain.pop() as OpenDir;
        await closeAbove(0);
        return { parent, name: part, exists: info !== undefined, lastWasLink };
      }
      if (info === undefined) {
        if (options.createDirs !== true) throw Object.assign(new Error(`ENOENT: ${part}`), { code: 'ENOENT' });
        await mkdir(inside(dir, part), { mode: 0o755 }).catch((err: unknown) => {
          if (toErrnoCode(err) !== 'EEXIST') throw err;
        });
      }
      const child = {
        handle: await open(inside(dir, part), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW),
        hostPath: join(dir.hostPath, part),
      };
      chain.push(child);
      if (info === undefined && ws.owner !== undefined) await child.handle.chown(ws.owner.uid, ws.owner.gid);
    }
    // The working directory itself (or a link that leads back to it).
    const top = chain.pop() as OpenDir;
    await closeAbove(0);
    return { parent: top, name: undefined, exists: true, lastWasLink };
  } catch (err: unknown) {
    await closeAbove(0).catch(() => undefined);
    throw err;
  }
}
