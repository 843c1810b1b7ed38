/**
 * envd's `filesystem.Filesystem` service for one sandbox (described by the SDK's descriptor in
 * node_modules/e2b/dist/index.js): Stat, ListDir (with depth), MakeDir, Move, Remove. Paths are expanded as
 * envd does (envd-users.ts) and every operation runs in the sandbox's agent, so paths and symlinks resolve in
 * the sandbox's view. Watching directories is not modelled (`unimplemented`).
 */
import { type CallContext, ConnectError, type ConnectService, isConnectCode } from './connect';
import { expandAndResolve, type SandboxUser, userOfAuthorization } from './envd-users';
import { intField, objectOf, stringField } from './proto-json';
import { AgentError, type SandboxRuntime } from './sandbox-runtime';

function userOf(ctx: CallContext): SandboxUser {
  const header = ctx.req.headers.authorization;
  return userOfAuthorization(Array.isArray(header) ? header[0] : header);
}

export class FilesystemService {
  constructor(private readonly runtime: SandboxRuntime) {}

  readonly service: ConnectService = {
    unary: {
      Stat: (message, ctx) => this.call('stat', { path: this.path(message, 'path', ctx) }),
      ListDir: (message, ctx) => {
        const depth = intField(objectOf(message), 'depth') ?? 0;
        return this.call('listDir', { path: this.path(message, 'path', ctx), depth: depth === 0 ? 1 : depth });
      },
      MakeDir: (message, ctx) => this.call('makeDir', { path: this.path(message, 'path', ctx) }),
      Move: (message, ctx) =>
        this.call('move', {
          source: this.path(message, 'source', ctx),
          destination: this.path(message, 'destination', ctx),
        }),
      Remove: (message, ctx) => this.call('remove', { path: this.path(message, 'path', ctx) }),
    },
    serverStream: {},
  };

  private path(message: unknown, name: string, ctx: CallContext): string {
    return expandAndResolve(stringField(objectOf(message), name) ?? '', userOf(ctx));
  }

  private async call(op: string, args: Record<string, unknown>): Promise<unknown> {
    try {
      return (await this.runtime.request({ t: op, ...args })).header.result;
    } catch (err) {
      if (err instanceof AgentError)
        throw new ConnectError(isConnectCode(err.code) ? err.code : 'internal', err.message);
      throw err;
    }
  }
}
