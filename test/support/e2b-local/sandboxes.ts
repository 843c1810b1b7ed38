/**
 * The sandboxes of the local E2B service: each one's record (template, metadata, envVars, lifecycle, lease,
 * access token), its runtime (sandbox-runtime.ts) and envd services, its lease and its persistence.
 *
 * - At `endAt` a sandbox is killed (processes killed, directory removed) and forgotten, as E2B does when a
 *   sandbox times out; one created with `autoPause` is paused instead, keeping its memory unless it was created
 *   with `autoPauseMemory: false`.
 * - Paused with memory, every process in its namespace is frozen (SIGSTOP, sandbox-runtime.ts's `freeze`), the
 *   agent and the interpreter's kernels included, and a resume thaws them (SIGCONT): processes, their pids and
 *   Python's state live on. Paused without memory, the namespace is killed and the directory kept; a resume
 *   boots a fresh runtime on it (files survive; processes and the interpreter's state do not), as E2B cold-boots
 *   a filesystem-only snapshot.
 * - A paused sandbox's lease does not run: its `endAt` is the moment it paused (E2B keeps a paused sandbox until
 *   it is resumed or killed; this model reports the end of the lease it had, which is the pause), and a resume
 *   sets a new lease from the request's timeout.
 *
 * Each sandbox's network (sandbox-network.ts): its settings as created or last PUT, and its way out through the
 * agent's egress listener to the service's egress proxy; its trust bundle is written beside its directory before
 * each start of its namespace.
 *
 * Pause, resume, snapshot and kill of one sandbox run one at a time, in order.
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
import type { NetworkSettings } from './network-config';
import { processEnvironment } from './sandbox-env';
import { type EgressService, SandboxNetwork } from './sandbox-network';
import { SandboxRuntime } from './sandbox-runtime';
import { copySandboxFiles } from './snapshots';

/** The envd version the service reports (the SDK gates features on it). */
export const ENVD_VERSION = '0.5.7';

/** Node's longest timer; longer leases re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What a sandbox does at the end of its lease (NewSandbox's autoPause, autoPauseMemory, autoResume). */
export interface Lifecycle {
  readonly onTimeout: 'pause' | 'kill';
  /** Whether that pause keeps memory (`autoPauseMemory`, true unless false). */
  readonly keepMemory: boolean;
  /** `autoResume.enabled`: recorded and reported; traffic does not resume a paused sandbox here. */
  readonly autoResume: boolean;
}

export const KILL_ON_TIMEOUT: Lifecycle = Object.freeze({ onTimeout: 'kill', keepMemory: true, autoResume: false });

export interface CreateRequest {
  readonly templateId: string;
  /** The template's name as reported (`alias`); the template id by default. */
  readonly alias?: string;
  readonly timeoutS: number;
  readonly metadata: Record<string, string>;
  readonly envVars: Record<string, string>;
  /** Whether envd requires the access token (the SDK's `secure`, true by default). */
  readonly secure: boolean;
  readonly lifecycle: Lifecycle;
  /** A snapshot to start from: its files are copied in; it ran `baseTemplateId`. */
  readonly snapshot?: { readonly dir: string; readonly baseTemplateId: string };
  /** `allow_internet_access` and `network`. @default no settings given (everything but internal addresses) */
  readonly network?: NetworkSettings;
}

/** The sandbox was killed while the operation waited for its turn. */
export class SandboxGoneError extends Error {}

function newSandboxId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return `i${[...randomBytes(19)].map((b) => alphabet[b % alphabet.length]).join('')}`;
}

export class LocalSandbox {
  readonly startedAt = new Date();
  endAt: Date;
  state: 'running' | 'paused' = 'running';
  /** For a paused sandbox: whether its memory was kept (its processes frozen) or only its files. */
  pausedWithMemory: boolean | undefined;
  /** Set by the registry once the sandbox is forgotten: operations waiting for their turn give up. */
  killed = false;
  /** Whether envd and the interpreter are unreachable (the sandbox itself runs on). */
  envdCut = false;
  private currentRuntime!: SandboxRuntime;
  private processService!: ProcessService;
  private filesystemService!: FilesystemService;
  private filesHandler!: FilesHandler;
  /** Responses in flight for this sandbox's envd or interpreter, destroyed when it becomes unreachable. */
  private readonly inflight = new Set<ServerResponse>();
  private interpreter: Promise<Interpreter> | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private turn: Promise<unknown> = Promise.resolve();

  constructor(
    readonly id: string,
    readonly request: CreateRequest,
    readonly dir: string,
    runtime: SandboxRuntime,
    readonly accessToken: string | undefined,
    private readonly flavor: Flavor,
    readonly network: SandboxNetwork,
  ) {
    this.endAt = new Date(this.startedAt.getTime() + request.timeoutS * 1000);
    this.boot(runtime);
  }

