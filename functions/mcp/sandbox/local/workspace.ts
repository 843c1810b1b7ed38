/**
 * A session's workspace on the host, and the confinement of every path a tool names to it.
 * The sandbox sees `home` as its working directory (`/home/user` under bubblewrap).
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, realpath, rm } from 'node:fs/promises';
import { dirname, isAbsolute, join, posix, sep } from 'node:path';

import { AppError, toErrnoCode } from '../../errors';
import { hashTag } from '../../hash-tag';
import type { Logger } from '../../log';
import { releaseUid, workspaceUid } from './sandbox-users';
import { chownTrees, removeInheritedState } from './workspace-copy';
import { openWorkspaceDisk, removeWorkspaceDisk, type WorkspaceDisk } from './workspace-disk';

/** Where a session's files live on the host. */
export interface Workspace {
  /** The session's directory: holds `home` and `tmp`. */
  readonly dir: string;
  /** The working directory (host path). */
  readonly home: string;
  /** The sandbox's `/tmp` (host path). */
  readonly tmp: string;
  /** The working directory as sandboxed processes see it. */
  readonly workdir: string;
  /** Owner of the files when the server drops privileges for the sandbox; `undefined` otherwise. */
  readonly owner: { uid: number; gid: number } | undefined;
  /**
   * The size of the disk image `dir` is mounted from: the limit on all the workspace's files (workspace-disk.ts);
   * absent when none holds.
   */
  readonly diskLimitBytes?: number;
  /** That image, held while the workspace is open here: `release` it when the sandbox is let go; absent without one. */
  readonly disk?: WorkspaceDisk;
}

/** The working directory's path inside a bubblewrap sandbox. */
export const BWRAP_WORKDIR = '/home/user';

/** A directory name for a session that does not reveal the session id. */
export function toWorkspaceName(sessionKey: string): string {
  return `mcp-sandbox-${hashTag(sessionKey, 32)}`;
}

export interface CreateWorkspaceOptions {
  root: string;
  sessionKey: string;
  /** True when processes see the workspace at `/home/user` (bubblewrap). */
  virtualHome: boolean;
  /** True when the sandbox runs as a user of its own (the server is root): allocated in sandbox-users.ts. */
  sandboxUser: boolean;
  /**
   * The size of a new workspace's disk image (LOCAL_SANDBOX_DISK_MB, when images work here); absent: a plain directory.
   */
  diskBytes?: number;
  /** Where a disk image that could not be let go is reported. @default SILENT_LOGGER */
  logger?: Logger;
  /**
   * The workspace's files were just copied from another sandbox's (`copyWorkspace`, workspace-copy.ts): what the
   * server kept for that sandbox goes, and the new sandbox's user gets every file. Only on the first open after
   * the copy. @default false
   */
  forked?: boolean;
}

/**
 * Creates (or re-opens) the workspace of `sessionKey`. Its directory stays the server's (mode 0711) so
 * that the sandbox user cannot replace `home` or `tmp` with a symlink; those two are the sandbox user's, 0700.
 * With `diskBytes`, a new workspace's directory is the root of a disk image of that size; an image made
 * earlier (and let go since, or before a host restart) is mounted again whatever `diskBytes` is
 * (workspace-disk.ts). A fork (`forked`) gets a uid of its own, never its source's.
 */
