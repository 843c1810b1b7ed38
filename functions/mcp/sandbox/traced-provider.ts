/**
 * A sandbox provider whose work is traced (telemetry/telemetry.ts): a span for each sandbox made, found again or
 * woken, and for each command, code run, file operation and background-process operation, as children of the tool
 * call that asked for it. What a span records is the operation and its outcome (exit code, sizes, whether it timed
 * out), never a path, file content or argument; the text of commands and code only with
 * MCP_TELEMETRY_COMMAND_TEXT=true. Used only when telemetry is on (create-provider.ts).
 */
import type { SpanAttributes, Telemetry } from '../telemetry/telemetry';
import { withTracedMethods } from '../telemetry/traced-methods';
import type { RunCodeResult, RunCommandResult, Sandbox, SandboxProvider } from './types';

export interface TracedProviderOptions {
  /** Record the text of commands and code (MCP_TELEMETRY_COMMAND_TEXT). */
  readonly commandText: boolean;
}

/** Longest command or code text a span keeps, with the opt-in. */
const TEXT_MAX = 1_024;

/** The traced methods of a sandbox, by span name: what each records before and after. */
const TRACED: Partial<Record<keyof Sandbox & string, string>> = {
  runCommand: 'sandbox.run_command',
  runCode: 'sandbox.run_code',
  readFile: 'sandbox.read_file',
  writeFile: 'sandbox.write_file',
  listFiles: 'sandbox.list_files',
  openFile: 'sandbox.open_file',
  receiveFile: 'sandbox.receive_file',
  nativeFileUrl: 'sandbox.file_url',
  preview: 'sandbox.preview',
  startBackground: 'sandbox.start_background',
  listBackground: 'sandbox.list_background',
  readBackgroundLog: 'sandbox.read_background_log',
  signalBackground: 'sandbox.signal_background',
  writeBackgroundStdin: 'sandbox.write_background_stdin',
  sleep: 'sandbox.sleep',
  kill: 'sandbox.kill',
  release: 'sandbox.release',
};

export function traceSandboxProvider(
  provider: SandboxProvider,
  telemetry: Telemetry,
  options: TracedProviderOptions,
): SandboxProvider {
  // The same sandbox object always gets the same traced one: callers compare them.
  const traced = new WeakMap<Sandbox, Sandbox>();
  const wrap = (sandbox: Sandbox): Sandbox => {
    let proxy = traced.get(sandbox);
    if (proxy === undefined) {
      proxy = traceSandbox(sandbox, telemetry, options);
      traced.set(sandbox, proxy);
    }
    return proxy;
  };
  const backend = provider.status().backend;
  return {
    status: () => provider.status(),
    sleepMode: () => provider.sleepMode(),
    catalog: provider.catalog,
    create: (owner, createOptions) =>
      telemetry.span(
        'sandbox.create',
        { 'sandbox_mcp.backend': backend, 'sandbox_mcp.fork': createOptions?.from !== undefined },
        async () => wrap(await provider.create(owner, createOptions)),
      ),
    attach: (owner) =>
      telemetry.span('sandbox.attach', { 'sandbox_mcp.backend': backend }, async (note) => {
        const sandbox = await provider.attach(owner);
        note.set({ 'sandbox_mcp.found': sandbox !== undefined, 'sandbox_mcp.woken': sandbox?.woke !== undefined });
        return sandbox === undefined ? undefined : wrap(sandbox);
      }),
    recordEnded: (owner, untilMs) => provider.recordEnded(owner, untilMs),
    hasEnded: (owner, nowMs) => provider.hasEnded(owner, nowMs),
  };
}

function traceSandbox(sandbox: Sandbox, telemetry: Telemetry, options: TracedProviderOptions): Sandbox {
  return withTracedMethods(sandbox, TRACED, (name, method, args, run) =>
    telemetry.span(name, startAttributes(method, args, options), async (note) => {
      const result = await run();
      note.set(endAttributes(method, result));
      return result;
    }),
  );
}

/** What a call says before it runs: only the text of a command or code, and only with the opt-in. */
function startAttributes(method: string, args: readonly unknown[], options: TracedProviderOptions): SpanAttributes {
  if (!options.commandText) return {};
  const request = args[0] as { command?: unknown; code?: unknown; language?: unknown } | undefined;
  const text = method === 'runCode' ? request?.code : request?.command;
  return typeof text === 'string' ? { 'sandbox_mcp.command': text.slice(0, TEXT_MAX) } : {};
}

/** What a call's result says: exit code and time-outs of commands and code, never their output. */
function endAttributes(method: string, result: unknown): SpanAttributes {
  if (method === 'runCommand') {
    const run = result as RunCommandResult;
    return {
      'process.exit.code': run.exitCode ?? undefined,
      'sandbox_mcp.timed_out': run.timedOut,
      'sandbox_mcp.cancelled': run.cancelled,
    };
  }
  if (method === 'runCode') {
    const run = result as RunCodeResult;
    return {
      'sandbox_mcp.code_error': run.error !== null,
      'sandbox_mcp.timed_out': run.timedOut,
      'sandbox_mcp.cancelled': run.cancelled,
    };
  }
  if (method === 'readFile') return { 'sandbox_mcp.bytes': (result as { sizeBytes: number }).sizeBytes };
  if (method === 'receiveFile') return { 'sandbox_mcp.bytes': (result as { bytes: number }).bytes };
  return {};
}
