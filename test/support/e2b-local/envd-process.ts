/**
 * envd's `process.Process` service for one sandbox (described by the SDK's descriptor in
 * node_modules/e2b/dist/index.js), on processes the sandbox's agent runs. As envd does: a process belongs to the
 * sandbox, not to the stream that started it (a client that goes away leaves it running; Connect re-attaches and gets
 * the output from
 * then on, output with nobody attached is dropped); `Connect-Timeout-Ms` of Start bounds the process's life
 * (SIGKILL at the deadline) and that of every stream (ended with `deadline_exceeded`); keepalive events
 * every `Keepalive-Ping-Interval` seconds of silence; the end event of a process that exited stays
 * available to Connect for 30 s. PTYs and StreamInput are not modelled (`unimplemented`).
 */
import { type CallContext, ConnectError, type ConnectService, isConnectCode, type ServerStream } from './connect';
import { expandAndResolve, userOfAuthorization } from './envd-users';
import { boolField, bytesOf, enumField, field, intField, type JsonObject, objectField, objectOf } from './proto-json';
import { stringArrayField, stringField, stringMapField } from './proto-json';
import { processEnvironment } from './sandbox-env';
import { AgentError, type AgentProcess, type SandboxRuntime } from './sandbox-runtime';

/** process.ProcessEvent.EndEvent in JSON. */
interface EndEvent {
  exitCode: number;
  exited: boolean;
  status: string;
  error?: string;
}

interface ProcessConfig {
  cmd: string;
  args: string[];
  envs: Record<string, string>;
  cwd?: string;
}

interface Subscriber {
  data(kind: 'stdout' | 'stderr', chunk: Buffer): void;
  end(event: EndEvent): void;
}

interface Managed {
  readonly pid: number;
  readonly tag: string | undefined;
  readonly config: ProcessConfig;
  readonly proc: AgentProcess;
  readonly subscribers: Set<Subscriber>;
}

/** How long the end of an exited process stays available to Connect (envd: terminatedRetentionTTL). */
const RETENTION_MS = 30_000;
/** envd's keepalive interval when the client names none. */
const DEFAULT_KEEPALIVE_S = 90;

const SIGNAL_NAMES: Readonly<Record<number, string>> = {
  0: 'SIGNAL_UNSPECIFIED',
  9: 'SIGNAL_SIGKILL',
  15: 'SIGNAL_SIGTERM',
};

/** Go's syscall.Signal.String() for the signals a sandbox process usually dies of. */
const GO_SIGNAL_TEXT: Readonly<Record<string, string>> = {
  SIGKILL: 'killed',
  SIGTERM: 'terminated',
  SIGINT: 'interrupt',
  SIGHUP: 'hangup',
  SIGQUIT: 'quit',
  SIGABRT: 'aborted',
  SIGSEGV: 'segmentation fault',
  SIGPIPE: 'broken pipe',
  SIGALRM: 'alarm clock',
  SIGUSR1: 'user defined signal 1',
  SIGUSR2: 'user defined signal 2',
  SIGBUS: 'bus error',
  SIGFPE: 'floating point exception',
};

/** The end event envd sends for an exit (Go's ProcessState: `exit status N` or `signal: killed`). */
export function endEventOf(exit: { exitCode: number | null; signal: string | null }): EndEvent {
  if (exit.signal !== null) {
    const status = `signal: ${GO_SIGNAL_TEXT[exit.signal] ?? exit.signal}`;
    return { exitCode: -1, exited: false, status, error: status };
  }
  const code = exit.exitCode ?? -1;
  const status = `exit status ${code}`;
  return code === 0 ? { exitCode: 0, exited: true, status } : { exitCode: code, exited: true, status, error: status };
}

function connectErrorOf(err: unknown, fallback = 'internal'): ConnectError {
  if (err instanceof ConnectError) return err;
  if (err instanceof AgentError) return new ConnectError(isConnectCode(err.code) ? err.code : 'internal', err.message);
  return new ConnectError(
    isConnectCode(fallback) ? fallback : 'internal',
    err instanceof Error ? err.message : String(err),
  );
}

