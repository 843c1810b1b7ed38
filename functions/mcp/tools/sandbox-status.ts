/** `sandbox_status`: the model's bearings; never creates the sandbox. */
import * as z from 'zod';

import type { ResourceLimit, SandboxLimits } from '../sandbox/types';
import { defineTool, type EgressStatus } from './tool';

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
  expires_at: z
    .string()
    .describe('When the sandbox falls asleep (or, where it cannot sleep, is deleted) if nothing uses it.'),
  name: z.string().nullable().describe('Its name (open_sandbox, name_sandbox); null: unnamed.'),
  sleep: z
    .object({
      mode: z
        .enum(['memory', 'files', 'off'])
        .describe('memory: paused with its memory; files: processes stopped, files kept; off: deleted when idle.'),
      keeps: z.string().describe('What survives its sleep, in words.'),
    })
    .describe('What happens when it goes unused.'),
  delete_at: z
    .string()
    .nullable()
    .describe('When it is deleted if nothing uses it (asleep or not); null where it cannot sleep.'),
  egress: z
    .object({
      mode: z
        .enum(['none', 'allowlist', 'all'])
        .describe('none: no network; allowlist: only what `allow` names; all: everything but `deny`.'),
      allow: z.array(z.string()),
      deny: z.array(z.string()),
      enforced_by: z.string(),
      secrets: z
        .array(z.object({ name: z.string(), hosts: z.array(z.string()), header: z.string() }))
        .describe(
          'Credentials the egress point adds, as `header`, to requests to `hosts`; their values are never in the ' +
            'sandbox: send the request without the header.',
        ),
    })
    .optional()
    .describe(
      'What the sandbox may reach over the network. Private, loopback, link-local and metadata addresses stay ' +
        'closed unless an IP or CIDR entry of allow names them.',
    ),
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
    const directory = ctx.sandboxes?.();
    const mode = directory?.sleepMode() ?? 'off';
    const deleteAtMs = directory?.deleteAtMs();
    const egress = ctx.egress?.();
    const structured = {
      backend: backend.backend,
      state: info === undefined ? ('not_started' as const) : ('running' as const),
      sandbox_id: info?.id ?? null,
      workdir: info?.workdir ?? null,
      isolation: info?.isolation ?? backend.isolation,
      network: info?.network ?? null,
      created_at: info?.createdAt ?? null,
      expires_at: ctx.expiresAt().toISOString(),
      name: directory?.currentName() ?? null,
      sleep: { mode, keeps: SLEEP_KEEPS[mode] },
      delete_at: deleteAtMs === undefined ? null : new Date(deleteAtMs).toISOString(),
      ...(egress !== undefined && {
        egress: {
          mode: egress.mode,
          allow: [...egress.allow],
          deny: [...egress.deny],
          enforced_by: egress.enforcedBy,
          secrets: egress.secrets.map((s) => ({ name: s.name, hosts: [...s.hosts], header: s.header })),
        },
      }),
      ...(backend.limits === undefined ? {} : { limits: toLimitsOutput(backend.limits) }),
    };
    const text =
      info === undefined
        ? `No sandbox yet (backend ${backend.backend}, isolation ${backend.isolation}); the first command or file ` +
          `operation starts one.`
        : `Sandbox ${structured.name === null ? '' : `"${structured.name}" `}${info.id} (${info.backend}) is ` +
          `running. Working directory: ${info.workdir}. Isolation: ${info.isolation}. Network: ${info.network}. ` +
          (mode === 'off'
            ? `Deleted if unused at ${structured.expires_at}.`
            : `Falls asleep if unused at ${structured.expires_at} (${SLEEP_KEEPS[mode]})` +
              `${structured.delete_at === null ? '' : `; deleted if unused at ${structured.delete_at}`}.`);
    const limits = backend.limits === undefined ? '' : ` Limits: ${describeLimits(backend.limits)}.`;
    return { text: `${text}${limits}${egress === undefined ? '' : ` ${describeEgress(egress)}`}`, structured };
  },
});

/** The egress policy in a sentence. */
function describeEgress(egress: EgressStatus): string {
  if (egress.mode === 'none') return 'Network: none (no route out).';
  const deny = egress.deny.length === 0 ? '' : `; denied: ${egress.deny.join(', ')}`;
  const reach = egress.mode === 'all' ? 'any public address' : `only ${egress.allow.join(', ')}`;
  const secrets = egress.secrets.map((s) => `${s.name} (${s.header}, for ${s.hosts.join(', ')})`);
  const added = secrets.length === 0 ? '' : ` Secrets added to requests outside the sandbox: ${secrets.join('; ')}.`;
  return `Network: ${reach}${deny} (through ${egress.enforcedBy}).${added}`;
}

/** What survives a sleep, by mode. */
const SLEEP_KEEPS = {
  memory: 'asleep it keeps its files, running processes and Python state',
  files: 'asleep it keeps its files; its processes are stopped and Python state is lost',
  off: 'this backend cannot keep a sandbox asleep: unused, it is deleted',
} as const;

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

/** 1 GiB, 128 MiB, 12 KiB. */
export function formatBytes(bytes: number): string {
  const gib = bytes / 2 ** 30;
  if (gib >= 1) return `${Number(gib.toFixed(1))} GiB`;
  return bytes >= 2 ** 20 ? `${Math.round(bytes / 2 ** 20)} MiB` : `${Math.round(bytes / 1024)} KiB`;
}
