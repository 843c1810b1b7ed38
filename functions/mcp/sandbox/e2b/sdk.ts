/**
 * The slice of the E2B SDK this backend uses, typed from the SDK's own exports so that an SDK change
 * breaks the build (and the tests' stub), not production. The SDK itself is loaded on first use only:
 * it costs ~80 ms of start-up, off the path to the first `initialize` answer.
 */
import type { E2BEgressOptions } from '../../egress/e2b-network';
import type { CommandHandle, CommandStartOpts, ConnectionOpts, EntryInfo, SandboxConnectOpts, SandboxOpts } from 'e2b';

import { readStreamAtMost } from '../read-limit';
import { execute, type ExecuteOptions, type ExecutionOutcome } from './execute';
import { dropHeldOutput } from './held-output';
import { loadE2BModules } from './sdk-modules';

/** A running E2B sandbox, as the backend uses it. */
export interface E2BSandboxApi {
  readonly sandboxId: string;
  /** Runs code in the interpreter; output and results go to the callbacks as they come (execute.ts). */
  runCode(code: string, opts: ExecuteOptions): Promise<ExecutionOutcome>;
  /** `commands.run(cmd, { background: true })`. */
  startCommand(
    cmd: string,
    opts: Omit<CommandStartOpts, 'background'>,
  ): Promise<Pick<CommandHandle, 'pid' | 'wait' | 'kill' | 'sendStdin'>>;
  /** At most `maxBytes` + 1 bytes of the file from its start: more than `maxBytes` means it is larger. */
  readFile(path: string, maxBytes: number): Promise<Uint8Array>;
  writeFile(path: string, data: ArrayBuffer): Promise<unknown>;
  /** The file's bytes as envd sends them, from its start. */
  readStream(path: string): Promise<ReadableStream<Uint8Array>>;
  /** Writes the file from a stream, sent as it is read (parent directories made). */
  writeStream(path: string, body: ReadableStream<Uint8Array>): Promise<unknown>;
  rename(from: string, to: string): Promise<unknown>;
  remove(path: string): Promise<void>;
  /**
   * E2B's own signed URL for a file (`downloadUrl`/`uploadUrl`, valid `expiresS`), for a sandbox created `secure`;
   * `undefined` for one without an access token, whose URLs would need none.
   */
  signedFileUrl(path: string, mode: 'download' | 'upload', expiresS: number): Promise<string | undefined>;
  listFiles(path: string, depth: number): Promise<EntryInfo[]>;
  getInfo(path: string): Promise<EntryInfo>;
  exists(path: string): Promise<boolean>;
  setTimeout(timeoutMs: number): Promise<void>;
  /** The public host name for `port` (`sandbox.getHost`). */
  getHost(port: number): string;
  /** When the sandbox's lease ends (E2B's `endAt`). */
  leaseEnd(): Promise<Date>;
  kill(): Promise<unknown>;
}

/** The port of the code interpreter's HTTP API inside the sandbox (the SDK's own constant, not exported). */
const JUPYTER_PORT = 49999;

/** A sandbox found by its metadata, as the listing reports it (before anyone connects). */
export interface FoundSandbox {
  readonly sandboxId: string;
  /** The lease end of a running sandbox; for a paused one, when it paused. */
  readonly endAt: Date;
  readonly startedAt: Date;
  readonly state: 'running' | 'paused';
  readonly metadata: Readonly<Record<string, string>>;
}

/** Connection options of the control-plane calls. */
export type E2BApiOpts = ConnectionOpts;

/** Options for creating a sandbox: the SDK's own. */
export type E2BCreateOptions = SandboxOpts;

/** The SDK entry points the backend needs, plus the error classes it maps. */
export interface E2BSdk {
  create(template: string, opts: E2BCreateOptions): Promise<E2BSandboxApi>;
  /** Running or paused sandboxes whose metadata includes all of `metadata`, page after page up to `max`. */
  findByMetadata(metadata: Record<string, string>, opts: ConnectionOpts, max?: number): Promise<FoundSandbox[]>;
  /** Re-attaches a sandbox by id (resuming a paused one). */
  connect(sandboxId: string, opts: SandboxConnectOpts): Promise<E2BSandboxApi>;
  /** Pauses a sandbox, with its memory or its files only; false when it was paused already. */
  pause(sandboxId: string, opts: ConnectionOpts & { keepMemory: boolean }): Promise<boolean>;
  /** Kills a sandbox by id, running or paused (a paused one is not resumed); false when there was none. */
  kill(sandboxId: string, opts: ConnectionOpts): Promise<boolean>;
  /** Snapshots a sandbox (it runs on): the id a new sandbox is created from. */
  createSnapshot(sandboxId: string, opts: ConnectionOpts): Promise<string>;
  /** Deletes a snapshot; false when there was none. */
  deleteSnapshot(snapshotId: string, opts: ConnectionOpts): Promise<boolean>;
  /** Replaces a running sandbox's egress settings (every field left out is cleared). */
  updateNetwork(sandboxId: string, egress: E2BEgressOptions, opts: ConnectionOpts): Promise<void>;
  readonly errors: E2BErrorClasses;
}

/** The most sandboxes one listing reads (pages of 100). */
const MAX_LISTED = 1000;

