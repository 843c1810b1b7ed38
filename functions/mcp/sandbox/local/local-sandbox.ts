/**
 * One session's local sandbox behind the Sandbox interface: each call checks that the sandbox still lives and
 * marks it used, then goes to its concern: the workspace's files (sandbox-workspace.ts), its processes and their
 * supervisor (sandbox-processes.ts, code-runs.ts), what a call reports of the limits (limit-reports.ts), previews
 * (sandbox-preview.ts).
 */
import type { Clock } from '../../clock';
import { AppError } from '../../errors';
import type { SleepState } from '../records';
import type {
  BackgroundProcess,
  FileSource,
  ListFilesRequest,
  ListFilesResult,
  PreviewInfo,
  ProcessLogPage,
  ReadFileResult,
  ReceivedFile,
  ReceiveFileRequest,
  RunCodeRequest,
  RunCodeResult,
  RunCommandRequest,
  RunCommandResult,
  Sandbox,
  SandboxInfo,
  StartBackgroundRequest,
  StdinWrite,
} from '../types';
import type { SandboxCgroup } from './cgroups';
import { type CodeRunner, runPython, runScript } from './code-runs';
import type { SandboxLaunch } from './launch';
import { LimitReports } from './limit-reports';
import { runProcess } from './run-process';
import { SANDBOX_ENDED, SandboxPreview, type PreviewSettings } from './sandbox-preview';
import type { SandboxEgress } from './sandbox-egress';
import { SandboxProcesses } from './sandbox-processes';
import { SandboxWorkspace } from './sandbox-workspace';
import type { Workspace } from './workspace';

export type { PreviewSettings } from './sandbox-preview';

export interface LocalSandboxOptions {
  id: string;
  workspace: Workspace;
  /** What its supervisor is launched with (the host profile's). */
  launch: SandboxLaunch;
  /** Bytes kept per output stream. */
  maxOutputBytes: number;
  /** The workspace was re-attached (the session moved or the server restarted): the interpreter starts fresh. */
  resumed: boolean;
  /** Dates the last-used marker. */
  clock: Clock;
  /** The sandbox's cgroups (memory, processes, CPU), where the host offers them. */
  cgroup?: SandboxCgroup;
  /** The sandbox's memory limit, reported when the kernel kills a process of it for want of memory. */
  memoryLimitBytes: number;
  /** Where previews of a sandbox with its own network are served (preview-forwarder.ts). */
  preview: PreviewSettings;
  /** Set when the workspace was asleep: since when, and which processes its sleep stopped. */
  woke?: SleepState;
  /** Its way out, given its id, when its policy lets anything out. @default no route out */
  egress?: (id: string) => SandboxEgress;
  /**
   * Records that it went to sleep (or was let go, which stops its processes all the same), and when this instance
   * last used it.
   */
  onSleep?: (state: SleepState, lastUsedMs: number | undefined) => Promise<void>;
  /** Records that it was destroyed. */
  onKill?: () => Promise<void>;
}

/** A sandbox on this machine. Nothing it runs outlives `kill()`. */
export class LocalSandbox implements Sandbox {
  readonly id: string;
  readonly woke?: SleepState;
  private readonly createdAt = new Date().toISOString();
  private readonly lifetime = new AbortController();
  private readonly files: SandboxWorkspace;
  private readonly processes: SandboxProcesses;
  private readonly egress: SandboxEgress | undefined;
  private readonly limits: LimitReports;
  private readonly previews: SandboxPreview;
  private readonly code: CodeRunner;
  /** What its sleep kept, once it went to sleep (a second sleep, or a release after it, changes nothing). */
  private slept: SleepState | undefined;
  /** Set until the first Python run after a re-attach, which then reports the earlier state as lost. */
  private stateLostOnResume: boolean;

  constructor(private readonly options: LocalSandboxOptions) {
    const { id, workspace, launch, cgroup, clock } = options;
    this.id = id;
    if (options.woke !== undefined) this.woke = options.woke;
    this.stateLostOnResume = options.resumed;
    this.files = new SandboxWorkspace(workspace, clock);
    this.egress = options.egress?.(id);
    this.processes = new SandboxProcesses(id, workspace, launch, cgroup, this.lifetime.signal, this.egress);
    this.limits = new LimitReports(cgroup, options.memoryLimitBytes, workspace);
    this.previews = new SandboxPreview({
      id,
      ownNetwork: launch.isolation === 'bwrap' && !launch.allowNetwork,
      settings: options.preview,
      clock,
      supervisor: () => this.processes.running(),
      isGone: () => this.isGone(),
    });
    const { processes, limits } = this;
    this.code = { processes, limits, workspace, isolation: launch.isolation, maxOutputBytes: options.maxOutputBytes };
  }

  info(): SandboxInfo {
    const { workspace, launch } = this.options;
    const { isolation, allowNetwork } = launch;
    return {
      id: this.id,
      backend: 'local',
      workdir: workspace.workdir,
      isolation,
      network: isolation === 'none' ? 'host' : allowNetwork ? 'enabled' : this.egress ? 'proxied' : 'disabled',
      createdAt: this.createdAt,
    };
  }

  isGone(): boolean {
    return this.lifetime.signal.aborted;
  }

  /** The marker's time when another instance (sharing the workspace root) touched it after this one did. */
  lastUseElsewhereMs(): Promise<number | undefined> {
    return this.files.lastUseElsewhereMs();
  }