export async function createWorkspace({
  root,
  sessionKey,
  virtualHome,
  sandboxUser,
  diskBytes,
  logger,
  forked = false,
}: CreateWorkspaceOptions): Promise<Workspace> {
  const dir = join(root, toWorkspaceName(sessionKey));
  const home = join(dir, 'home');
  const tmp = join(dir, 'tmp');
  await mkdir(dir, { recursive: true, mode: 0o711 });
  // Before anything is put in it: the uid record, home and tmp live on the image.
  const disk = await openWorkspaceDisk(dir, { limitBytes: diskBytes, logger });
  try {
    // Before a uid is claimed: the source's uid record, id, last-used marker and logs are not this sandbox's.
    if (forked) await removeInheritedState(dir);
    const uid = sandboxUser ? await workspaceUid(root, dir) : undefined;
    const owner = uid === undefined ? undefined : { uid, gid: uid };
    for (const path of [home, tmp]) {
      await mkdir(path, { mode: 0o700 }).catch((err: unknown) => {
        if (toErrnoCode(err) !== 'EEXIST') throw err;
      });
      const handle = await open(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      try {
        if (owner !== undefined) await handle.chown(owner.uid, owner.gid);
      } finally {
        await handle.close();
      }
    }
    // The copied files are still the source's user's. Nothing runs in a fork before it is opened, so nothing can
    // swap a name under this walk, and chown -P -h never follows a symlink anyway.
    if (forked && owner !== undefined) await chownTrees([home, tmp], owner);
    return {
      dir,
      home,
      tmp,
      workdir: virtualHome ? BWRAP_WORKDIR : home,
      owner,
      ...(disk === undefined ? {} : { diskLimitBytes: disk.limitBytes, disk }),
    };
  } catch (err: unknown) {
    // No sandbox will have it: its mount goes now, not at the next start-up.
    await disk?.release();
    throw err;
  }
}

/**
 * Deletes the workspace and everything in it (its disk image unmounted and deleted, when it has one, and its hold
 * let go), and gives its user back (once nothing runs as it any more).
 */
export async function removeWorkspace(ws: Pick<Workspace, 'dir' | 'owner' | 'disk'>): Promise<void> {
  await removeWorkspaceDisk(ws.dir, ws.disk);
  await rm(ws.dir, { recursive: true, force: true, maxRetries: 3 });
  if (ws.owner !== undefined) await releaseUid(dirname(ws.dir), ws.owner.uid);
}

/** A path resolved inside the workspace. */
export interface ResolvedPath {
  /** The path on the host. */
  readonly hostPath: string;
  /** The path as the sandbox sees it (what results report). */
  readonly sandboxPath: string;
}

/** A tool's path placed in the workspace by its text alone (no file system looked at). */
export interface WorkspacePath extends ResolvedPath {
  /** Its names below the working directory (empty for the working directory itself). */
  readonly parts: readonly string[];
}

/**
 * Places a tool's path (relative to the working directory, or absolute under it) in the workspace by its
 * text, refusing NUL bytes, `..` escapes and absolute paths elsewhere. Symlinks are the walker's business
 * (beneath.ts), which never lets the kernel resolve a name the sandbox controls.
 */
export function toWorkspacePath(ws: Workspace, path: string): WorkspacePath {
  if (path.includes('\0')) throw new AppError('invalid_input', 'Path contains a NUL byte.');
  const virtual = posix.normalize(isAbsolute(path) ? path : posix.join(ws.workdir, path));
  const rel = posix.relative(ws.workdir, virtual);
  if (rel.startsWith('..') || isAbsolute(rel)) {
    throw new AppError(
      'invalid_input',
      `Path "${path}" is outside the sandbox's working directory ${ws.workdir}; use a relative path or one ` +
        `under ${ws.workdir}.`,
    );
  }
  const parts = rel === '' ? [] : rel.split('/');
  return {
    parts,
    hostPath: join(ws.home, ...parts),
    sandboxPath: rel === '' ? ws.workdir : posix.join(ws.workdir, rel),
  };
}

/**
 * Resolves a working directory for a command: placed by its text, then checked not to lead out through a
 * symlink. Only for a `cwd` (which the sandboxed process itself enters, with its own rights, under
 * bubblewrap); file tools go through beneath.ts instead.
 */
export async function resolveInWorkspace(ws: Workspace, path: string): Promise<ResolvedPath> {
  const { hostPath, sandboxPath } = toWorkspacePath(ws, path);
  await assertNoEscape(ws, hostPath, path);
  return { hostPath, sandboxPath };
}

async function assertNoEscape(ws: Workspace, hostPath: string, shown: string): Promise<void> {
  const homeReal = await realpath(ws.home);
  // Walk up to the deepest part of the path that exists and check where it really leads.
  let probe = hostPath;
  for (;;) {
    try {
      const real = await realpath(probe);
      if (real !== homeReal && !real.startsWith(homeReal + sep)) {
        throw new AppError(
          'invalid_input',
          `Path "${shown}" leads outside the sandbox's working directory through a symbolic link.`,
        );
      }
      break;
    } catch (err: unknown) {
      if (err instanceof AppError) throw err;
      const stat = await lstat(probe).catch(() => undefined);
      if (stat?.isSymbolicLink()) {
        throw new AppError(
          'invalid_input',
          `Path "${shown}" is a symbolic link that points nowhere; refusing to follow it.`,
        );
      }
      const parent = dirname(probe);
      if (parent === probe) break;
      probe = parent;
    }
  }
}