  /** Puts envd's services on `runtime` (at creation, and on a resume that boots afresh). */
  boot(runtime: SandboxRuntime): void {
    this.currentRuntime = runtime;
    this.processService = new ProcessService(runtime, this.request.envVars);
    this.filesystemService = new FilesystemService(runtime);
    this.filesHandler = new FilesHandler(runtime, this.accessToken);
  }

  get runtime(): SandboxRuntime {
    return this.currentRuntime;
  }

  get processes(): ProcessService {
    return this.processService;
  }

  get filesystem(): FilesystemService {
    return this.filesystemService;
  }

  get files(): FilesHandler {
    return this.filesHandler;
  }

  get templateId(): string {
    return this.request.templateId;
  }

  get alias(): string {
    return this.request.alias ?? this.request.templateId;
  }

  get metadata(): Record<string, string> {
    return this.request.metadata;
  }

  get lifecycle(): Lifecycle {
    return this.request.lifecycle;
  }

  /** The template the sandbox's system comes from (a snapshot's source template for a sandbox made from one). */
  get baseTemplateId(): string {
    return this.request.snapshot?.baseTemplateId ?? this.templateId;
  }

  /** Code-interpreter templates have the interpreter; `base...` templates have none. */
  get hasInterpreter(): boolean {
    return !this.baseTemplateId.startsWith('base');
  }

  /** The sandbox's interpreter, started on first use. */
  interpreterOf(): Promise<Interpreter> {
    const spawn = this.runtime.spawn;
    this.interpreter ??= loadCreateInterpreter().then((create) => create(spawn, { flavor: this.flavor }));
    return this.interpreter;
  }

  /** Runs `operation` after the ones before it (pause, resume, snapshot, kill); SandboxGoneError once killed. */
  exclusive<T>(operation: () => Promise<T>, evenIfKilled = false): Promise<T> {
    const run = this.turn.then(() => {
      if (this.killed && !evenIfKilled) throw new SandboxGoneError(`sandbox ${this.id} was killed`);
      return operation();
    });
    this.turn = run.catch(() => undefined);
    return run;
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
    this.stopLease();
    const remaining = this.endAt.getTime() - Date.now();
    this.leaseTimer = setTimeout(
      () => (remaining > MAX_TIMER_MS ? this.armLease(expire) : expire()),
      Math.max(0, Math.min(remaining, MAX_TIMER_MS)),
    );
    this.leaseTimer.unref();
  }

  stopLease(): void {
    if (this.leaseTimer !== undefined) clearTimeout(this.leaseTimer);
    this.leaseTimer = undefined;
  }

  /** Stops the interpreter (if one was started) and forgets it; bounded, as its kernels may not answer. */
  async stopInterpreter(): Promise<void> {
    const interpreter = this.interpreter;
    this.interpreter = undefined;
    if (interpreter === undefined) return;
    const stopped = interpreter.then((i) => i.stop()).catch(() => undefined);
    await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
  }