  async runCommand(req: RunCommandRequest): Promise<RunCommandResult> {
    const result = await this.runCommandOnly(req);
    const diskFull = await this.limits.diskFull();
    return diskFull === undefined ? result : { ...result, diskFull };
  }

  async runCode(req: RunCodeRequest): Promise<RunCodeResult> {
    this.assertAlive();
    if (req.language !== 'python') return runScript(this.code, req, this.callSignal(req.signal));
    const result = await runPython(this.code, req, this.callSignal(req.signal));
    if (!this.stateLostOnResume) return result;
    this.stateLostOnResume = false;
    return { ...result, stateLost: true };
  }

  readFile(path: string, maxBytes: number): Promise<ReadFileResult> {
    this.assertAlive();
    return this.files.readFile(path, maxBytes);
  }

  writeFile(path: string, data: Buffer): Promise<{ path: string; created: boolean }> {
    this.assertAlive();
    return this.files.writeFile(path, data);
  }

  listFiles(req: ListFilesRequest): Promise<ListFilesResult> {
    this.assertAlive();
    return this.files.listFiles(req);
  }

  openFile(path: string): Promise<FileSource> {
    this.assertAlive();
    return this.files.openFile(path);
  }

  receiveFile(req: ReceiveFileRequest): Promise<ReceivedFile> {
    this.assertAlive();
    return this.files.receiveFile(req);
  }

  async startBackground(req: StartBackgroundRequest): Promise<BackgroundProcess> {
    this.assertAlive();
    const cwd = await this.processes.resolveCwd(req.cwd);
    const supervisor = await this.processes.ensureSupervisor();
    const argv = ['bash', '-c', req.command];
    return this.processes.background.start(req.command, () =>
      this.processes.spawn(supervisor, { argv, cwd, env: req.env, stdin: true }),
    );
  }

  async listBackground(): Promise<BackgroundProcess[]> {
    this.assertAlive();
    return this.processes.background.list();
  }

  readBackgroundLog(id: string, options: { offset?: number; limitBytes: number }): Promise<ProcessLogPage> {
    this.assertAlive();
    return this.processes.background.read(id, options.offset, options.limitBytes);
  }

  signalBackground(id: string, signal: NodeJS.Signals): Promise<BackgroundProcess> {
    this.assertAlive();
    return this.processes.background.signal(id, signal);
  }

  writeBackgroundStdin(id: string, input: string): Promise<StdinWrite> {
    this.assertAlive();
    return this.processes.background.writeStdin(id, input);
  }

  hasRunningBackground(): boolean {
    return !this.lifetime.signal.aborted && this.processes.background.hasRunning();
  }

  async preview(port: number): Promise<PreviewInfo> {
    this.assertAlive();
    return this.previews.open(port);
  }

  async kill(): Promise<void> {
    await this.stopProcesses();
    await this.files.remove();
    await this.options.onKill?.();
  }

  /**
   * Puts it to sleep: stops every process and keeps the files, for its session, handle or name to wake it later.
   * Its disk image is let go once nothing runs in it (the last holder unmounts it and frees its loop device) and
   * mounted again then. Resolves with the background processes it stopped.
   */
  async sleep(): Promise<SleepState> {
    if (this.slept !== undefined) return this.slept;
    const sinceMs = this.options.clock.now();
    // Killed already: nothing is left to record.
    if (this.lifetime.signal.aborted) return { sinceMs, memory: false, stopped: [] };
    const running = (await this.processes.background.list().catch(() => []))
      .filter((process) => process.state === 'running')
      .map(({ id, command }) => ({ id, command }));
    await this.stopProcesses();
    await this.files.release();
    const state: SleepState = { sinceMs, memory: false, stopped: running };
    this.slept = state;
    await this.options.onSleep?.(state, this.files.lastTouchMs);
    return state;
  }

  /** Lets go of it (eviction for room, shutdown): on this backend that is a sleep. */
  async release(): Promise<void> {
    await this.sleep();
  }

  private async runCommandOnly(req: RunCommandRequest): Promise<RunCommandResult> {
    this.assertAlive();
    const cwd = await this.processes.resolveCwd(req.cwd);
    const supervisor = await this.processes.ensureSupervisor();
    const memory = await this.limits.watchMemory();
    const argv = ['bash', '-c', req.command];
    const result = await runProcess({
      start: (stdin) => this.processes.spawn(supervisor, { argv, cwd, env: req.env, stdin }),
      timeoutMs: req.timeoutMs,
      stdin: req.stdin,
      maxOutputBytes: this.options.maxOutputBytes,
      signal: this.callSignal(req.signal),
      onOutput: req.onOutput,
    });
    const outOfMemory = await memory.outOfMemory(result.exitCode !== 0);
    return outOfMemory === undefined ? result : { ...result, outOfMemory };
  }

  private async stopProcesses(): Promise<void> {
    if (this.lifetime.signal.aborted) return;
    this.lifetime.abort();
    this.previews.close();
    await this.processes.stop();
  }

  private assertAlive(): void {
    if (this.lifetime.signal.aborted) throw new AppError('sandbox_error', SANDBOX_ENDED);
    this.files.touch();
  }

  private callSignal(signal: AbortSignal | undefined): AbortSignal {
    return signal === undefined ? this.lifetime.signal : AbortSignal.any([signal, this.lifetime.signal]);
  }
}
