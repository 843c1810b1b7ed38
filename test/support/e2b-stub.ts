/**
 * An in-memory stand-in for the E2B SDK, typed against the SDK's own exports (through `E2BSdk` and
 * `E2BSandboxApi`): when the SDK changes shape, this file stops compiling. Errors are the SDK's real
 * classes, so the adapter's `instanceof` mapping is exercised as in production.
 */
import type { E2BEgressOptions } from '../../functions/mcp/egress/e2b-network';
import * as e2b from 'e2b';
import type { SandboxConnectOpts } from 'e2b';

import { SILENT_LOGGER } from '../../functions/mcp/log';
import { createE2BSandboxProvider } from '../../functions/mcp/sandbox/e2b/provider';
import type { Clock } from '../../functions/mcp/clock';
import type { SandboxProvider } from '../../functions/mcp/sandbox/types';
import type { ExecuteResult, ExecutionOutcome } from '../../functions/mcp/sandbox/e2b/execute';
import type { E2BCreateOptions, E2BSandboxApi, E2BSdk, FoundSandbox } from '../../functions/mcp/sandbox/e2b/sdk';
import type { CodeError } from '../../functions/mcp/sandbox/types';

type StartOpts = Parameters<E2BSandboxApi['startCommand']>[1];
type RunCodeOpts = Parameters<E2BSandboxApi['runCode']>[1];

/** What a scripted execution prints and returns; the stub hands each piece to the call's callbacks. */
export interface ScriptedExecution {
  results?: ExecuteResult[];
  logs?: { stdout?: string[]; stderr?: string[] };
  error?: CodeError;
}

/** What a scripted command does. */
export interface CommandScript {
  stdout?: string;
  stderr?: string;
  exitCode?: number;
  /** Never finishes on its own (until killed). */
  hang?: boolean;
  /** Finishes when this settles (or when killed): a call the test holds open. */
  until?: Promise<unknown>;
}

/** One stub sandbox: files in a map, commands and code answered by scripts, calls recorded. */
export class StubSandbox implements E2BSandboxApi {
  readonly files = new Map<string, Uint8Array>();
  readonly dirs = new Set<string>(['/', '/home', '/home/user', '/tmp']);
  readonly commands: Array<{ cmd: string; opts: StartOpts }> = [];
  readonly setTimeouts: number[] = [];
  /** Pids stopped through E2B's own kill (SIGKILL to that process only). */
  readonly killedPids: number[] = [];
  /** What was sent to commands' stdin, by pid. */
  readonly stdinWrites: Array<[number, string]> = [];
  /** Pids stopped by a `kill -TERM` command inside the sandbox (the whole group). */
  readonly terminatedPids: number[] = [];
  killed = false;
  /** `paused` after a pause, until a connect resumes it; `memory`: whether the pause kept memory. */
  state: 'running' | 'paused' = 'running';
  pausedWithMemory: boolean | undefined;
  /** The metadata it was created with, its template and lifecycle. */
  metadata: Record<string, string> = {};
  template = '';
  lifecycle: E2BCreateOptions['lifecycle'];
  startedAtMs = 0;
  /** Thrown by the next operation (then cleared). */
  failNext: Error | undefined;
  /** Thrown by every operation from now on. */
  failAlways: Error | undefined;
  command: (cmd: string) => CommandScript = () => ({ exitCode: 0 });
  code: (code: string, opts: RunCodeOpts) => Promise<ScriptedExecution> = async () => ({});

  constructor(readonly sandboxId: string) {}

  private check(): void {
    const err = this.failNext ?? this.failAlways;
    this.failNext = undefined;
    if (err !== undefined) throw err;
  }

  async runCode(code: string, opts: RunCodeOpts): Promise<ExecutionOutcome> {
    this.check();
    const execution = await this.code(code, opts);
    // As execute.ts does: each piece goes to its callback as it arrives; only the error comes back.
    for (const line of execution.logs?.stdout ?? []) opts.onStdout?.(line);
    for (const line of execution.logs?.stderr ?? []) opts.onStderr?.(line);
    for (const result of execution.results ?? []) opts.onResult?.(result);
    return execution.error === undefined ? {} : { error: execution.error };
  }

