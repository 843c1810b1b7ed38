/** The Sandbox interface every backend implements. Backends know nothing of MCP or HTTP. */
import type { SandboxCatalog, SandboxSummary } from './catalog';
import type { CapturedOutput } from './output-capture';
import type { SleepState } from './records';

export type BackendName = 'local' | 'e2b';
export type OutputStream = 'stdout' | 'stderr';

/** The sandbox's bearings, as `sandbox_status` reports them. */
export interface SandboxInfo {
  readonly id: string;
  readonly backend: BackendName;
  /** The working directory as the sandbox's own processes see it. */
  readonly workdir: string;
  /** How the sandbox is isolated from the host (`bwrap`, `none`). */
  readonly isolation: string;
  /** Whether processes can reach the network (`enabled`, `disabled`, `host`). */
  readonly network: string;
  readonly createdAt: string;
}

/** Live output and cancellation for one call. */
export interface CallControls {
  /** Aborts the call: the sandbox stops the process or execution. */
  signal?: AbortSignal;
  /** Receives output as it is produced. */
  onOutput?: (stream: OutputStream, text: string) => void;
}

export interface RunCommandRequest extends CallControls {
  command: string;
  /** Relative to the working directory, or absolute inside the sandbox. @default the working directory */
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs: number;
  /** Written to the process's stdin, which is then closed. @default no stdin */
  stdin?: string;
}

export interface RunCommandResult {
  /** `null` when the process was killed by a signal. */
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: CapturedOutput;
  readonly stderr: CapturedOutput;
  readonly timedOut: boolean;
  readonly cancelled: boolean;
  readonly durationMs: number;
  /** Set when the sandbox's disk was full (or nearly) after the call. */
  readonly diskFull?: DiskFull;
  /** Set when the call failed and the kernel killed a process of the sandbox for want of memory meanwhile. */
  readonly outOfMemory?: OutOfMemory;
}

/** The sandbox reached its memory limit and the kernel killed a process of it. */
export interface OutOfMemory {
  /** The sandbox's memory limit. */
  readonly limitBytes: number;
  /** The setting that chooses it (LOCAL_SANDBOX_MEMORY_MB). */
  readonly setting: string;
}

/** The sandbox's files reached its disk limit. */
export interface DiskFull {
  /** The sandbox's disk limit. */
  readonly limitBytes: number;
  /** What the model is told: the limit, the setting that chooses it (LOCAL_SANDBOX_DISK_MB), and what to do. */
  readonly note: string;
}

export type CodeLanguage = 'python' | 'javascript' | 'typescript' | 'bash' | 'r' | 'java';

export interface RunCodeRequest extends CallControls {
  code: string;
  language: CodeLanguage;
  timeoutMs: number;
  env?: Record<string, string>;
}

/** A rich result of code execution (the value of the last expression, a chart). */
export type CodeOutput = { type: 'text'; text: string } | { type: 'image'; mimeType: string; data: string };

export interface CodeError {
  readonly name: string;
  readonly value: string;
  readonly traceback: string;
}

/** Rich results an execution produced beyond what one call keeps (code-results.ts). */
export interface OmittedResults {
  readonly count: number;
  readonly bytes: number;
}

export interface RunCodeResult {
  readonly stdout: CapturedOutput;
  readonly stderr: CapturedOutput;
  readonly results: readonly CodeOutput[];
  /** Results left out: over the count or bytes one call keeps. */
  readonly omittedResults?: OmittedResults;
  readonly error: CodeError | null;
  readonly timedOut: boolean;
  readonly cancelled: boolean;
  /** True when the interpreter's state (variables, imports) was lost during this call. */
  readonly stateLost: boolean;
  readonly durationMs: number;
  /**
   * Set when the call failed and the kernel killed a process of the sandbox (the interpreter, say) for want of memory
   * meanwhile.
   */
  readonly outOfMemory?: OutOfMemory;
}

