/** One session's local sandbox: a workspace, its processes, and a persistent Python kernel. */
import { randomBytes } from 'node:crypto';
import { stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import type { Clock } from '../../clock';
import { AppError, toErrnoCode } from '../../errors';
import type {
  BackgroundProcess,
  CodeLanguage,
  ListFilesRequest,
  ListFilesResult,
  OutOfMemory,
  PreviewInfo,
  ProcessLogPage,
  ReadFileResult,
  RunCodeRequest,
  RunCodeResult,
  RunCommandRequest,
  RunCommandResult,
  Sandbox,
  SandboxInfo,
  StartBackgroundRequest,
  StdinWrite,
} from '../types';
import { createLocalBackgroundProcesses, type LocalBackgroundProcesses } from './background';
import type { SandboxCgroup } from './cgroups';
import { listWorkspaceFiles, readWorkspaceFile, writeWorkspaceFile } from './files';
import { findProgram } from './find-program';
import { isListening, killUserProcesses } from './host-processes';
import { KERNEL_SOURCE } from './kernel-source';
import { buildLaunch, type BwrapHardening, type HostTools, type ProcessLimits, toBaseEnv } from './launch';
import { PreviewForwarder, PreviewPortsBusy } from './preview-forwarder';
import type { PreviewSigner } from './preview-token';
import { PythonKernel } from './python-kernel';
import { outOfMemoryIf } from './resource-limits';
import { runProcess } from './run-process';
import { type SandboxProcess, Supervisor } from './supervisor';
import { SUPERVISOR_SOURCE } from './supervisor-source';
import { removeWorkspace, resolveInWorkspace, type Workspace } from './workspace';
import { diskFullAfterCall } from './workspace-disk';

export interface LocalSandboxOptions {
  id: string;
  workspace: Workspace;
  isolation: 'bwrap' | 'none';
  tools: HostTools;
  limits: ProcessLimits;
  allowNetwork: boolean;
  hiddenPaths: readonly string[];
  /** Which directories bubblewrap shows are symlinks on this host (launch.ts). */
  rootLinks: ReadonlyMap<string, string>;
  /** What hardens bubblewrap here (found by the provider's probe). */
  hardening: BwrapHardening;
  /** Python, for run_code and the sandbox's supervisor (LOCAL_SANDBOX_PYTHON). */
  python: string;
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
}

export interface PreviewSettings {
  /** The address the forwarders listen on (LOCAL_SANDBOX_PREVIEW_HOST). */
  readonly host: string;
  /**
   * Whether the server's clients reach that address: it is public on purpose, or the server itself listens
   * only on loopback (its clients are on this host).
   */
  readonly reachable: boolean;
  /** Signs the capability tokens of preview URLs (preview-token.ts). */
  readonly signer: PreviewSigner;
  /** LOCAL_SANDBOX_PREVIEW_DOMAIN: URLs then name `<sandbox id>.<domain>`, the sandbox's own host name. */
  readonly domain?: string;
}

/** Interpreters for the stateless languages: program name and file extension. */
const SCRIPT_RUNNERS: Partial<Record<CodeLanguage, { program: string; ext: string }>> = {
  javascript: { program: 'node', ext: 'js' },
  bash: { program: 'bash', ext: 'sh' },
  r: { program: 'Rscript', ext: 'R' },
  java: { program: 'java', ext: 'java' },
};

/** The error of a Python run whose interpreter the kernel killed for want of memory. */
const KERNEL_OUT_OF_MEMORY = {
  name: 'KernelRestarted',
  value:
    'The Python process was killed because the sandbox ran out of memory; variables and imports from earlier calls are gone.',
  traceback: '',
};

/** A sandbox on this machine. Nothing it runs outlives `kill()`. */
export class LocalSandbox implements Sandbox {
  readonly id: string;
  private readonly createdAt = new Date().toISOString();
  private readonly lifetime = new AbortController();
  /** When this instance last marked the sandbox used (undefined: not yet, e.g. just re-attached). */
  private touchedMs: number | undefined;
  private kernel: Promise<PythonKernel> | undefined;
  /** Starts every process of the sandbox (started with the first one; again if it went). */
  private supervisor: Promise<Supervisor> | undefined;
  private readonly background: LocalBackgroundProcesses;
  /** Preview listeners on the host, when the sandbox has a network of its own. */
  private readonly forwarder: PreviewForwarder | undefined;
  /** Set until the first Python run after a re-attach, which then reports the earlier state as lost. */
  private stateLostOnResume: boolean;

  constructor(private readonly options: LocalSandboxOptions) {
    this.id = options.id;
    this.stateLostOnResume = options.resumed;
    // Logs live beside the workspace, where the sandbox user cannot rewrite them.
    this.background = createLocalBackgroundProcesses(join(options.workspace.dir, 'processes'));
    const { host, signer, domain } = options.preview;
    const auth = { signer, sandbox: options.id, now: () => options.clock.now() };
    // A sandbox id (`local-` and 16 hex digits) is a DNS label: the sandbox's own host name, and so its own cookie jar.
    const name = domain === undefined ? {} : { name: `${options.id}.${domain}` };
    this.forwarder =
      options.isolation === 'bwrap' && !options.allowNetwork
        ? new PreviewForwarder({ host, ...name, supervisor: () => this.runningSupervisor(), auth })
        : undefined;
  }

  info(): SandboxInfo {
    const { isolation, allowNetwork, workspace } = this.options;
    return {
      id: this.id,
      backend: 'local',
      workdir: workspace.workdir,
      isolation,
      network: isolation === 'none' ? 'host' : allowNetwork ? 'enabled' : 'disabled',
      createdAt: this.createdAt,
    };
  }

  isGone(): boolean {
    return this.lifetime.signal.aborted;
  }

  /** The marker's time when another instance (sharing the workspace root) touched it after this one did. */
  async lastUseElsewhereMs(): Promise<number | undefined> {
    return stat(this.usedMarker).then(
      (info) => (this.touchedMs === undefined || info.mtimeMs > this.touchedMs + 1 ? info.mtimeMs : undefined),
      () => undefined,
    );
  }

  /** Marks the sandbox used now, for every instance that shares the workspace root. */
  private touch(): void {
    this.touchedMs = this.options.clock.now();
    const now = new Date(this.touchedMs);
    // Dated by the clock even when first written (the sweep compares it with the clock: workspace-sweep.ts).
    void utimes(this.usedMarker, now, now).catch(() =>
      writeFile(this.usedMarker, '')
        .then(() => utimes(this.usedMarker, now, now))
        .catch(() => undefined),
    );
  }

  private get usedMarker(): string {
    return join(this.options.workspace.dir, 'last-used');
  }

  async runCommand(req: RunCommandRequest): Promise<RunCommandResult> {
    const result = await this.runCommandOnly(req);
    // After every command, not only failed ones (`cmd; true` hides a write that failed): one statfs, no process.
    const diskFull = await diskFullAfterCall(this.options.workspace.dir, this.options.workspace.diskLimitBytes);
    return diskFull === undefined ? result : { ...result, diskFull };
  }

  private async runCommandOnly(req: RunCommandRequest): Promise<RunCommandResult> {
    this.assertAlive();
    const cwd = await this.resolveCwd(req.cwd);
    const supervisor = await this.ensureSupervisor();
    const oomBefore = await this.oomKills();
    const result = await runProcess({
      start: (stdin) => this.spawn(supervisor, { argv: ['bash', '-c', req.command], cwd, env: req.env, stdin }),
      timeoutMs: req.timeoutMs,
      stdin: req.stdin,
      maxOutputBytes: this.options.maxOutputBytes,
      signal: this.callSignal(req.signal),
      onOutput: req.onOutput,
    });
    const outOfMemory = await this.outOfMemorySince(oomBefore, result.exitCode !== 0);
    return outOfMemory === undefined ? result : { ...result, outOfMemory };
  }

  async runCode(req: RunCodeRequest): Promise<RunCodeResult> {
    this.assertAlive();
    if (req.language === 'python') {
      const kernel = await this.pythonKernel(req.env);
      const oomBefore = await this.oomKills();
      const executed = await kernel.execute({
        code: req.code,
        env: req.env,
        timeoutMs: req.timeoutMs,
        maxOutputBytes: this.options.maxOutputBytes,
        signal: this.callSignal(req.signal),
        onOutput: req.onOutput,
      });
      const outOfMemory = await this.outOfMemorySince(oomBefore, executed.error !== null || executed.stateLost);
      const result =
        outOfMemory === undefined
          ? executed
          : { ...executed, outOfMemory, error: executed.stateLost ? KERNEL_OUT_OF_MEMORY : executed.error };
      if (result.stateLost) this.kernel = undefined;
      if (this.stateLostOnResume) {
        this.stateLostOnResume = false;
        return { ...result, stateLost: true };
      }
      return result;
    }
    return this.runScript(req);
  }

  readFile(path: string, maxBytes: number): Promise<ReadFileResult> {
    this.assertAlive();
    return readWorkspaceFile(this.options.workspace, path, maxBytes);
  }

  writeFile(path: string, data: Buffer): Promise<{ path: string; created: boolean }> {
    this.assertAlive();
    return writeWorkspaceFile(this.options.workspace, path, data);
  }

  listFiles(req: ListFilesRequest): Promise<ListFilesResult> {
    this.assertAlive();
    return listWorkspaceFiles(this.options.workspace, req);
  }

  async startBackground(req: StartBackgroundRequest): Promise<BackgroundProcess> {
    this.assertAlive();
    const cwd = await this.resolveCwd(req.cwd);
    const supervisor = await this.ensureSupervisor();
    return this.background.start(req.command, () =>
      this.spawn(supervisor, { argv: ['bash', '-c', req.command], cwd, env: req.env, stdin: true }),
    );
  }

  async listBackground(): Promise<BackgroundProcess[]> {
    this.assertAlive();
    return this.background.list();
  }

  readBackgroundLog(id: string, options: { offset?: number; limitBytes: number }): Promise<ProcessLogPage> {
    this.assertAlive();
    return this.background.read(id, options.offset, options.limitBytes);
  }

  signalBackground(id: string, signal: NodeJS.Signals): Promise<BackgroundProcess> {
    this.assertAlive();
    return this.background.signal(id, signal);
  }

  writeBackgroundStdin(id: string, input: string): Promise<StdinWrite> {
    this.assertAlive();
    return this.background.writeStdin(id, input);
  }

  hasRunningBackground(): boolean {
    return !this.lifetime.signal.aborted && this.background.hasRunning();
  }

  async preview(port: number): Promise<PreviewInfo> {
    this.assertAlive();
    if (this.forwarder !== undefined) {
      // The sandbox's own network: only its processes reach the port, so only they can say whether it listens,
      // and the URL is a forwarder's on the host, whose connections its supervisor carries in.
      const supervisor = await this.runningSupervisor();
      const listening = supervisor === undefined ? false : await supervisor.probe(port);
      const { host, reachable } = this.options.preview;
      const url = await this.forwarder.open(port).catch((err: unknown) => {
        if (this.isGone())
          throw new AppError('sandbox_error', 'This sandbox has been shut down; the next call starts a new one.');
        if (err instanceof PreviewPortsBusy) {
          throw new AppError(
            'sandbox_error',
            `This sandbox already previews ${err.maxPorts} ports, each with connections open: close those connections, and the least recently asked-for port makes room.`,
          );
        }
        throw new AppError(
          'sandbox_error',
          `Could not open a preview port on ${host} (${toErrnoCode(err) ?? 'error'}; LOCAL_SANDBOX_PREVIEW_HOST).`,
          { cause: err },
        );
      });
      // The token is the whole of the access: a model that trims the URL, or a script that drops the cookie, is shut out.
      const access = `The URL carries an access token for this sandbox's port: give it whole. A browser trades it for a cookie on a redirect; a script must follow the redirect with cookies on (e.g. curl -L -b '' '<url>'). Inside the sandbox the app is at http://127.0.0.1:${port}.`;
      if (reachable) return { url, listening, reachable, note: access };
      const { hostname, port: hostPort } = new URL(url);
      return {
        url,
        listening,
        reachable: false,
        note: `It listens on the server's host only (${host}), and this server's clients are elsewhere: open it on that host, or forward it to your machine (e.g. ssh -L ${hostPort}:${host}:${hostPort} <server>${hostname === host ? '' : `, then open it with ${hostname} still in the URL`}). The operator can serve previews on an address clients reach with LOCAL_SANDBOX_PREVIEW_HOST and LOCAL_SANDBOX_PREVIEW_PUBLIC=on. ${access}`,
      };
    }
    // No network of its own (isolation none, or LOCAL_SANDBOX_NETWORK=on): its ports are the host's, which no
    // forwarder stands in front of.
    const url = `http://127.0.0.1:${port}`;
    return {
      url,
      listening: await isListening(port),
      reachable: true,
      note: `This sandbox shares the host's network (LOCAL_SANDBOX_ISOLATION=none or LOCAL_SANDBOX_NETWORK=on), so the port is the host's own and no preview front can gate it: anyone who can reach the port on this host opens it, without a token, and other hosts too if the app listens beyond 127.0.0.1.`,
    };
  }

  async kill(): Promise<void> {
    await this.stopProcesses();
    await removeWorkspace(this.options.workspace);
  }

  /**
   * Stops every process and keeps the files: the workspace is re-attached by its session later. Its disk image
   * is let go once nothing runs in it (the last holder unmounts it and frees its loop device) and mounted again then.
   */
  async release(): Promise<void> {
    await this.stopProcesses();
    await this.options.workspace.disk?.release();
  }

  private async stopProcesses(): Promise<void> {
    if (this.lifetime.signal.aborted) return;
    this.lifetime.abort();
    this.forwarder?.close();
    this.background.stopAll();
    const kernel = this.kernel;
    this.kernel = undefined;
    await kernel?.then((k) => k.kill()).catch(() => undefined);
    const supervisor = this.supervisor;
    this.supervisor = undefined;
    await supervisor?.then((s) => s.kill()).catch(() => undefined);
    const owner = this.options.workspace.owner;
    if (owner !== undefined) await killUserProcesses(owner.uid);
    // Whatever is left in the sandbox's groups goes with them (a group that stays is swept at the next start-up).
    await this.options.cgroup?.remove();
  }

  /** The kernel's count of processes it killed in this sandbox for want of memory (`undefined` without a memory cgroup). */
  private oomKills(): Promise<number | undefined> {
    return this.options.cgroup?.oomKills() ?? Promise.resolve(undefined);
  }

  /** What the call reports when it `failed` and the count rose since `before`. */
  private async outOfMemorySince(before: number | undefined, failed: boolean): Promise<OutOfMemory | undefined> {
    if (before === undefined || !failed) return undefined;
    const after = await this.oomKills();
    return outOfMemoryIf(after !== undefined && after > before, this.options.memoryLimitBytes);
  }

  private assertAlive(): void {
    if (this.lifetime.signal.aborted)
      throw new AppError('sandbox_error', 'This sandbox has been shut down; the next call starts a new one.');
    this.touch();
  }

  private callSignal(signal: AbortSignal | undefined): AbortSignal {
    return signal === undefined ? this.lifetime.signal : AbortSignal.any([signal, this.lifetime.signal]);
  }

  /** The supervisor while one runs; never starts one. */
  private async runningSupervisor(): Promise<Supervisor | undefined> {
    const supervisor = await this.supervisor?.catch(() => undefined);
    return supervisor?.alive === true ? supervisor : undefined;
  }

  /**
   * The sandbox's supervisor, which starts all of its processes (commands, background processes, the Python
   * kernel, scripts): the only process launched through cgroups, rlimits, the sandbox's user and bubblewrap.
   */
  private ensureSupervisor(): Promise<Supervisor> {
    const current = this.supervisor;
    if (current === undefined) return this.startSupervisor();
    return current.then((s) => {
      if (s.alive) {
        s.touch();
        return s;
      }
      // Gone: the first call to see it starts the next one, the others wait for that.
      return this.supervisor === current ? this.startSupervisor() : this.ensureSupervisor();
    });
  }

  private startSupervisor(): Promise<Supervisor> {
    const started = this.launchSupervisor();
    this.supervisor = started;
    started.catch(() => {
      if (this.supervisor === started) this.supervisor = undefined;
    });
    return started;
  }

  private async launchSupervisor(): Promise<Supervisor> {
    const { isolation, workspace, tools, limits, allowNetwork, hiddenPaths, rootLinks, hardening, cgroup, python } =
      this.options;
    const cgroupProcs = await cgroup?.enter().catch((err: unknown) => {
      throw new AppError(
        'sandbox_error',
        `Could not set up the sandbox's resource limits (cgroup: ${toErrnoCode(err) ?? 'error'}); nothing was run.`,
        { cause: err },
      );
    });
    const argv = [python, '-I', '-S', '-c', SUPERVISOR_SOURCE];
    const cwd = isolation === 'bwrap' ? workspace.workdir : workspace.home;
    const supervisor = await Supervisor.start(
      buildLaunch({
        isolation,
        workspace,
        tools,
        limits,
        allowNetwork,
        hiddenPaths,
        rootLinks,
        hardening,
        extraReadOnlyDirs: [],
        argv,
        cwd,
        env: {},
        cgroupProcs,
      }),
    );
    if (this.lifetime.signal.aborted) supervisor.kill();
    return supervisor;
  }

  /** Starts a process through `supervisor` with the sandbox's base environment and `env` on top. */
  private spawn(
    supervisor: Supervisor,
    request: {
      argv: readonly string[];
      cwd: string;
      env: Record<string, string> | undefined;
      stdin?: boolean;
      channel?: boolean;
    },
  ): SandboxProcess {
    const { argv, cwd, env, stdin, channel } = request;
    return supervisor.spawn({
      argv,
      cwd,
      env: { ...toBaseEnv(this.options.workspace, this.options.isolation), ...env },
      stdin,
      channel,
    });
  }

  /** The working directory for a process, as the sandbox sees it (and as `spawn` needs it without bubblewrap). */
  private async resolveCwd(cwd: string | undefined): Promise<string> {
    const ws = this.options.workspace;
    if (cwd === undefined) return this.options.isolation === 'bwrap' ? ws.workdir : ws.home;
    const resolved = await resolveInWorkspace(ws, cwd);
    return this.options.isolation === 'bwrap' ? resolved.sandboxPath : resolved.hostPath;
  }

  private pythonKernel(env: Record<string, string> | undefined): Promise<PythonKernel> {
    const current = this.kernel;
    if (current !== undefined) {
      return current.then((k) => (k.alive ? k : this.startKernel(env)));
    }
    return this.startKernel(env);
  }

  private startKernel(env: Record<string, string> | undefined): Promise<PythonKernel> {
    const cwd = this.options.isolation === 'bwrap' ? this.options.workspace.workdir : this.options.workspace.home;
    const started = this.ensureSupervisor().then((supervisor) =>
      PythonKernel.start(
        this.spawn(supervisor, { argv: [this.options.python, '-u', '-c', KERNEL_SOURCE], cwd, env, channel: true }),
      ),
    );
    this.kernel = started;
    started.catch(() => {
      if (this.kernel === started) this.kernel = undefined;
    });
    return started;
  }

  private async runScript(req: RunCodeRequest): Promise<RunCodeResult> {
    const runner = SCRIPT_RUNNERS[req.language];
    const program = runner === undefined ? undefined : findProgram(runner.program);
    if (runner === undefined || program === undefined) {
      const available = [
        'python',
        ...Object.entries(SCRIPT_RUNNERS)
          .filter(([, r]) => r !== undefined && findProgram(r.program) !== undefined)
          .map(([lang]) => lang),
      ];
      throw new AppError(
        'invalid_input',
        `The language "${req.language}" is not available in this sandbox; available: ${available.join(', ')}. Use run_command to install or call other tools.`,
      );
    }
    const ws = this.options.workspace;
    // The script goes to the sandbox's /tmp through the same race-safe writer as write_file.
    const tmpView: Workspace = { ...ws, home: ws.tmp, workdir: this.options.isolation === 'bwrap' ? '/tmp' : ws.tmp };
    // One file right in /tmp, never a directory of its own: the sandbox user could swap a directory for a
    // symlink before the cleanup. (Java's single-file launcher does not need the file named after its class.)
    const fileName = `code-${randomBytes(6).toString('hex')}.${runner.ext}`;
    const { path: inside } = await writeWorkspaceFile(tmpView, fileName, Buffer.from(req.code, 'utf8'));
    try {
      const cwd = await this.resolveCwd(undefined);
      const supervisor = await this.ensureSupervisor();
      const oomBefore = await this.oomKills();
      const result = await runProcess({
        start: () => this.spawn(supervisor, { argv: [runner.program, inside], cwd, env: req.env }),
        timeoutMs: req.timeoutMs,
        maxOutputBytes: this.options.maxOutputBytes,
        signal: this.callSignal(req.signal),
        onOutput: req.onOutput,
      });
      const failed = result.exitCode !== 0 && !result.timedOut && !result.cancelled;
      return {
        stdout: result.stdout,
        stderr: result.stderr,
        results: [],
        error: failed
          ? {
              name: 'NonZeroExit',
              value: `exited with ${result.exitCode ?? result.signal}`,
              traceback: result.stderr.text,
            }
          : null,
        timedOut: result.timedOut,
        cancelled: result.cancelled,
        stateLost: false,
        durationMs: result.durationMs,
        ...(await this.outOfMemorySince(oomBefore, result.exitCode !== 0).then((outOfMemory) =>
          outOfMemory === undefined ? {} : { outOfMemory },
        )),
      };
    } finally {
      // The sandbox's tmp cannot be swapped (its parent is the server's), and unlink does not follow a
      // symlink left in the file's place: only that name goes.
      await unlink(join(ws.tmp, fileName)).catch(() => undefined);
    }
  }
}