  /** What `kill -TERM <pid>` inside the sandbox would stop. */
  private readonly running = new Map<number, () => void>();

  async startCommand(cmd: string, opts: StartOpts) {
    this.check();
    this.commands.push({ cmd, opts });
    const pid = this.commands.length;
    const signalled = /^kill -TERM (\d+)/.exec(cmd);
    if (signalled?.[1] !== undefined) this.running.get(Number(signalled[1]))?.();
    const script = signalled === null ? this.command(cmd) : { exitCode: 0 };
    let release: (() => void) | undefined;
    const finished = new Promise<void>((resolve) => {
      release = resolve;
      if (script.until !== undefined) void script.until.finally(resolve);
      else if (script.hang !== true) setImmediate(resolve);
    });
    this.running.set(pid, () => {
      killedHere = true;
      this.terminatedPids.push(pid);
      release?.();
    });
    if (script.stdout !== undefined) opts.onStdout?.(script.stdout);
    if (script.stderr !== undefined) opts.onStderr?.(script.stderr);
    let killedHere = false;
    return {
      pid,
      wait: async (): Promise<e2b.CommandResult> => {
        await finished;
        const result = {
          exitCode: killedHere ? 137 : (script.exitCode ?? 0),
          stdout: script.stdout ?? '',
          stderr: script.stderr ?? '',
        };
        if (result.exitCode !== 0) throw new e2b.CommandExitError(result);
        return result;
      },
      kill: async () => {
        killedHere = true;
        this.killedPids.push(pid);
        release?.();
        return true;
      },
      sendStdin: async (data: string | Uint8Array) => {
        this.stdinWrites.push([pid, typeof data === 'string' ? data : Buffer.from(data).toString()]);
      },
    };
  }

  async readFile(path: string, maxBytes: number): Promise<Uint8Array> {
    this.check();
    const data = this.files.get(path);
    if (data === undefined) throw new e2b.FileNotFoundError(`file ${path} not found`);
    return data.subarray(0, maxBytes + 1);
  }

  async writeFile(path: string, data: ArrayBuffer): Promise<unknown> {
    this.check();
    this.files.set(path, new Uint8Array(data));
    return { name: path.split('/').pop() ?? '', path };
  }

  async readStream(path: string): Promise<ReadableStream<Uint8Array>> {
    this.check();
    const data = this.files.get(path);
    if (data === undefined) throw new e2b.FileNotFoundError(`file ${path} not found`);
    return new Blob([data]).stream();
  }

  async writeStream(path: string, body: ReadableStream<Uint8Array>): Promise<unknown> {
    this.check();
    const data = new Uint8Array(await new Response(body).arrayBuffer());
    this.files.set(path, data);
    return { name: path.split('/').pop() ?? '', path };
  }

  async rename(from: string, to: string): Promise<unknown> {
    this.check();
    const data = this.files.get(from);
    if (data === undefined) throw new e2b.FileNotFoundError(`file ${from} not found`);
    this.files.delete(from);
    this.files.set(to, data);
    return { name: to.split('/').pop() ?? '', path: to };
  }

  async remove(path: string): Promise<void> {
    this.check();
    this.files.delete(path);
  }

  /** What `signedFileUrl` answers (a stub sandbox is not `secure` unless a test says so). */
  signedUrls: ((path: string, mode: 'download' | 'upload', expiresS: number) => string) | undefined;

  async signedFileUrl(path: string, mode: 'download' | 'upload', expiresS: number): Promise<string | undefined> {
    this.check();
    return this.signedUrls?.(path, mode, expiresS);
  }

  async listFiles(path: string, depth: number): Promise<e2b.EntryInfo[]> {
    this.check();
    const prefix = path.endsWith('/') ? path : `${path}/`;
    const entries: e2b.EntryInfo[] = [];
    for (const dir of this.dirs) {
      const rel = dir.startsWith(prefix) ? dir.slice(prefix.length) : '';
      if (rel !== '' && rel.split('/').length <= depth) entries.push(this.entry(dir, e2b.FileType.DIR, 4096));
    }
    for (const [file, data] of this.files) {
      const rel = file.startsWith(prefix) ? file.slice(prefix.length) : '';
      if (rel !== '' && rel.split('/').length <= depth) entries.push(this.entry(file, e2b.FileType.FILE, data.length));
    }
    return entries;
  }