export interface FileEntry {
  /** Path relative to the listed directory. */
  readonly path: string;
  readonly type: 'file' | 'directory' | 'symlink' | 'other';
  readonly size: number;
  readonly mtime: string;
}

export interface ListFilesRequest {
  path: string;
  /** 1 lists the directory itself; deeper levels recurse. */
  depth: number;
  includeHidden: boolean;
  maxEntries: number;
}

export interface ListFilesResult {
  /** The listed directory as the sandbox sees it. */
  readonly path: string;
  readonly entries: readonly FileEntry[];
  readonly truncated: boolean;
}

export interface ReadFileResult {
  /** The file as the sandbox sees it. */
  readonly path: string;
  readonly bytes: Buffer;
  readonly sizeBytes: number;
}

/** A regular file opened to be sent out whole or in part (a download). */
export interface FileSource {
  /** The file as the sandbox sees it. */
  readonly path: string;
  /** Its size when it was opened: what a download promises (a file that shrinks since ends it early). */
  readonly sizeBytes: number;
  readonly modifiedAt: Date;
  /** Bytes `start` to `end`, inclusive, as they are read: never past `end`, however the file grows. */
  read(start: number, end: number): AsyncIterable<Uint8Array>;
  /** Lets go of the file (after the read, or instead of it). */
  close(): Promise<void>;
}

/** A file to be written from a stream of unknown length (an upload). */
export interface ReceiveFileRequest {
  /** The file, as the sandbox sees it; parent directories are made. */
  readonly path: string;
  readonly body: AsyncIterable<Uint8Array>;
  /** More bytes than this are refused (`too_large`), and nothing is written. */
  readonly maxBytes: number;
}

/** An upload that landed: the file was replaced whole, never left half written. */
export interface ReceivedFile {
  readonly path: string;
  readonly created: boolean;
  readonly bytes: number;
}

/** A URL of the backend's own that moves a file without passing through this server (E2B's signed file URLs). */
export interface NativeFileUrl {
  readonly url: string;
  readonly method: 'GET' | 'POST';
  /** How to use it, when it is not a plain GET or a PUT of the bytes. */
  readonly note?: string;
}

/** Where a port in the sandbox can be reached from outside. */
export interface PreviewInfo {
  /** A URL that leads to the port (E2B's host for it; locally, a forwarder on the server's host or the port itself). */
  readonly url: string;
  /** Whether something accepts connections on the port right now (as far as can be seen). */
  readonly listening: boolean;
  /** Whether the URL opens from where the server's clients are. */
  readonly reachable: boolean;
  /** Where it does open, when not from there; how it opens (an access token in it); who else reaches the port. */
  readonly note?: string;
}

/** A process started in the background (a dev server, a long job). */
export interface BackgroundProcess {
  /** The id tools use (`p1`, `p2`, …), unique within the sandbox. */
  readonly id: string;
  readonly command: string;
  readonly startedAt: string;
  readonly state: 'running' | 'exited';
  /** Exit code once exited; `null` while running or when killed by a signal. */
  readonly exitCode: number | null;
  /** The signal that ended it (`SIGKILL`); `null` while running, when it exited by itself, or when not known. */
  readonly signal: NodeJS.Signals | null;
  /** Bytes of output written so far (stdout and stderr together). */
  readonly outputBytes: number;
}

/** What became of input written to a background process's stdin. */
export type StdinWrite =
  /** All of it went into the process. */
  | { readonly state: 'written' }
  /** The process has not read all of it yet: the rest (`pendingBytes`) goes in as it reads. */
  | { readonly state: 'pending'; readonly pendingBytes: number };

/** A page of a background process's output log. */
export interface ProcessLogPage {
  readonly text: string;
  /** Absolute byte offset of `text` in the process's output. */
  readonly offset: number;
  /** Where the next page starts; equals `totalBytes` at the end. */
  readonly nextOffset: number;
  readonly totalBytes: number;
  /** Bytes at the start no longer kept (the log is capped). */
  readonly droppedBytes: number;
}

