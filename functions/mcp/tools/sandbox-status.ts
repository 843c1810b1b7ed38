/** `sandbox_status`: the model's bearings; never creates the sandbox. */
import * as z from 'zod';

import type { ResourceLimit, SandboxLimits } from '../sandbox/types';
import { defineTool } from './tool';

const Limit = z.object({
  value: z.number().nullable().describe('null: no limit holds.'),
  enforced_by: z.string(),
});

const Output = z.object({
  backend: z.string(),
  state: z.enum(['running', 'not_started']).describe('not_started: the first tool that needs the sandbox creates it.'),
  sandbox_id: z.string().nullable(),
  workdir: z.string().nullable(),
  isolation: z.string(),
  network: z.string().nullable(),
  created_at: z.string().nullable(),
  expires_at: z.string().describe('When the sandbox is reclaimed if nothing uses it; each call moves it on.'),
  limits: z
    .object({
      memory_bytes: Limit,
      processes: Limit,
      cpus: Limit.describe('A share of CPU time, in CPUs.'),
      disk_bytes: Limit.describe('All files of the sandbox together.'),
    })
    .optional()
    .describe('Absent where the platform sets them (E2B: the template).'),
});

export const sandboxStatusTool = defineTool({
  name: 'sandbox_status',
  title: 'Sandbox status',
  description:
    'Show the sandbox: backend, state, id, working directory, isolation, network access and when it expires if unused.',
  input: z.strictObject({}),
  output: Output,
  annotations: { readOnlyHint: true, idempotentHint: true },
  async run(_args, ctx) {
    const sandbox = ctx.sandbox.current();
    const backend = ctx.backend();
    const info = sandbox?.info();
    const structured = {
      backend: backend.backend,
      state: info === undefined ? ('not_started' as const) : ('running' as const),
      sandbox_id: info?.id ?? null,
      workdir: info?.workdir ?? null,
      isolation: info?.isolation ?? backend.isolation,
      network: info?.network ?? null,
      created_at: info?.createdAt ?? null,
      expires_at: ctx.expiresAt().toISOString(),
      ...(backend.limits === undefined ? {} : { limits: toLimitsOutput(backend.limits) }),
    };
    const text =
      info === undefined
        ? `No sandbox yet (backend ${backend.backend}, isolation ${backend.isolation}); the first command or file ` +
          `operation starts one.`
        : `Sandbox ${info.id} (${info.backend}) is running. Working directory: ${info.workdir}. Isolation: ` +
          `${info.isolation}. Network: ${info.network}. Expires if unused at ${structured.expires_at}.`;
    return {
      text: backend.limits === undefined ? text : `${text} Limits: ${describeLimits(backend.limits)}.`,
      structured,
    };
  },
});

function toLimitsOutput(limits: SandboxLimits) {
  const out = (limit: ResourceLimit) => ({ value: limit.value, enforced_by: limit.enforcedBy });
  return {
    memory_bytes: out(limits.memory),
    processes: out(limits.processes),
    cpus: out(limits.cpu),
    disk_bytes: out(limits.disk),
  };
}

/** The limits in a sentence a model can act on ("memory 1 GiB (cgroup v1), ..."). */
export function describeLimits(limits: SandboxLimits): string {
  const show = (name: string, limit: ResourceLimit, format: (value: number) => string) =>
    `${name} ${limit.value === null ? 'unlimited' : format(limit.value)} (${limit.enforcedBy})`;
  return [
    show('memory', limits.memory, formatBytes),
    show('processes', limits.processes, String),
    show('CPU', limits.cpu, (cpus) => `${cpus} CPU`),
    show('disk', limits.disk, formatBytes),
  ].join(', ');
}

/** 1 GiB, 128 MiB. */
export function formatBytes(bytes: number): string {
  const gib = bytes / 2 ** 30;
  return gib >= 1 ? `${Number(gib.toFixed(1))} GiB` : `${Math.round(bytes / 2 ** 20)} MiB`;
}
