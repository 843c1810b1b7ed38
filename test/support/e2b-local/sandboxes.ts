/**
 * The sandboxes of the local E2B service: each one's record (template, metadata, envVars, lease, access
 * token), its runtime (sandbox-runtime.ts) and envd services, and its lease: at `endAt` it is killed
 * (processes killed, directory removed) and forgotten, as E2B does when a sandbox times out.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { chmod, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

import { FilesHandler } from './envd-files';
import { FilesystemService } from './envd-filesystem';
import { ProcessService } from './envd-process';
import { DEFAULT_USER } from './envd-users';
import { type Flavor, type Interpreter, loadCreateInterpreter } from './interpreter-loader';
import { processEnvironment } from './sandbox-env';
import { SandboxRuntime } from './sandbox-runtime';

/** The envd version the service reports (the SDK gates features on it). */
export const ENVD_VERSION = '0.5.7';

/** Node's longest timer; longer leases re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface CreateRequest {
  readonly templateId: string;
  readonly timeoutS: number;
  readonly metadata: Record<string, string>;
  readonly envVars: Record<string, string>;
  /** Whether envd requires the access token (the SDK's `secure`, true by default). */
  readonly secure: boolean;
}

function newSandboxId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return `i${[...randomBytes(19)].map((b) => alphabet[b % alphabet.length]).join('')}`;
}

export class LocalSandbox {
  readonly startedAt = new Date();
  endAt: Date;
  /** Whether envd and the interpreter are unreachable (the sandbox itself runs on). */
  envdCut = false;
  readonly processes: ProcessService;
  readonly filesystem: FilesystemService;
  readonly files: FilesHandler;
  /** Responses in flight for this sandbox's envd or interpreter, destroyed when it becomes unreachable. */
  private readonly inflight = new Set<ServerResponse>();
  private interpreter: Promise<Interpreter> | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly id: string,
    readonly request: CreateRequest,
    readonly dir: string,
    readonly runtime: SandboxRuntime,
    readonly accessToken: string | undefined,
    private readonly flavor: Flavor,
  ) {
    this.endAt = new Date(this.startedAt.getTime() + request.timeoutS * 1000);
    this.processes = new ProcessService(runtime, request.envVars);
    this.filesystem = new FilesystemService(runtime);
    this.files = new FilesHandler(runtime, accessToken);
  }

  get templateId(): string {
    return this.request.templateId;
  }

  get metadata(): Record<string, string> {
    return this.request.metadata;
  }

  /** Code-interpreter templates have the interpreter; `base...` templates have none. */
  get hasInterpreter(): boolean {
    return !this.templateId.startsWith('base');
  }

  /** The sandbox's interpreter, started on first use. */
  interpreterOf(): Promise<Interpreter> {
    this.interpreter ??= loadCreateInterpreter().then((create) => create(this.runtime.spawn, { flavor: this.flavor }));
    return this.interpreter;
  }

  /** Counts `res` as in flight until it closes. */
  track(res: ServerResponse): void {
    this.inflight.add(res);
    res.on('close', () => this.inflight.delete(res));
  }

  /** Drops every connection in flight for this sandbox, as a dead route does. */
  dropConnections(): void {
    for (const res of this.inflight) res.destroy();
    this.inflight.clear();
  }

  /** (Re)arms the lease for `endAt`; `expire` runs at the end. */
  armLease(expire: () => void): void {
    if (this.leaseTimer !== undefined) clearTimeout(this.leaseTimer);
    const remaining = this.endAt.getTime() - Date.now();
    this.leaseTimer = setTimeout(
      () => (remaining > MAX_TIMER_MS ? this.armLease(expire) : expire()),
      Math.max(0, Math.min(remaining, MAX_TIMER_MS)),
    );
    this.leaseTimer.unref();
  }

  /** Kills everything in the sandbox and removes its directory. */
  async terminate(): Promise<void> {
    if (this.leaseTimer !== undefined) clearTimeout(this.leaseTimer);
    this.dropConnections();
    this.processes.dispose();
    const interpreter = this.interpreter;
    if (interpreter !== undefined) {
      const stopped = interpreter.then((i) => i.stop()).catch(() => undefined);
      await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
    }
    await this.runtime.kill();
    await rm(this.dir, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** The live sandboxes, by id. */
export class SandboxRegistry {
  private readonly live = new Map<string, LocalSandbox>();
  private readonly terminating = new Set<Promise<void>>();

  constructor(
    private readonly root: string,
    private readonly flavor: Flavor,
  ) {}

  async create(request: CreateRequest): Promise<LocalSandbox> {
    const id = newSandboxId();
    const dir = join(this.root, id);
    await mkdir(join(dir, 'home', 'user'), { recursive: true });
    await mkdir(join(dir, 'tmp'), { recursive: true });
    await chmod(join(dir, 'tmp'), 0o1777);
    let runtime: SandboxRuntime;
    try {
      runtime = await SandboxRuntime.start({
        sandboxId: id,
        dir,
        root: this.root,
        baseEnv: processEnvironment(DEFAULT_USER, request.envVars),
      });
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
    const sandbox = new LocalSandbox(
      id,
      request,
      dir,
      runtime,
      request.secure ? randomBytes(24).toString('hex') : undefined,
      this.flavor,
    );
    this.live.set(id, sandbox);
    sandbox.armLease(() => void this.kill(id));
    // A sandbox whose namespace died on its own (the agent crashed, say) is gone, as after an OOM kill.
    runtime.onDeath(() => void this.kill(id));
    return sandbox;
  }

  get(id: string): LocalSandbox | undefined {
    return this.live.get(id);
  }

  all(): LocalSandbox[] {
    return [...this.live.values()];
  }

  /** Moves the lease's end to now + `timeoutS`; `onlyExtend` keeps a later end (connect). */
  setTimeout(sandbox: LocalSandbox, timeoutS: number, onlyExtend = false): void {
    const endAt = new Date(Date.now() + timeoutS * 1000);
    if (onlyExtend && endAt <= sandbox.endAt) return;
    sandbox.endAt = endAt;
    sandbox.armLease(() => void this.kill(sandbox.id));
  }

  /** Forgets the sandbox at once, then kills it; false when there was none. */
  async kill(id: string): Promise<boolean> {
    const sandbox = this.live.get(id);
    if (sandbox === undefined) return false;
    this.live.delete(id);
    const done = sandbox.terminate();
    this.terminating.add(done);
    try {
      await done;
    } finally {
      this.terminating.delete(done);
    }
    return true;
  }

  /** Kills every sandbox and waits for those already dying. */
  async killAll(): Promise<void> {
    await Promise.all([...this.live.keys()].map((id) => this.kill(id)));
    await Promise.all([...this.terminating]);
  }
}