/** The SDK's error classes, for `instanceof` at the adapter. */
export type E2BErrorClasses = Pick<
  typeof import('e2b'),
  | 'AuthenticationError'
  | 'RateLimitError'
  | 'ServiceBusyError'
  | 'TimeoutError'
  | 'NotEnoughSpaceError'
  | 'SandboxNotFoundError'
  | 'NotFoundError'
  | 'FileNotFoundError'
  | 'InvalidArgumentError'
  | 'TemplateError'
  | 'CommandExitError'
  | 'SandboxError'
>;

/** Loads the real SDK (once) and adapts its sandbox objects. */
export async function loadE2BSdk(): Promise<E2BSdk> {
  const { e2b, codeInterpreter } = await loadE2BModules();
  /** The interpreter's sandbox, with what execute.ts needs to send an execution as the SDK's `runCode` does. */
  class InterpreterSandbox extends codeInterpreter.Sandbox {
    /** Created `secure`: envd wants its access token, and file URLs carry E2B's signature. */
    get secured(): boolean {
      return Boolean(this.envdAccessToken);
    }

    runBounded(code: string, opts: ExecuteOptions): Promise<ExecutionOutcome> {
      const source = this.connectionConfig.requestSource;
      const url = `${this.jupyterUrl}/execute`;
      const headers: Record<string, string> = {
        'E2b-Sandbox-Id': this.sandboxId,
        'E2b-Sandbox-Port': String(JUPYTER_PORT),
      };
      if (this.trafficAccessToken) headers['E2B-Traffic-Access-Token'] = this.trafficAccessToken;
      if (this.envdAccessToken) headers['X-Access-Token'] = this.envdAccessToken;
      const target = {
        url: source ? `${url}${url.includes('?') ? '&' : '?'}source=${encodeURIComponent(source)}` : url,
        headers,
        requestTimeoutMs: this.connectionConfig.requestTimeoutMs,
        isRunning: () => this.isRunning(),
      };
      return execute(target, code, opts, e2b);
    }
  }
  const adapt = (sandbox: InterpreterSandbox): E2BSandboxApi => ({
    sandboxId: sandbox.sandboxId,
    runCode: (code, runOpts) => sandbox.runBounded(code, runOpts),
    async startCommand(cmd, cmdOpts) {
      // The handle keeps a copy of all the command's output; it is dropped at every chunk (held-output.ts).
      let handle: CommandHandle | undefined;
      const took = (): void => {
        if (handle !== undefined) dropHeldOutput(handle);
      };
      handle = await sandbox.commands.run(cmd, {
        ...cmdOpts,
        background: true,
        onStdout: (text) => {
          cmdOpts.onStdout?.(text);
          took();
        },
        onStderr: (text) => {
          cmdOpts.onStderr?.(text);
          took();
        },
      });
      took();
      return handle;
    },
    readFile: async (path, maxBytes) =>
      readStreamAtMost(await sandbox.files.read(path, { format: 'stream' }), maxBytes + 1),
    writeFile: (path, data) => sandbox.files.write(path, data),
    readStream: (path) => sandbox.files.read(path, { format: 'stream' }),
    writeStream: (path, body) => sandbox.files.write(path, body),
    rename: (from, to) => sandbox.files.rename(from, to),
    remove: (path) => sandbox.files.remove(path),
    async signedFileUrl(path, mode, expiresS) {
      if (!sandbox.secured) return undefined;
      const opts = { useSignatureExpiration: expiresS };
      return mode === 'download' ? sandbox.downloadUrl(path, opts) : sandbox.uploadUrl(path, opts);
    },
    listFiles: (path, depth) => sandbox.files.list(path, { depth }),
    getInfo: (path) => sandbox.files.getInfo(path),
    exists: (path) => sandbox.files.exists(path),
    setTimeout: (timeoutMs) => sandbox.setTimeout(timeoutMs),
    leaseEnd: async () => (await sandbox.getInfo()).endAt,
    getHost: (port) => sandbox.getHost(port),
    kill: () => sandbox.kill(),
  });
  return {
    create: async (template, opts) => adapt(await InterpreterSandbox.create(template, opts)),
    async findByMetadata(metadata, opts, max = MAX_LISTED) {
      const paginator = codeInterpreter.Sandbox.list({ ...opts, query: { metadata, state: ['running', 'paused'] } });
      const found: FoundSandbox[] = [];
      do {
        for (const info of await paginator.nextItems()) {
          const { sandboxId, endAt, startedAt, state } = info;
          found.push({ sandboxId, endAt, startedAt, state, metadata: info.metadata });
        }
      } while (paginator.hasNext && found.length < max);
      return found.slice(0, max);
    },
    connect: async (sandboxId, opts) => adapt(await InterpreterSandbox.connect(sandboxId, opts)),
    pause: (sandboxId, opts) => e2b.Sandbox.pause(sandboxId, opts),
    kill: (sandboxId, opts) => e2b.Sandbox.kill(sandboxId, opts),
    createSnapshot: async (sandboxId, opts) => (await e2b.Sandbox.createSnapshot(sandboxId, opts)).snapshotId,
    deleteSnapshot: (snapshotId, opts) => e2b.Sandbox.deleteSnapshot(snapshotId, opts),
    updateNetwork: (sandboxId, { allowInternetAccess, network }, opts) =>
      e2b.Sandbox.updateNetwork(sandboxId, { allowInternetAccess, ...network }, opts),
    errors: e2b,
  };
}