function headerOf(ctx: CallContext, name: string): string | undefined {
  const value = ctx.req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export class ProcessService {
  private readonly processes = new Map<number, Managed>();
  private readonly retained = new Map<number, { tag: string | undefined; end: EndEvent }>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly runtime: SandboxRuntime,
    private readonly sandboxEnvVars: Readonly<Record<string, string>>,
  ) {}

  /** The Connect service. */
  readonly service: ConnectService = {
    unary: {
      List: async () => this.list(),
      SendInput: async (message) => this.sendInput(objectOf(message)),
      SendSignal: async (message) => this.sendSignal(objectOf(message)),
      CloseStdin: async (message) => this.closeStdin(objectOf(message)),
      Update: async (message) => this.update(objectOf(message)),
    },
    serverStream: {
      Start: (message, stream, ctx) => this.start(objectOf(message), stream, ctx),
      Connect: (message, stream, ctx) => this.connect(objectOf(message), stream, ctx),
    },
  };

  /** Stops the timers (the processes die with the sandbox). */
  dispose(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private timer(ms: number, action: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      action();
    }, ms);
    timer.unref();
    this.timers.add(timer);
    return timer;
  }

  private clearTimer(timer: NodeJS.Timeout | undefined): void {
    if (timer === undefined) return;
    clearTimeout(timer);
    this.timers.delete(timer);
  }

  private async start(msg: JsonObject, stream: ServerStream, ctx: CallContext): Promise<void> {
    const user = userOfAuthorization(headerOf(ctx, 'authorization'));
    const processMsg = objectField(msg, 'process') ?? {};
    if (objectField(msg, 'pty') !== undefined)
      throw new ConnectError('unimplemented', 'PTYs are not modelled by the local E2B service');
    const config: ProcessConfig = {
      cmd: stringField(processMsg, 'cmd') ?? '',
      args: stringArrayField(processMsg, 'args'),
      envs: stringMapField(processMsg, 'envs'),
    };
    const cwdField = stringField(processMsg, 'cwd');
    if (cwdField !== undefined) config.cwd = cwdField;
    const tag = stringField(msg, 'tag');
    // Absent means on, for clients older than the field.
    const stdin = boolField(msg, 'stdin') ?? true;
    const cwd = expandAndResolve(cwdField ?? '', user);
    let proc: AgentProcess;
    try {
      proc = await this.runtime.startProcess({
        cmd: config.cmd,
        args: config.args,
        cwd,
        env: processEnvironment(user, this.sandboxEnvVars, config.envs),
        stdin,
      });
    } catch (err) {
      throw connectErrorOf(err, 'invalid_argument');
    }
    this.retained.delete(proc.pid);
    const managed: Managed = { pid: proc.pid, tag, config, proc, subscribers: new Set() };
    this.processes.set(proc.pid, managed);
    // Subscribed before the output is wired, so that nothing the process wrote first is lost to it.
    this.attach(managed, stream, ctx);
    proc.onStdout((chunk) => {
      for (const s of managed.subscribers) s.data('stdout', chunk);
    });
    proc.onStderr((chunk) => {
      for (const s of managed.subscribers) s.data('stderr', chunk);
    });
    // The process's deadline (envd: exec.CommandContext with the request's timeout).
    const deadline =
      ctx.timeoutMs > 0 ? this.timer(ctx.timeoutMs, () => proc.signal('SIGKILL').catch(() => undefined)) : undefined;
    void proc.exited.then((exit) => {
      this.clearTimer(deadline);
      const end = endEventOf(exit);
      if (this.processes.get(proc.pid) === managed) this.processes.delete(proc.pid);
      this.retained.set(proc.pid, { tag, end });
      this.timer(RETENTION_MS, () => {
        if (this.retained.get(proc.pid)?.end === end) this.retained.delete(proc.pid);
      });
      for (const subscriber of [...managed.subscribers]) subscriber.end(end);
      managed.subscribers.clear();
    });
  }

  private async connect(msg: JsonObject, stream: ServerStream, ctx: CallContext): Promise<void> {
    const selector = objectField(msg, 'process') ?? {};
    const managed = this.find(selector);
    if (managed === undefined) {
      const retained = this.findRetained(selector);
      if (retained === undefined) throw this.notFound(selector);
      stream.send({ event: { start: { pid: retained.pid } } });
      stream.send({ event: { end: retained.end } });
      stream.end();
      return;
    }
    this.attach(managed, stream, ctx);
  }

  /** Streams `managed` to `stream`: start, output, keepalives, end; until the end, the client leaving, or the
   * deadline. */
  private attach(managed: Managed, stream: ServerStream, ctx: CallContext): void {
    stream.send({ event: { start: { pid: managed.pid } } });
    const intervalS = Number(headerOf(ctx, 'keepalive-ping-interval'));
    const keepaliveMs = (Number.isFinite(intervalS) && intervalS > 0 ? intervalS : DEFAULT_KEEPALIVE_S) * 1000;
    let keepalive: NodeJS.Timeout | undefined;
    const armKeepalive = (): void => {
      this.clearTimer(keepalive);
      keepalive = this.timer(keepaliveMs, () => {
        stream.send({ event: { keepalive: {} } });
        armKeepalive();
      });
    };
    const deadline =
      ctx.timeoutMs > 0
        ? this.timer(ctx.timeoutMs, () =>
            stream.end(new ConnectError('deadline_exceeded', 'context deadline exceeded')),
          )
        : undefined;
    const subscriber: Subscriber = {
      data: (kind, chunk) => {
        stream.send({ event: { data: { [kind]: chunk.toString('base64') } } });
        armKeepalive();
      },
      end: (event) => {
        stream.send({ event: { end: event } });
        stream.end();
      },
    };
    managed.subscribers.add(subscriber);
    armKeepalive();
    stream.onClose(() => {
      managed.subscribers.delete(subscriber);
      this.clearTimer(keepalive);
      this.clearTimer(deadline);
    });
  }

  private find(selector: JsonObject): Managed | undefined {
    const pid = intField(selector, 'pid');
    if (pid !== undefined) return this.processes.get(pid);
    const tag = stringField(selector, 'tag');
    if (tag !== undefined) return [...this.processes.values()].find((m) => m.tag === tag);
    return undefined;
  }

  private findRetained(selector: JsonObject): { pid: number; end: EndEvent } | undefined {
    const pid = intField(selector, 'pid');
    if (pid !== undefined) {
      const retained = this.retained.get(pid);
      return retained === undefined ? undefined : { pid, end: retained.end };
    }
    const tag = stringField(selector, 'tag');
    for (const [retainedPid, retained] of this.retained)
      if (tag !== undefined && retained.tag === tag) return { pid: retainedPid, end: retained.end };
    return undefined;
  }

  /** The process `selector` names; not_found otherwise (envd's getProcess). */
  private get(selector: JsonObject): Managed {
    const managed = this.find(selector);
    if (managed === undefined) throw this.notFound(selector);
    return managed;
  }

  private notFound(selector: JsonObject): ConnectError {
    const pid = intField(selector, 'pid');
    if (pid !== undefined) return new ConnectError('not_found', `process with pid ${pid} not found`);
    const tag = stringField(selector, 'tag');
    if (tag !== undefined) return new ConnectError('not_found', `process with tag ${tag} not found`);
    return new ConnectError('invalid_argument', 'invalid input type');
  }

  private list(): unknown {
    return {
      processes: [...this.processes.values()].map((m) => ({
        config: m.config,
        pid: m.pid,
        ...(m.tag === undefined ? {} : { tag: m.tag }),
      })),
    };
  }

  private async sendInput(msg: JsonObject): Promise<unknown> {
    const managed = this.get(objectField(msg, 'process') ?? {});
    const input = objectField(msg, 'input') ?? {};
    if (field(input, 'stdin') !== undefined) {
      try {
        await managed.proc.sendStdin(bytesOf(field(input, 'stdin'), 'stdin'));
      } catch (err) {
        throw connectErrorOf(err);
      }
      return {};
    }
    if (field(input, 'pty') !== undefined) {
      throw new ConnectError(
        'internal',
        'error writing to tty: tty not assigned to process — input should be written to the stdin, not the tty',
      );
    }
    throw new ConnectError('unimplemented', 'invalid input type');
  }

  private async sendSignal(msg: JsonObject): Promise<unknown> {
    const managed = this.get(objectField(msg, 'process') ?? {});
    const signal = enumField(msg, 'signal', SIGNAL_NAMES) ?? 'SIGNAL_UNSPECIFIED';
    const native = signal === 'SIGNAL_SIGKILL' ? 'SIGKILL' : signal === 'SIGNAL_SIGTERM' ? 'SIGTERM' : undefined;
    if (native === undefined) throw new ConnectError('unimplemented', `invalid signal: ${signal}`);
    try {
      await managed.proc.signal(native);
    } catch (err) {
      throw new ConnectError('internal', err instanceof Error ? err.message : String(err));
    }
    return {};
  }

  private async closeStdin(msg: JsonObject): Promise<unknown> {
    const managed = this.get(objectField(msg, 'process') ?? {});
    try {
      await managed.proc.endStdin();
    } catch (err) {
      throw new ConnectError('unknown', `error closing stdin: ${err instanceof Error ? err.message : String(err)}`);
    }
    return {};
  }

  private async update(msg: JsonObject): Promise<unknown> {
    this.get(objectField(msg, 'process') ?? {});
    if (objectField(msg, 'pty') !== undefined)
      throw new ConnectError('internal', 'error resizing tty: tty not assigned to process');
    return {};
  }
}