  async getInfo(path: string): Promise<e2b.EntryInfo> {
    this.check();
    if (this.dirs.has(path)) return this.entry(path, e2b.FileType.DIR, 4096);
    const data = this.files.get(path);
    if (data === undefined) throw new e2b.FileNotFoundError(`path ${path} not found`);
    return this.entry(path, e2b.FileType.FILE, data.length);
  }

  async exists(path: string): Promise<boolean> {
    this.check();
    return this.dirs.has(path) || this.files.has(path);
  }

  async setTimeout(timeoutMs: number): Promise<void> {
    this.check();
    this.setTimeouts.push(timeoutMs);
    this.endAtMs = this.nowMs() + timeoutMs;
  }

  /** The lease end, as E2B would report it; set by the SDK stub at creation and by setTimeout. */
  endAtMs = 0;
  nowMs: () => number = () => Date.now();

  getHost(port: number): string {
    return `${port}-${this.sandboxId}.e2b.test`;
  }

  async leaseEnd(): Promise<Date> {
    this.check();
    return new Date(this.endAtMs);
  }

  async kill(): Promise<unknown> {
    this.killed = true;
    return true;
  }

  private entry(path: string, type: e2b.FileType, size: number): e2b.EntryInfo {
    return {
      name: path.split('/').pop() ?? '',
      type,
      path,
      size,
      mode: 0o644,
      permissions: '-rw-r--r--',
      owner: 'user',
      group: 'user',
      modifiedTime: new Date('2026-01-02T03:04:05Z'),
    };
  }
}

/** A stub SDK: `create` answers from `createScript` (errors to throw first), records its options. */
export class StubSdk implements E2BSdk {
  readonly errors = e2b;
  readonly created: Array<{ template: string; opts: E2BCreateOptions; at: number }> = [];
  readonly sandboxes: StubSandbox[] = [];
  /** Errors thrown by the next creates, in order. */
  createFailures: Error[] = [];
  /** Pauses asked for: the sandbox and whether with memory. */
  readonly pauses: Array<{ sandboxId: string; keepMemory: boolean }> = [];
  /** Snapshots made, by id: the sandbox copied. */
  readonly snapshots = new Map<string, string>();
  /** False: the listing answers 404, as Alibaba Cloud's service does. */
  listing = true;
  /** What the service refuses (400): memory snapshots, or sleeping at all. */
  refuses: 'nothing' | 'memory' | 'sleep' = 'nothing';
  /** Called on each new sandbox, to script it. */
  onSandbox: (sandbox: StubSandbox) => void = () => undefined;

  constructor(private readonly clock: Clock) {}

  /** What `findByMetadata` was asked, and what the stub "E2B" knows: sandboxes by their metadata. */
  readonly lookups: Array<Record<string, string>> = [];
  readonly connects: string[] = [];

  async findByMetadata(metadata: Record<string, string>, _opts?: unknown, max = 1000): Promise<FoundSandbox[]> {
    this.lookups.push(metadata);
    if (!this.listing) throw Object.assign(new e2b.SandboxError('404: Not Found'), { statusCode: 404 });
    return this.sandboxes
      .filter((sandbox) => !sandbox.killed && Object.entries(metadata).every(([k, v]) => sandbox.metadata[k] === v))
      .slice(0, max)
      .map((sandbox) => ({
        sandboxId: sandbox.sandboxId,
        endAt: new Date(sandbox.endAtMs),
        startedAt: new Date(sandbox.startedAtMs),
        state: sandbox.state,
        metadata: { ...sandbox.metadata },
      }));
  }

  /** Like E2B's connect: resumes a paused sandbox; the lease is only ever extended. */
  async connect(sandboxId: string, opts: SandboxConnectOpts): Promise<E2BSandboxApi> {
    this.connects.push(sandboxId);
    const sandbox = this.live(sandboxId);
    if (sandbox.state === 'paused') {
      sandbox.state = 'running';
      sandbox.endAtMs = this.clock.now() + (opts.timeoutMs ?? 300_000);
    }
    sandbox.endAtMs = Math.max(sandbox.endAtMs, this.clock.now() + (opts.timeoutMs ?? 300_000));
    return sandbox;
  }