  /** Kills everything in the sandbox and removes its directory. */
  async terminate(): Promise<void> {
    this.stopLease();
    this.dropConnections();
    this.processes.dispose();
    // Frozen, nothing in the namespace answers the interpreter's stop: the namespace goes first.
    if (this.state === 'paused') await this.runtime.kill();
    await this.stopInterpreter();
    await this.runtime.kill();
    await rm(this.dir, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** The live sandboxes, running or paused, by id. */
export class SandboxRegistry {
  private readonly live = new Map<string, LocalSandbox>();
  private readonly terminating = new Set<Promise<void>>();

  constructor(
    private readonly root: string,
    private readonly flavor: Flavor,
    private readonly egress: EgressService,
  ) {}

  /** A namespace for the sandbox: its trust bundle written (a new authority for its rules), then bwrap. */
  private async startRuntime(
    id: string,
    dir: string,
    envVars: Record<string, string>,
    network: SandboxNetwork,
  ): Promise<SandboxRuntime> {
    const binds = await network.launch();
    return SandboxRuntime.start({
      sandboxId: id,
      dir,
      root: this.root,
      baseEnv: processEnvironment(DEFAULT_USER, envVars),
      binds,
      onConnection: (connection) => network.serve(connection),
    });
  }

  /** Kills the sandbox when its current runtime dies on its own (the agent crashed, say), as after an OOM kill. */
  private watch(sandbox: LocalSandbox): void {
    const runtime = sandbox.runtime;
    runtime.onDeath(() => {
      if (sandbox.runtime === runtime && sandbox.state === 'running') void this.kill(sandbox.id);
    });
  }

  async create(request: CreateRequest): Promise<LocalSandbox> {
    const id = newSandboxId();
    const dir = join(this.root, id);
    const network = new SandboxNetwork(
      id,
      join(dir, 'egress-trust.pem'),
      request.network ?? { allowInternetAccess: null },
      this.egress,
    );
    let runtime: SandboxRuntime;
    try {
      await mkdir(join(dir, 'home', 'user'), { recursive: true });
      await mkdir(join(dir, 'tmp'), { recursive: true });
      await chmod(join(dir, 'tmp'), 0o1777);
      if (request.snapshot !== undefined) await copySandboxFiles(request.snapshot.dir, dir);
      runtime = await this.startRuntime(id, dir, request.envVars, network);
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
      network,
    );
    this.live.set(id, sandbox);
    sandbox.armLease(() => this.expire(sandbox));
    this.watch(sandbox);
    return sandbox;
  }

  get(id: string): LocalSandbox | undefined {
    return this.live.get(id);
  }

  all(): LocalSandbox[] {
    return [...this.live.values()];
  }

  /** The end of the lease: a pause for a sandbox created with autoPause (a kill if that fails), else a kill. */
  private expire(sandbox: LocalSandbox): void {
    if (sandbox.lifecycle.onTimeout === 'kill') {
      void this.kill(sandbox.id);
      return;
    }
    this.pause(sandbox, sandbox.lifecycle.keepMemory).catch((err: unknown) => {
      if (!(err instanceof SandboxGoneError)) void this.kill(sandbox.id);
    });
  }

  /** Moves the lease's end to now + `timeoutS`; `onlyExtend` keeps a later end (connect). */
  setTimeout(sandbox: LocalSandbox, timeoutS: number, onlyExtend = false): void {
    const endAt = new Date(Date.now() + timeoutS * 1000);
    if (onlyExtend && endAt <= sandbox.endAt) return;
    sandbox.endAt = endAt;
    sandbox.armLease(() => this.expire(sandbox));
  }

  /**
   * Pauses a running sandbox, with its memory (frozen) or only its files (namespace killed); false when it was
   * paused already. Connections in flight to it are dropped, as E2B drops them.
   */
  pause(sandbox: LocalSandbox, memory: boolean): Promise<boolean> {
    return sandbox.exclusive(async () => {
      if (sandbox.state === 'paused') return false;
      sandbox.state = 'paused';
      sandbox.pausedWithMemory = memory;
      sandbox.stopLease();
      sandbox.endAt = new Date();
      sandbox.dropConnections();
      if (memory) await sandbox.runtime.freeze();
      else await this.shutDown(sandbox);
      return true;
    });
  }

  /** Kills a paused sandbox's namespace, keeping its directory (the runtime's death is expected: not a kill). */
  private async shutDown(sandbox: LocalSandbox): Promise<void> {
    sandbox.processes.dispose();
    await sandbox.runtime.kill();
    await sandbox.stopInterpreter();
  }

  /**
   * Resumes a paused sandbox with a lease of `timeoutS` from now: its frozen processes thawed, or (paused without
   * memory, or `memory: false`, which cold-boots it whatever it kept) a fresh runtime on its directory. A running
   * sandbox only has its lease extended (as connect does); false then.
   */
  resume(sandbox: LocalSandbox, timeoutS: number, memory = true): Promise<boolean> {
    return sandbox.exclusive(async () => {
      if (sandbox.state === 'running') {
        this.setTimeout(sandbox, timeoutS, true);
        return false;
      }
      // A frozen namespace that died meanwhile (killed from outside) cold-boots too.
      if (sandbox.pausedWithMemory === true && memory && !sandbox.runtime.dead) sandbox.runtime.thaw();
      else {
        if (sandbox.pausedWithMemory === true) await this.shutDown(sandbox);
        sandbox.boot(await this.startRuntime(sandbox.id, sandbox.dir, sandbox.request.envVars, sandbox.network));
        this.watch(sandbox);
      }
      sandbox.state = 'running';
      sandbox.pausedWithMemory = undefined;
      this.setTimeout(sandbox, timeoutS);
      return true;
    });
  }

  /**
   * Replaces a running sandbox's network settings (a PUT): the next connections go by them. False when it is
   * paused (E2B updates running sandboxes only).
   */
  updateNetwork(sandbox: LocalSandbox, settings: NetworkSettings): Promise<boolean> {
    return sandbox.exclusive(async () => {
      if (sandbox.state !== 'running') return false;
      await sandbox.network.update(settings);
      return true;
    });
  }

  /**
   * Copies a running sandbox's files into `dir` for a snapshot, the sandbox frozen meanwhile (E2B pauses it
   * briefly) so that the copy is of one moment.
   */
  copyFiles(sandbox: LocalSandbox, dir: string): Promise<void> {
    return sandbox.exclusive(async () => {
      if (sandbox.state !== 'running') throw new SandboxGoneError(`sandbox ${sandbox.id} is not running`);
      await sandbox.runtime.freeze();
      try {
        await copySandboxFiles(sandbox.dir, dir);
      } finally {
        sandbox.runtime.thaw();
      }
    });
  }

  /** Forgets the sandbox at once (running or paused), then kills it; false when there was none. */
  async kill(id: string): Promise<boolean> {
    const sandbox = this.live.get(id);
    if (sandbox === undefined) return false;
    this.live.delete(id);
    sandbox.killed = true;
    sandbox.stopLease();
    sandbox.dropConnections();
    const done = sandbox.exclusive(() => sandbox.terminate(), true);
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
