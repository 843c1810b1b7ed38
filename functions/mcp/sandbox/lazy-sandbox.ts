/** A session's sandbox, created on first use; concurrent first uses share one creation. */
import type { Sandbox, SandboxOwner, SandboxProvider } from './types';

/** The handle tools get: the sandbox, created when a tool first needs it. */
export interface LazySandbox {
  /** The sandbox, creating it if needed. */
  get(): Promise<Sandbox>;
  /** The sandbox if it exists, without creating it. */
  current(): Sandbox | undefined;
  /** Kills the sandbox (if any); the next `get()` creates a fresh one. */
  kill(): Promise<void>;
}

/** Creates the lazy sandbox of `owner`. A sandbox found gone is replaced by a fresh one on the next `get()`. */
export function createLazySandbox(provider: SandboxProvider, owner: SandboxOwner): LazySandbox {
  let sandbox: Sandbox | undefined;
  let creating: Promise<Sandbox> | undefined;
  return {
    get() {
      if (sandbox?.isGone() === true) {
        // Best effort: if only the path to it failed, the old one would otherwise run on until its lease ends.
        void sandbox.kill().catch(() => undefined);
        sandbox = undefined;
      }
      if (sandbox !== undefined) return Promise.resolve(sandbox);
      creating ??= provider.create(owner).then(
        (created) => {
          sandbox = created;
          creating = undefined;
          return created;
        },
        (err: unknown) => {
          creating = undefined;
          throw err;
        },
      );
      return creating;
    },
    current: () => (sandbox?.isGone() === true ? undefined : sandbox),
    async kill() {
      const pending = creating;
      creating = undefined;
      const existing = sandbox ?? (await pending?.catch(() => undefined));
      sandbox = undefined;
      await existing?.kill();
    },
  };
}
