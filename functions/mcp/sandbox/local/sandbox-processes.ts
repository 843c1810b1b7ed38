/**
 * One sandbox's processes: its supervisor, the only process launched from the server (through the cgroups,
 * rlimits, the sandbox's user and bubblewrap), which starts every other one (commands, background processes,
 * scripts, the Python kernel); started with the first of them, and again when it went. Stopping them all.
 */
import { join } from 'node:path';

import { AppError, toErrnoCode } from '../../errors';
import { SingleFlight } from '../../single-flight';
import { createLocalBackgroundProcesses, type LocalBackgroundProcesses } from './background';
import type { SandboxCgroup } from './cgroups';
import { killUserProcesses } from './host-processes';
import { KERNEL_SOURCE } from './kernel-source';
import { buildLaunch, type SandboxLaunch, toBaseEnv } from './launch';
import { PythonKernel } from './python-kernel';
import { EGRESS_PROXY_PORT, prepareEgressLaunch, proxyEnv, type SandboxEgress, trustEnv } from './sandbox-egress';
import type { SandboxProcess } from './supervised-process';
import { Supervisor } from './supervisor';
import { SUPERVISOR_SOURCE } from './supervisor-source';
import { resolveInWorkspace, type Workspace } from './workspace';

/** A process to start through the supervisor. */
export interface ProcessRequest {
  argv: readonly string[];
  /** As the sandbox sees it (`resolveCwd`). */
  cwd: string;
  /** On top of the sandbox's base environment. */
  env: Record<string, string> | undefined;
  stdin?: boolean;
  channel?: boolean;
}

export class SandboxProcesses {
  /** Started with the first process; again, by the first call to find it gone. */
  private readonly supervisor = new SingleFlight<Supervisor>();
  /** The persistent Python interpreter, started with the first Python run; again once it exited. */
  private readonly kernel = new SingleFlight<PythonKernel>();
  readonly background: LocalBackgroundProcesses;

  constructor(
    private readonly sandboxId: string,
    private readonly workspace: Workspace,
    private readonly launch: SandboxLaunch,
    private readonly cgroup: SandboxCgroup | undefined,
    /** Aborted when the sandbox ends: a supervisor that starts after that is killed at once. */
    private readonly ended: AbortSignal,
    /** Its way out, when its policy lets anything out. @default none: no route out at all */
    private readonly egress?: SandboxEgress,
  ) {
    // Logs live beside the workspace, where the sandbox user cannot rewrite them.
    this.background = createLocalBackgroundProcesses(join(workspace.dir, 'processes'));
  }

  /** The supervisor while one runs; never starts one. */
  async running(): Promise<Supervisor | undefined> {
    const supervisor = await this.supervisor.current()?.catch(() => undefined);
    return supervisor?.alive === true ? supervisor : undefined;
  }

  /** The running supervisor, or a new one if none runs (the first call to find it gone starts the next). */
  ensureSupervisor(): Promise<Supervisor> {
    return this.supervisor
      .get(
        () => this.launchSupervisor(),
        (s) => s.alive,
      )
      .then((supervisor) => {
        supervisor.touch();
        return supervisor;
      });
  }

  /** Starts a process through `supervisor` with the sandbox's base environment and `env` on top. */
  spawn(supervisor: Supervisor, { argv, cwd, env, stdin, channel }: ProcessRequest): SandboxProcess {
    const { egress } = this;
    const base = {
      ...toBaseEnv(this.workspace, this.launch.isolation),
      ...(egress && proxyEnv()),
      ...(egress !== undefined && egress.secrets.length > 0 && trustEnv()),
    };
    return supervisor.spawn({ argv, cwd, env: { ...base, ...env }, stdin, channel });
  }

  /** The working directory for a process, as the sandbox sees it (and as `spawn` needs it without bubblewrap). */
  async resolveCwd(cwd: string | undefined): Promise<string> {
    const ws = this.workspace;
    const bwrap = this.launch.isolation === 'bwrap';
    if (cwd === undefined) return bwrap ? ws.workdir : ws.home;
    const resolved = await resolveInWorkspace(ws, cwd);
    return bwrap ? resolved.sandboxPath : resolved.hostPath;
  }

  /** The Python kernel, started (with `env`) when none runs. */
  pythonKernel(env: Record<string, string> | undefined): Promise<PythonKernel> {
    return this.kernel.get(
      () => this.startKernel(env),
      (k) => k.alive,
    );
  }

  /** Forgets the kernel whose state was lost: the next Python run starts another. */
  forgetKernel(): void {
    this.kernel.take();
  }

  /** Stops every process of the sandbox: its background processes, the kernel, the supervisor, its user's. */
  async stop(): Promise<void> {
    this.background.stopAll();
    await this.kernel
      .take()
      ?.then((k) => k.kill())
      .catch(() => undefined);
    await this.supervisor
      .take()
      ?.then((s) => s.kill())
      .catch(() => undefined);
    const owner = this.workspace.owner;
    if (owner !== undefined) await killUserProcesses(owner.uid);
    // Whatever is left in the sandbox's groups goes with them (a group that stays is swept at the next start-up).
    await this.cgroup?.remove();
  }

  private startKernel(env: Record<string, string> | undefined): Promise<PythonKernel> {
    const { isolation, python } = this.launch;
    const cwd = isolation === 'bwrap' ? this.workspace.workdir : this.workspace.home;
    return this.ensureSupervisor().then((supervisor) =>
      PythonKernel.start(
        this.spawn(supervisor, { argv: [python, '-u', '-c', KERNEL_SOURCE], cwd, env, channel: true }),
      ),
    );
  }

  private async launchSupervisor(): Promise<Supervisor> {
    const { workspace, cgroup, launch } = this;
    const cgroupProcs = await cgroup?.enter().catch((err: unknown) => {
      const code = toErrnoCode(err) ?? 'error';
      const message = `Could not set up the sandbox's resource limits (cgroup: ${code}); nothing was run.`;
      throw new AppError('sandbox_error', message, { cause: err });
    });
    const { egress } = this;
    const outbound = egress && (await prepareEgressLaunch(egress, this.sandboxId, workspace.dir));
    const supervisor = await Supervisor.start(
      buildLaunch({
        ...launch,
        workspace,
        extraReadOnlyDirs: [],
        readOnlyFiles: outbound?.files ?? [],
        argv: [launch.python, '-I', '-S', '-c', SUPERVISOR_SOURCE],
        cwd: launch.isolation === 'bwrap' ? workspace.workdir : workspace.home,
        env: egress === undefined ? {} : { SANDBOX_EGRESS_PORT: String(EGRESS_PROXY_PORT) },
        cgroupProcs,
      }),
      egress === undefined ? {} : { outbound: (stream) => egress.serve(stream, outbound?.authority) },
    );
    if (this.ended.aborted) supervisor.kill();
    return supervisor;
  }
}
