/**
 * envd's users and paths: the user a request acts as (HTTP Basic `user:` in `Authorization` for RPCs, the
 * `username` query parameter for /files, `user` by default), and envd's path expansion (`~` and relative
 * paths against that user's home; absolute paths as given).
 */
import { posix } from 'node:path';

import { ConnectError } from './connect';

export interface SandboxUser {
  readonly name: string;
  readonly home: string;
}

/** The users of an E2B template: `user` (the default) and `root`. */
const USERS: Readonly<Record<string, SandboxUser>> = {
  user: { name: 'user', home: '/home/user' },
  root: { name: 'root', home: '/root' },
};

export const DEFAULT_USER = USERS.user!;

/** The user `name` (default user when absent), undefined when the sandbox has no such user. */
export function userNamed(name: string | undefined): SandboxUser | undefined {
  if (name === undefined || name === '') return DEFAULT_USER;
  return Object.hasOwn(USERS, name) ? USERS[name] : undefined;
}

/** The user of an RPC, from `Authorization: Basic base64(name:)`; unauthenticated for an unknown name. */
export function userOfAuthorization(header: string | undefined): SandboxUser {
  if (header === undefined || !/^basic /i.test(header)) return DEFAULT_USER;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const name = decoded.includes(':') ? decoded.slice(0, decoded.indexOf(':')) : decoded;
  const user = userNamed(name);
  if (user === undefined) throw new ConnectError('unauthenticated', `invalid username: '${name}'`);
  return user;
}

/** envd's ExpandAndResolve: `~` and relative paths against the user's home; absolute paths unchanged. */
export function expandAndResolve(path: string, user: SandboxUser): string {
  let expanded = path;
  if (expanded.startsWith('~')) {
    if (expanded.length > 1 && expanded[1] !== '/') {
      throw new ConnectError(
        'invalid_argument',
        `failed to expand path '${path}' for user '${user.name}': cannot expand user-specific home dir`,
      );
    }
    expanded = posix.join(user.home, expanded.slice(1));
  }
  if (posix.isAbsolute(expanded)) return expanded;
  return posix.resolve(user.home, expanded);
}