export interface StartBackgroundRequest {
  command: string;
  cwd?: string;
  env?: Record<string, string>;
}

/**
 * How a backend's sandboxes sleep once idle: with their memory (E2B's pause: processes and interpreter state
 * survive), with their files (processes stopped), or not at all (destroyed, as before sandboxes slept).
 */
export type SleepMode = 'memory' | 'files' | 'off';

/** A running sandbox of one owner. */
export interface Sandbox {
  readonly id: string;
  /** Set when it was woken from sleep to be attached: since when it slept and what survived. */
  readonly woke?: SleepState;
  /**
   * Puts it to sleep (it went unused for the idle TTL): E2B pauses it, the local backend stops its processes and
   * keeps its files. Resolves with what was kept, or `undefined` when the backend cannot keep it (it was destroyed).
   */
  sleep(): Promise<SleepState | undefined>;
  /** Its caller came back for it: from now on it lives on the idle TTL (E2B renews to it on the next use). */
  confirmLease?(): void;
  info(): SandboxInfo;
  /** True once the sandbox is known to be gone (killed, expired, lost): the next use needs a new one. */
  isGone(): boolean;
  /**
   * The latest use this instance's session did not account for: another instance's use after this
   * instance's last (as the sandbox's shared record tells: a marker file, the E2B lease), or a call still in
   * flight here (now); `undefined` when there is none. Idle expiry on one instance must not destroy a
   * sandbox that another instance still serves, nor one a call is still using.
   */
  lastUseElsewhereMs(): Promise<number | undefined>;
  runCommand(req: RunCommandRequest): Promise<RunCommandResult>;
  runCode(req: RunCodeRequest): Promise<RunCodeResult>;
  /** Reads a whole file; refuses one larger than `maxBytes` with an `invalid_input` AppError. */
  readFile(path: string, maxBytes: number): Promise<ReadFileResult>;
  /** Writes a file, creating parent directories. */
  writeFile(path: string, data: Buffer): Promise<{ path: string; created: boolean }>;
  listFiles(req: ListFilesRequest): Promise<ListFilesResult>;
  /** Opens a regular file to send it out (refused as `readFile` refuses: directories, links outside, FIFOs). */
  openFile(path: string): Promise<FileSource>;
  /**
   * Writes a file from a stream, whole or not at all: a body past `maxBytes` (`too_large`) or a full disk
   * (`disk_full`) leaves the path as it was.
   */
  receiveFile(req: ReceiveFileRequest): Promise<ReceivedFile>;
  /**
   * The backend's own signed URL for a file, when it has one for this sandbox (E2B's, for sandboxes created
   * `secure`); `undefined` when the server must serve the file itself.
   */
  nativeFileUrl?(path: string, mode: 'download' | 'upload', expiresS: number): Promise<NativeFileUrl | undefined>;
  /** A URL for `port` (E2B host; loopback for local) and whether something listens there. */
  preview(port: number): Promise<PreviewInfo>;
  /** Starts a process that outlives the call (but never the sandbox); its output goes to a capped log. */
  startBackground(req: StartBackgroundRequest): Promise<BackgroundProcess>;
  listBackground(): Promise<BackgroundProcess[]>;
  /** Reads the log: from `offset` on, or (without one) its last `limitBytes`. */
  readBackgroundLog(id: string, options: { offset?: number; limitBytes: number }): Promise<ProcessLogPage>;
  /** Sends `signal` to the process and everything it started. */
  signalBackground(id: string, signal: NodeJS.Signals): Promise<BackgroundProcess>;
  /**
   * Writes to a background process's stdin, waiting a little for it to read; refused while earlier input waits
   * (at most one does per process, so a process that reads nothing holds one input, not every call's).
   */
  writeBackgroundStdin(id: string, input: string): Promise<StdinWrite>;
  /** True while any background process runs (such a session is not evicted). */
  hasRunningBackground(): boolean;
  /** Stops every process and deletes the sandbox with its files. */
  kill(): Promise<void>;
  /**
   * Lets go of the sandbox without destroying its files (eviction, shutdown): another instance, or this
   * one later, re-attaches it. Processes may be stopped (local) or left running (E2B, until the lease ends).
   */
  release(): Promise<void>;
}