  async pause(sandboxId: string, opts: { keepMemory: boolean }): Promise<boolean> {
    this.pauses.push({ sandboxId, keepMemory: opts.keepMemory });
    if (this.refuses === 'sleep' || (this.refuses === 'memory' && opts.keepMemory))
      throw Object.assign(new e2b.SandboxError('400: not enabled'), { statusCode: 400 });
    const sandbox = this.live(sandboxId);
    if (sandbox.state === 'paused') return false;
    sandbox.state = 'paused';
    sandbox.pausedWithMemory = opts.keepMemory;
    sandbox.endAtMs = this.clock.now();
    return true;
  }

  async kill(sandboxId: string): Promise<boolean> {
    const sandbox = this.sandboxes.find((s) => s.sandboxId === sandboxId && !s.killed);
    if (sandbox === undefined) return false;
    sandbox.killed = true;
    return true;
  }

  async createSnapshot(sandboxId: string): Promise<string> {
    this.live(sandboxId);
    const id = `snap-${this.snapshots.size + 1}`;
    this.snapshots.set(id, sandboxId);
    return id;
  }

  async deleteSnapshot(snapshotId: string): Promise<boolean> {
    return this.snapshots.delete(snapshotId);
  }

  /** Network updates asked for: the sandbox and the settings. */
  readonly networkUpdates: Array<{ sandboxId: string; egress: E2BEgressOptions }> = [];

  async updateNetwork(sandboxId: string, egress: E2BEgressOptions): Promise<void> {
    this.live(sandboxId);
    this.networkUpdates.push({ sandboxId, egress });
  }

  private live(sandboxId: string): StubSandbox {
    const sandbox = this.sandboxes.find((s) => s.sandboxId === sandboxId && !s.killed);
    if (sandbox === undefined) throw new e2b.SandboxNotFoundError(`sandbox ${sandboxId} not found`);
    return sandbox;
  }

  async create(template: string, opts: E2BCreateOptions): Promise<E2BSandboxApi> {
    this.created.push({ template, opts, at: this.clock.now() });
    const failure = this.createFailures.shift();
    if (failure !== undefined) throw failure;
    const onTimeout = opts.lifecycle?.onTimeout;
    const keepsMemory = typeof onTimeout === 'object' && onTimeout.action === 'pause' && onTimeout.keepMemory !== false;
    const sleeps = onTimeout === 'pause' || (typeof onTimeout === 'object' && onTimeout.action === 'pause');
    if ((this.refuses === 'sleep' && sleeps) || (this.refuses === 'memory' && keepsMemory))
      throw Object.assign(new e2b.SandboxError('400: not enabled'), { statusCode: 400 });
    const sandbox = new StubSandbox(`sbx-${this.sandboxes.length + 1}`);
    sandbox.metadata = opts.metadata ?? {};
    sandbox.template = template;
    sandbox.lifecycle = opts.lifecycle;
    sandbox.nowMs = () => this.clock.now();
    sandbox.startedAtMs = this.clock.now();
    sandbox.endAtMs = this.clock.now() + (opts.timeoutMs ?? 300_000);
    // A fork starts with the files of the sandbox its snapshot copied.
    const source = this.sandboxes.find((s) => s.sandboxId === this.snapshots.get(template));
    if (source !== undefined) for (const [path, data] of source.files) sandbox.files.set(path, data.slice());
    this.onSandbox(sandbox);
    this.sandboxes.push(sandbox);
    return sandbox;
  }
}

/** The real E2B provider over `sdk`, with test settings (no creation throttle to speak of). */
export function createStubProvider(sdk: StubSdk, clock: Clock, idleTtlMs = 1_800_000): SandboxProvider {
  return createE2BSandboxProvider({
    config: {
      apiKey: 'e2b_stub_key_0123456789',
      template: 'code-interpreter-v1',
      domain: undefined,
      apiUrl: undefined,
      maxCreatesPerS: 100,
      charts: 'inline',
      sleep: 'memory',
    },
    idleTtlMs,
    logger: SILENT_LOGGER,
    loadSdk: async () => sdk,
    clock,
  });
}