/** What `/health` says about the backend. */
export interface BackendStatus {
  readonly backend: BackendName;
  /** Configured and usable, as far as can be told without calling out. */
  readonly ready: boolean;
  readonly isolation: string;
  readonly detail?: string;
  /** Per-sandbox resource limits and what enforces each; absent where the backend's own platform sets them (E2B). */
  readonly limits?: SandboxLimits;
}

/** One resource limit of a sandbox. */
export interface ResourceLimit {
  /**
   * The limit (bytes for memory and disk, a count for processes, a share of one CPU for cpu); `null` when none holds.
   */
  readonly value: number | null;
  /** What enforces it here (for example `cgroup v1`, `rlimit`, `ext4 image`), or why nothing does. */
  readonly enforcedBy: string;
}

/** The resource limits every sandbox of a backend runs under. */
export interface SandboxLimits {
  readonly memory: ResourceLimit;
  readonly processes: ResourceLimit;
  readonly cpu: ResourceLimit;
  readonly disk: ResourceLimit;
}

/** Whom a sandbox belongs to, and what names it. */
export interface SandboxOwner {
  /**
   * The sandbox's key (a session id's random part, a handle's, or a named sandbox's): names the workspace (local)
   * and, hashed, tags the sandbox (E2B).
   */
  readonly sessionKey: string;
  /** The non-secret id of the credential that owns it. */
  readonly principal: string;
  /** A named sandbox's name (open_sandbox): it is kept by its use, whatever ids expire. */
  readonly name?: string;
  /** An unnamed sandbox: until when a session id or handle can name it (then nothing can, and it is deleted). */
  readonly reachableUntilMs?: number;
  /**
   * A sandbox whose caller may never come back for it (a 2026-07-28 call without a handle): the backend's own
   * lifetime for it is this, not the idle TTL, until `confirmLease()`. Undefined: the idle TTL from the start.
   */
  readonly firstLeaseMs?: number;
}

/** How a new sandbox is made. */
export interface CreateOptions {
  /** E2B: the template. @default E2B_TEMPLATE */
  readonly template?: string;
  /** A fork: the owner's sandbox whose files (E2B: and memory) the new one starts from. */
  readonly from?: ForkSource;
}

/** The sandbox a fork copies. */
export type ForkSource = Pick<SandboxSummary, 'tag' | 'sandboxId'>;

/** Creates sandboxes; one per process. */
export interface SandboxProvider {
  status(): BackendStatus;
  /** How idle sandboxes sleep here (sandbox_status tells). */
  sleepMode(): SleepMode;
  /** The owner's sandboxes, as every instance finds them. */
  readonly catalog: SandboxCatalog;
  /** Creates the sandbox of `owner` (a new one, or the local workspace of a key seen before). */
  create(owner: SandboxOwner, options?: CreateOptions): Promise<Sandbox>;
  /**
   * Finds the existing sandbox of `owner` by its tag and re-attaches it, waking it when it sleeps (`woke` says so);
   * `undefined` when there is none.
   */
  attach(owner: SandboxOwner): Promise<Sandbox | undefined>;

  /**
   * Records that `owner`'s session ended for good (DELETE, or expiry that destroyed its sandbox), so that no
   * instance revives its id before `untilMs`; kept where the backend's instances all look (the local root).
   */
  recordEnded(owner: SandboxOwner, untilMs: number): Promise<void>;
  /** True when `owner`'s session ended for good, as recorded by any instance. */
  hasEnded(owner: SandboxOwner, nowMs: number): Promise<boolean>;
}
