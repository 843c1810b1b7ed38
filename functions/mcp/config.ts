/**
 * Environment → one frozen, validated Config. The only reader of the environment: `index.ts` and
 * `stdio.ts` pass `process.env` in, everything else gets the Config.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { isAbsolute } from 'node:path';

import { type FileUrlConfig, loadFileUrlConfig } from './config-files';
import { loadOAuthConfig, type OAuthConfig } from './config-oauth';
import { e2bPolicyProblems, e2bSecretProblems } from './egress/e2b-network';
import { type EgressConfig, loadEgressConfig } from './egress/egress-config';
import { ConfigError, toErrnoCode } from './errors';
import { isLogLevel, type LogLevel } from './log';
import { readTelemetrySettings, type TelemetrySettings } from './telemetry/settings';

export type AuthMode = 'bearer' | 'none';
export type IsolationSetting = 'auto' | 'bwrap' | 'none';

/** How callers prove who they are. */
export interface AuthConfig {
  /**
   * `bearer`: every /mcp request needs one of `tokens` or, with `oauth`, an access token of its issuer; with neither
   * (an empty list, no issuer) everything is refused.
   */
  readonly mode: AuthMode;
  /** MCP_AUTH_TOKENS (comma-separated) and MCP_AUTH_TOKEN_FILE (one per line), merged. Never logged. */
  readonly tokens: readonly string[];
  /** Where the tokens came from, for the start-up banner (never the tokens themselves). */
  readonly source: 'MCP_AUTH_TOKENS' | 'MCP_AUTH_TOKEN_FILE' | 'both' | 'none';
  /** MCP_OAUTH_ISSUER and the rest (config-oauth.ts): OAuth access tokens accepted beside the static tokens. */
  readonly oauth: OAuthConfig | undefined;
}

/** The local sandbox backend's settings. */
export interface LocalSandboxConfig {
  /** LOCAL_SANDBOX_ROOT: where session workspaces live. @default the OS temp dir */
  readonly root: string;
  /** LOCAL_SANDBOX_ISOLATION: `auto` uses bubblewrap when it works, `bwrap` requires it. @default 'auto' */
  readonly isolation: IsolationSetting;
  /** LOCAL_SANDBOX_NETWORK=on lets sandboxed processes reach the network under bubblewrap. @default false */
  readonly allowNetwork: boolean;
  /** LOCAL_SANDBOX_PYTHON: the Python for run_code and each sandbox's supervisor. @default 'python3' */
  readonly python: string;
  /**
   * LOCAL_SANDBOX_DISK_MB in bytes: the size of each new workspace's disk image, which holds all its files
   * (sandbox/local/workspace-disk.ts); 0 or absent: no disk limit, on purpose. @default 1 GiB
   */
  readonly diskBytes?: number;
  /** Paths that must never be visible inside the sandbox (the token file). */
  readonly hiddenPaths: readonly string[];
  /**
   * True when other hosts can reach the server (a non-loopback address, or FC): then `auto` never falls back to
   * running sandbox code without isolation; only LOCAL_SANDBOX_ISOLATION=none does that, on purpose.
   */
  readonly exposed: boolean;
  /** LOCAL_SANDBOX_MEMORY_MB: memory per sandbox, in MiB (a cgroup, else RLIMIT_DATA per process). @default 1024 */
  readonly memoryMb?: number;
  /** LOCAL_SANDBOX_MAX_PROCESSES: processes (and threads) per sandbox (a pids cgroup, and RLIMIT_NPROC with a sandbox
   * user). @default 512 */
  readonly maxProcesses?: number;
  /** LOCAL_SANDBOX_CPUS: CPU time per sandbox, in CPUs (decimals allowed; a cpu cgroup). @default 1 */
  readonly cpus?: number;
  /**
   * LOCAL_SANDBOX_PREVIEW_HOST: the address get_preview_url's forwarders listen on and their URLs name. An
   * address other than loopback needs LOCAL_SANDBOX_PREVIEW_PUBLIC=on. On every address previews are behind
   * capability URLs (a token signed with MCP_SESSION_SECRET, exchanged for a cookie: sandbox/local/preview-auth.ts).
   * @default '127.0.0.1'
   */
  readonly previewHost?: string;
  /**
   * LOCAL_SANDBOX_PREVIEW_DOMAIN: a DNS name every `<label>.<name>` of which resolves to the preview host (a
   * wildcard record; `localhost` on a machine whose browser is the user's: browsers resolve every *.localhost to
   * loopback). Each sandbox's preview URLs then name `<sandbox id>.<domain>`, and its previews answer only to that
   * Host, so that a browser keeps each sandbox's cookies apart. Lower-cased. @default none: URLs name the address
   */
  readonly previewDomain?: string;
}

/** The defaults of the local sandbox's resource limits. */
export const LOCAL_LIMIT_DEFAULTS = Object.freeze({ memoryMb: 1024, maxProcesses: 512, cpus: 1 });

/** The E2B backend's settings (E2B's cloud, or Alibaba Cloud's E2B-compatible service). */
export interface E2BConfig {
  /** E2B_API_KEY. Never logged, never passed into a sandbox. */
  readonly apiKey: string | undefined;
  /** E2B_TEMPLATE. @default 'code-interpreter-v1' */
  readonly template: string;
  /** E2B_DOMAIN (Alibaba Cloud: `<region>.e2b.fc.aliyuncs.com`). */
  readonly domain: string | undefined;
  /** E2B_API_URL (Alibaba Cloud: `https://api.<region>.e2b.fc.aliyuncs.com`). */
  readonly apiUrl: string | undefined;
  /**
   * E2B_STATE_DIR: a directory every instance shares (a NAS mount on FC) where ended sessions are recorded, so
   * that every instance refuses their ids (sandbox/tombstones.ts). @default none: only the instance that
   * ended a session refuses its id
   */
  readonly stateDir?: string;
  /** E2B_MAX_CREATES_PER_S: sandbox creations per second across the instance. @default 1 (Hobby plan) */
  readonly maxCreatesPerS: number;
  /**
   * E2B_CHARTS: how the service's code interpreter returns charts. `inline`: as images in the results (E2B's
   * cloud); `files`: only as files in the sandbox (Alibaba Cloud's service), so the backend saves open
   * matplotlib figures itself. @default `files` when E2B_DOMAIN or E2B_API_URL is on aliyuncs.com, else `inline`
   */
  readonly charts: 'inline' | 'files';
  /**
   * E2B_SLEEP: how an idle sandbox sleeps. `memory`: paused with its memory (processes and Python state survive);
   * `files`: paused with its files only; `off`: killed, as sandboxes were before they slept. A service that refuses
   * a mode gets the next lower one (e2b/sleep-terms.ts); one that cannot find sandboxes again (no listing and no
   * E2B_STATE_DIR) never sleeps them. @default 'memory'
   */
  readonly sleep: 'memory' | 'files' | 'off';
}

/** How long idle sandboxes are kept asleep, and how many (sandbox/retention.ts). */
export interface SleepingConfig {
  /** MCP_SANDBOX_RETENTION_S: a sandbox unused this long is deleted. @default 604800 (7 days) */
  readonly retentionS: number;
  /** MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL: sandboxes one credential keeps asleep. @default 10 */
  readonly maxPerCredential: number;
  /**
   * MCP_MAX_SLEEPING_DISK_MB_PER_CREDENTIAL: disk the sleeping sandboxes of one credential may take, in MiB (the local
   * backend); 0: no cap. @default 10240
   */
  readonly maxDiskMbPerCredential: number;
}

/**
 * One credential's share of an instance. Where only one credential can exist (MCP_AUTH=none, or one static token and
 * no OAuth issuer) it is the whole instance; otherwise a quarter, so that no two credentials can leave a third
 * without a session (from MCP_MAX_SESSIONS=3 up).
 */
export interface PerCredentialLimits {
  /** MCP_MAX_SESSIONS_PER_CREDENTIAL: 2025-era sessions. @default MCP_MAX_SESSIONS with one credential, else a quarter
   * of it, rounded up */
  readonly sessions: number;
  /** MCP_MAX_SANDBOXES_PER_CREDENTIAL: running sandboxes, of both protocol eras together. @default as sessions */
  readonly sandboxes: number;
  /** MCP_MAX_CALLS_PER_CREDENTIAL: tool calls in flight at once. @default 64 */
  readonly calls: number;
  /** MCP_MAX_TASKS_PER_CREDENTIAL: MCP tasks running at once, across the instances that share the state. @default 16 */
  readonly tasks: number;
  /** MCP_INITIALIZE_BURST: sessions one credential may open on an instance at once, before the rate applies. @default
   * 120 */
  readonly initializeBurst: number;
  /**
   * MCP_INITIALIZE_PER_MIN: sessions one credential may open on an instance per minute after its burst (a token
   * bucket, sessions/initialize-rate.ts); more get 429 with Retry-After. 0: no limit. @default 120
   */
  readonly initializePerMin: number;
}

/** The whole server configuration. */
export interface Config {
  /** PORT (or FC_CUSTOM_LISTEN_PORT on FC). @default 9000 */
  readonly port: number;
  /** HOST; forced to 0.0.0.0 on FC. @default '127.0.0.1' */
  readonly host: string;
  /** True when FC_CUSTOM_LISTEN_PORT or FC_FUNCTION_NAME is present. */
  readonly onFc: boolean;
  readonly auth: AuthConfig;
  /** MCP_SESSION_IDLE_TTL_S: a session unused this long is closed and its sandbox killed. @default 1800 */
  readonly sessionIdleTtlS: number;
  /**
   * MCP_SANDBOX_FIRST_LEASE_S: a sandbox made for a 2026-07-28 call without a handle is destroyed after this long
   * unless a call comes back with its handle (then it lives on the idle TTL). @default 300, never above the idle TTL
   */
  readonly sandboxFirstLeaseS: number;
  /** MCP_SESSION_MAX_AGE_S: session ids (and sandbox handles) older than this are expired. @default 21600 */
  readonly sessionMaxAgeS: number;
  /** MCP_SESSION_SECRET (≥ 32 bytes) signs session ids and sandbox handles; random per process when unset. Never
   * logged. */
  readonly sessionSecret: string;
  /** Whether the secret was configured (sessions can move between instances) or made up for this process. */
  readonly sessionSecretSource: 'configured' | 'generated';
  /** MCP_MAX_SESSIONS: sessions one instance holds. @default 100 */
  readonly maxSessions: number;
  /** What one credential may take of the instance (sessions/fair-share.ts). */
  readonly perCredential: PerCredentialLimits;
  /** MCP_ALLOWED_ORIGINS (comma-separated, `*` for any); `undefined` means loopback origins only. */
  readonly allowedOrigins: readonly string[] | undefined;
  /** MCP_ALLOWED_HOSTS (comma-separated host names); `undefined`: loopback names when bound to loopback, else any. */
  readonly allowedHosts: readonly string[] | undefined;
  /** MCP_MAX_BODY_BYTES: larger request bodies get 413. @default 4 MiB */
  readonly maxBodyBytes: number;
  /**
   * MCP_MAX_CONNECTIONS: open connections served at most; the request of one more is answered 503 with
   * `Retry-After` and its connection closed (http/connection-guard.ts). @default 1024
   */
  readonly maxConnections: number;
  /**
   * MCP_MAX_CONNECTIONS_PER_PEER: open connections from one address at most (0: no cap), answered beyond it as
   * beyond MCP_MAX_CONNECTIONS; through a trusted proxy (MCP_TRUSTED_PROXIES), requests in flight per client
   * address. @default 128, and 0 on FC, where every connection comes from the platform's front end
   */
  readonly maxConnectionsPerPeer: number;
  /**
   * MCP_TRUSTED_PROXIES (comma-separated IP addresses and CIDR ranges, IPv4 or IPv6): reverse proxies whose
   * `X-Forwarded-For` (else `Forwarded: for=`) names the client (http/client-address.ts). A connection from one
   * is not capped per peer; its requests in flight are, per client address. @default none: the socket's peer
   * is the client, and forwarding headers are ignored
   */
  readonly trustedProxies: readonly string[];
  /**
   * MCP_TOOL_TIMEOUT_MAX_S: upper bound for any tool's `timeout_ms`. Must leave MCP_FUNCTION_TIMEOUT_S a
   * margin, so the server always answers before FC cuts the request. @default 300, or the function timeout less the
   * margin
   */
  readonly toolTimeoutMaxS: number;
  /** MCP_FUNCTION_TIMEOUT_S: FC's function timeout (set by the deploy artifact); `undefined` when not on a timed
   * platform. */
  readonly functionTimeoutS: number | undefined;
  /** SANDBOX_BACKEND. @default 'e2b' when E2B_API_KEY is set, else 'local' */
  readonly sandboxBackend: 'local' | 'e2b';
  /**
   * Where MCP tasks are kept, for every instance to find (tasks/task-store.ts): the local root, or E2B_STATE_DIR;
   * `undefined` (E2B without a state directory): no tasks.
   */
  readonly taskRoot?: string;
  readonly local: LocalSandboxConfig;
  readonly e2b: E2BConfig;
  readonly sleeping: SleepingConfig;
  /** What sandboxes may reach (egress/egress-config.ts). */
  readonly egress: EgressConfig;
  /** The URLs of `get_file_url` (config-files.ts). */
  readonly fileUrls: FileUrlConfig;
  /** LOG_LEVEL. @default 'info' */
  readonly logLevel: LogLevel;
  /** OpenTelemetry's OTEL_* settings (telemetry/settings.ts); undefined: telemetry off. */
  readonly telemetry: TelemetrySettings | undefined;
}

type Env = Record<string, string | undefined>;

/** Request bodies are read up to this many bytes unless configured (MCP_MAX_BODY_BYTES). */
const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Time kept between the longest tool call and the function timeout: the answer, the kill, the network. */
const FUNCTION_TIMEOUT_MARGIN_S = 10;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** True when `host` is a loopback bind address. */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOSTS.has(host) || host.startsWith('127.');
}

/** Splits a comma- or newline-separated list, trimming blanks and `#` comments. */
export function parseList(value: string): string[] {
  return value
    .split(/[,\n]/)
    .map((item) => item.replace(/#.*$/, '').trim())
    .filter((item) => item.length > 0);
}

export interface LoadConfigOptions {
  /** Whether the server runs as root (sandbox users then separate sandboxes). @default process.getuid() === 0 */
  readonly asRoot?: boolean;
}

/** Reads and validates the configuration; throws one ConfigError that lists every problem. */
export function loadConfig(env: Env, options: LoadConfigOptions = {}): Config {
  const asRoot = options.asRoot ?? process.getuid?.() === 0;
  const problems: string[] = [];
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  };

  const onFc = env.FC_CUSTOM_LISTEN_PORT !== undefined || env.FC_FUNCTION_NAME !== undefined;
  const port = onFc ? int('FC_CUSTOM_LISTEN_PORT', 9000, 1, 65535) : int('PORT', 9000, 0, 65535);
  const host = onFc ? '0.0.0.0' : env.HOST?.trim() || '127.0.0.1';

  const auth = loadAuth(env, problems);
  if (auth.mode === 'none' && env.MCP_AUTH !== 'none' && !isLoopbackHost(host)) {
    problems.push(
      `no auth token is configured and the server would listen on ${host}: set MCP_AUTH_TOKENS or ` +
        `MCP_AUTH_TOKEN_FILE, or set MCP_AUTH=none to run without auth on purpose`,
    );
  }

  const apiKey = env.E2B_API_KEY?.trim() || undefined;
  const backend = env.SANDBOX_BACKEND?.trim() || (apiKey === undefined ? 'local' : 'e2b');
  if (backend !== 'local' && backend !== 'e2b')
    problems.push(`SANDBOX_BACKEND must be "local" or "e2b" (got "${backend}")`);
  if (backend === 'e2b' && apiKey === undefined) problems.push('SANDBOX_BACKEND=e2b needs E2B_API_KEY');
  const apiUrl = env.E2B_API_URL?.trim() || undefined;
  if (apiUrl !== undefined && !/^https?:\/\/[^/\s]+/.test(apiUrl))
    problems.push(`E2B_API_URL must be an http(s) URL (got "${apiUrl}")`);
  const onAlibaba = /aliyuncs\.com/i.test(`${env.E2B_DOMAIN ?? ''} ${apiUrl ?? ''}`);
  const charts = env.E2B_CHARTS?.trim() || (onAlibaba ? 'files' : 'inline');
  if (charts !== 'inline' && charts !== 'files')
    problems.push(`E2B_CHARTS must be "inline" or "files" (got "${charts}")`);
  const sleep = env.E2B_SLEEP?.trim() || 'memory';
  if (sleep !== 'memory' && sleep !== 'files' && sleep !== 'off')
    problems.push(`E2B_SLEEP must be memory, files or off (got "${sleep}")`);
  const stateDir = env.E2B_STATE_DIR?.trim() || undefined;
  if (stateDir !== undefined && !isAbsolute(stateDir))
    problems.push(`E2B_STATE_DIR must be an absolute path (got "${stateDir}")`);
  const maxCreatesPerS = Number(env.E2B_MAX_CREATES_PER_S ?? 1);
  if (!Number.isFinite(maxCreatesPerS) || maxCreatesPerS <= 0 || maxCreatesPerS > 100) {
    problems.push(
      `E2B_MAX_CREATES_PER_S must be a number above 0 and at most 100 (got "${env.E2B_MAX_CREATES_PER_S}")`,
    );
  }

  const isolation = env.LOCAL_SANDBOX_ISOLATION?.trim() || 'auto';
  if (isolation !== 'auto' && isolation !== 'bwrap' && isolation !== 'none') {
    problems.push(`LOCAL_SANDBOX_ISOLATION must be auto, bwrap or none (got "${isolation}")`);
  }
  const exposed = onFc || !isLoopbackHost(host);
  if (backend === 'local' && isolation === 'none') {
    // Unisolated sandbox code runs as the server's own user unless the server is root (sandbox users).
    if (!asRoot && exposed) {
      problems.push(
        `LOCAL_SANDBOX_ISOLATION=none runs sandbox code as the server's own user, with its files and secrets; ` +
          `refused on ${onFc ? 'FC' : host} (reachable from other hosts): run as root (each sandbox then has a ` +
          `user of its own), install bubblewrap, or listen on loopback`,
      );
    }
  }
  // Sandbox code runs on this host: masked or not, a token file every user may read is one step from it (an
  // alias the mask misses, a hard link, isolation switched off later).
  const tokenFile = env.MCP_AUTH_TOKEN_FILE;
  if (
    backend === 'local' &&
    tokenFile !== undefined &&
    ((statSync(tokenFile, { throwIfNoEntry: false })?.mode ?? 0) & 0o004) !== 0
  ) {
    problems.push(
      `MCP_AUTH_TOKEN_FILE is readable by every user, and the local backend runs sandbox code on this host: ` +
        `chmod 600 ${tokenFile}`,
    );
  }
  const diskMb = int('LOCAL_SANDBOX_DISK_MB', 1024, 0, 1_048_576);
  // Smaller, an ext4 image holds little but its own metadata.
  if (diskMb > 0 && diskMb < 16)
    problems.push(
      `LOCAL_SANDBOX_DISK_MB must be 0 (no disk limit) or from 16 to 1048576 (got "${env.LOCAL_SANDBOX_DISK_MB}")`,
    );
  const root = env.LOCAL_SANDBOX_ROOT?.trim() || tmpdir();
  if (!isAbsolute(root)) problems.push(`LOCAL_SANDBOX_ROOT must be an absolute path (got "${root}")`);
  const network = env.LOCAL_SANDBOX_NETWORK?.trim() || 'off';
  if (network !== 'on' && network !== 'off')
    problems.push(`LOCAL_SANDBOX_NETWORK must be on or off (got "${network}")`);
  const cpusRaw = env.LOCAL_SANDBOX_CPUS?.trim() || String(LOCAL_LIMIT_DEFAULTS.cpus);
  const cpus = Number(cpusRaw);
  // A CFS quota is at least 1 ms per 100 ms period: 0.01 CPU.
  if (!/^\d*\.?\d+$/.test(cpusRaw) || !(cpus >= 0.01 && cpus <= 1024))
    problems.push(`LOCAL_SANDBOX_CPUS must be a number of CPUs from 0.01 to 1024, decimals allowed (got "${cpusRaw}")`);
  const previewHost = env.LOCAL_SANDBOX_PREVIEW_HOST?.trim() || '127.0.0.1';
  const previewPublic = env.LOCAL_SANDBOX_PREVIEW_PUBLIC?.trim() || 'off';
  if (previewPublic !== 'on' && previewPublic !== 'off')
    problems.push(`LOCAL_SANDBOX_PREVIEW_PUBLIC must be on or off (got "${previewPublic}")`);
  if (isIP(previewHost) === 0 || previewHost === '0.0.0.0' || previewHost === '::') {
    // The address is also the URL's host: a name or a wildcard would give clients a URL that may lead elsewhere.
    problems.push(
      `LOCAL_SANDBOX_PREVIEW_HOST must be one IP address of this host, which preview URLs then name (got ` +
        `"${previewHost}")`,
    );
  } else if (!isLoopbackHost(previewHost) && previewPublic !== 'on') {
    problems.push(
      `LOCAL_SANDBOX_PREVIEW_HOST=${previewHost} would serve sandbox previews to every host that reaches that ` +
        `address, each behind its capability URL (whoever holds a preview URL opens that app): set ` +
        `LOCAL_SANDBOX_PREVIEW_PUBLIC=on to do so on purpose, or keep previews on 127.0.0.1`,
    );
  }

  const previewDomain = env.LOCAL_SANDBOX_PREVIEW_DOMAIN?.trim().toLowerCase() || undefined;
  // A label of it is a sandbox id (`local-` and 16 hex digits: 22 characters, and a dot).
  if (
    previewDomain !== undefined &&
    (!/^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*$/.test(previewDomain) ||
      previewDomain.length > 230 ||
      isIP(previewDomain) !== 0)
  ) {
    problems.push(
      `LOCAL_SANDBOX_PREVIEW_DOMAIN must be a DNS name whose every subdomain resolves to ` +
        `LOCAL_SANDBOX_PREVIEW_HOST, written without "*." or a port, at most 230 characters (e.g. localhost, or ` +
        `previews.example.com with a wildcard record; got "${env.LOCAL_SANDBOX_PREVIEW_DOMAIN}")`,
    );
  }

  const egress = loadEgressConfig(env, problems, auth.oauth === undefined ? {} : { issuer: auth.oauth.issuer });
  if (egress.operator.mode !== 'none' || egress.byPrincipal.size > 0) {
    if (backend === 'local' && network === 'on')
      problems.push(
        "LOCAL_SANDBOX_NETWORK=on gives sandboxes the host's whole network, which MCP_SANDBOX_EGRESS cannot police: " +
          'leave LOCAL_SANDBOX_NETWORK off and set the policy with MCP_SANDBOX_EGRESS',
      );
    if (backend === 'local' && isolation === 'none')
      problems.push(
        'MCP_SANDBOX_EGRESS needs a sandbox network of its own (LOCAL_SANDBOX_ISOLATION=auto or bwrap): without ' +
          "isolation, sandbox code shares the host's network",
      );
  }
  if (backend === 'e2b') {
    // What E2B's egress rules cannot say is refused now, rather than left unenforced.
    const e2b = new Set([
      ...e2bPolicyProblems('MCP_SANDBOX_ALLOW/DENY', egress.operator),
      ...[...egress.byPrincipal.values()].flatMap((policy) => e2bPolicyProblems('MCP_SANDBOX_POLICY_FILE', policy)),
      ...e2bSecretProblems(egress.secrets.map((s) => s.secret)),
    ]);
    problems.push(...e2b);
  }

  const functionTimeoutS =
    env.MCP_FUNCTION_TIMEOUT_S === undefined || env.MCP_FUNCTION_TIMEOUT_S === ''
      ? undefined
      : int('MCP_FUNCTION_TIMEOUT_S', 0, 1, 86_400);
  const defaultToolMax =
    functionTimeoutS === undefined ? 300 : Math.min(300, functionTimeoutS - FUNCTION_TIMEOUT_MARGIN_S);
  const toolTimeoutMaxS = int('MCP_TOOL_TIMEOUT_MAX_S', Math.max(1, defaultToolMax), 1, 86_400);
  if (functionTimeoutS !== undefined && toolTimeoutMaxS + FUNCTION_TIMEOUT_MARGIN_S > functionTimeoutS) {
    problems.push(
      `MCP_TOOL_TIMEOUT_MAX_S (${toolTimeoutMaxS}) must be at least ${FUNCTION_TIMEOUT_MARGIN_S} s below ` +
        `MCP_FUNCTION_TIMEOUT_S (${functionTimeoutS}), so that every call is answered before the platform cuts it; ` +
        `raise the function timeout or lower the tool cap`,
    );
  }

  const secret =
    env.MCP_SESSION_SECRET === undefined || env.MCP_SESSION_SECRET === '' ? undefined : env.MCP_SESSION_SECRET;
  if (secret !== undefined && Buffer.byteLength(secret) < 32) {
    problems.push('MCP_SESSION_SECRET must be at least 32 bytes (e.g. openssl rand -base64 32); it is not shown here');
  }

  const logLevel = env.LOG_LEVEL?.trim() || 'info';
  if (!isLogLevel(logLevel)) problems.push(`LOG_LEVEL must be debug, info, warn or error (got "${logLevel}")`);

  const maxSessions = int('MCP_MAX_SESSIONS', 100, 1, 100_000);
  const oneCredential = auth.mode === 'none' || (auth.oauth === undefined && new Set(auth.tokens).size === 1);
  const defaultShare = oneCredential ? maxSessions : Math.ceil(maxSessions / 4);
  const sessionsPerCredential = int('MCP_MAX_SESSIONS_PER_CREDENTIAL', defaultShare, 1, 100_000);

  // MCP tasks are kept where every instance of the deployment looks: the local root, or E2B_STATE_DIR.
  const taskRoot = backend === 'e2b' ? stateDir : root;
  const config: Config = {
    port,
    host,
    onFc,
    auth,
    sessionIdleTtlS: int('MCP_SESSION_IDLE_TTL_S', 1800, 1, 86_400),
    sessionMaxAgeS: int('MCP_SESSION_MAX_AGE_S', 21_600, 60, 30 * 86_400),
    sandboxFirstLeaseS: int('MCP_SANDBOX_FIRST_LEASE_S', 300, 1, 86_400),
    sessionSecret: secret ?? randomBytes(32).toString('base64url'),
    sessionSecretSource: secret === undefined ? 'generated' : 'configured',
    maxSessions,
    perCredential: {
      sessions: sessionsPerCredential,
      sandboxes: int('MCP_MAX_SANDBOXES_PER_CREDENTIAL', sessionsPerCredential, 1, 100_000),
      calls: int('MCP_MAX_CALLS_PER_CREDENTIAL', 64, 1, 100_000),
      tasks: int('MCP_MAX_TASKS_PER_CREDENTIAL', 16, 1, 10_000),
      initializeBurst: int('MCP_INITIALIZE_BURST', 120, 1, 100_000),
      initializePerMin: int('MCP_INITIALIZE_PER_MIN', 120, 0, 1_000_000),
    },
    allowedOrigins: env.MCP_ALLOWED_ORIGINS === undefined ? undefined : parseList(env.MCP_ALLOWED_ORIGINS),
    allowedHosts:
      env.MCP_ALLOWED_HOSTS === undefined ? undefined : parseList(env.MCP_ALLOWED_HOSTS).map((h) => h.toLowerCase()),
    maxBodyBytes: int('MCP_MAX_BODY_BYTES', DEFAULT_MAX_BODY_BYTES, 1024, 32 * 1024 * 1024),
    maxConnections: int('MCP_MAX_CONNECTIONS', 1024, 1, 1_000_000),
    maxConnectionsPerPeer: int('MCP_MAX_CONNECTIONS_PER_PEER', onFc ? 0 : 128, 0, 1_000_000),
    trustedProxies: parseTrustedProxies(env.MCP_TRUSTED_PROXIES, problems),
    toolTimeoutMaxS,
    functionTimeoutS,
    sandboxBackend: backend === 'e2b' ? 'e2b' : 'local',
    ...(taskRoot !== undefined && { taskRoot }),
    local: {
      root,
      diskBytes: diskMb * 2 ** 20,
      isolation: isolation === 'bwrap' || isolation === 'none' ? isolation : 'auto',
      allowNetwork: network === 'on',
      python: env.LOCAL_SANDBOX_PYTHON?.trim() || 'python3',
      hiddenPaths: [...(env.MCP_AUTH_TOKEN_FILE ? [env.MCP_AUTH_TOKEN_FILE] : []), ...egress.hiddenPaths],
      exposed,
      memoryMb: int('LOCAL_SANDBOX_MEMORY_MB', LOCAL_LIMIT_DEFAULTS.memoryMb, 16, 4_194_304),
      maxProcesses: int('LOCAL_SANDBOX_MAX_PROCESSES', LOCAL_LIMIT_DEFAULTS.maxProcesses, 8, 4_194_304),
      cpus: Number.isFinite(cpus) && cpus >= 0.01 && cpus <= 1024 ? cpus : LOCAL_LIMIT_DEFAULTS.cpus,
      previewHost,
      ...(previewDomain === undefined ? {} : { previewDomain }),
    },
    e2b: {
      apiKey,
      template: env.E2B_TEMPLATE?.trim() || 'code-interpreter-v1',
      domain: env.E2B_DOMAIN?.trim() || undefined,
      apiUrl,
      stateDir,
      maxCreatesPerS: Number.isFinite(maxCreatesPerS) && maxCreatesPerS > 0 ? maxCreatesPerS : 1,
      charts: charts === 'files' ? 'files' : 'inline',
      sleep: sleep === 'files' || sleep === 'off' ? sleep : 'memory',
    },
    sleeping: {
      retentionS: int('MCP_SANDBOX_RETENTION_S', 7 * 86_400, 60, 365 * 86_400),
      maxPerCredential: int('MCP_MAX_SLEEPING_SANDBOXES_PER_CREDENTIAL', 10, 1, 100_000),
      maxDiskMbPerCredential: int('MCP_MAX_SLEEPING_DISK_MB_PER_CREDENTIAL', 10_240, 0, 1_073_741_824),
    },
    egress,
    fileUrls: loadFileUrlConfig(env, problems, int, { onFc, onAlibaba }),
    logLevel: isLogLevel(logLevel) ? logLevel : 'info',
    telemetry: readTelemetrySettings(env, problems),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** MCP_TRUSTED_PROXIES as `address/prefix` ranges (a lone address is its own range); problems go to `problems`. */
function parseTrustedProxies(value: string | undefined, problems: string[]): string[] {
  const ranges: string[] = [];
  for (const item of parseList(value ?? '')) {
    const [address = '', prefix, ...rest] = item.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    const length = prefix === undefined ? bits : /^\d{1,3}$/.test(prefix) ? Number(prefix) : Number.NaN;
    if (family === 0 || address.includes('%') || rest.length > 0 || !(length >= 0 && length <= bits)) {
      problems.push(
        `MCP_TRUSTED_PROXIES must list IP addresses or CIDR ranges (192.0.2.10, 10.0.0.0/8, 2001:db8::/32), ` +
          `comma-separated (got "${item}")`,
      );
      continue;
    }
    ranges.push(`${address.toLowerCase()}/${length}`);
  }
  return ranges;
}

function loadAuth(env: Env, problems: string[]): AuthConfig {
  const fromList = env.MCP_AUTH_TOKENS;
  const file = env.MCP_AUTH_TOKEN_FILE;
  const oauth = loadOAuthConfig(env, problems);
  if (env.MCP_AUTH !== undefined && env.MCP_AUTH !== 'none' && env.MCP_AUTH !== 'bearer') {
    problems.push(`MCP_AUTH must be "bearer" or "none" (got "${env.MCP_AUTH}")`);
  }
  if (env.MCP_AUTH === 'none') {
    if (fromList !== undefined || file !== undefined || oauth !== undefined) {
      problems.push(
        'MCP_AUTH=none conflicts with MCP_AUTH_TOKENS / MCP_AUTH_TOKEN_FILE / MCP_OAUTH_ISSUER: set one or the other',
      );
    }
    return { mode: 'none', tokens: [], source: 'none', oauth: undefined };
  }
  if (fromList === undefined && file === undefined) {
    if (oauth !== undefined) return { mode: 'bearer', tokens: [], source: 'none', oauth };
    if (env.MCP_AUTH === 'bearer')
      problems.push('MCP_AUTH=bearer needs MCP_AUTH_TOKENS, MCP_AUTH_TOKEN_FILE or MCP_OAUTH_ISSUER');
    return { mode: 'none', tokens: [], source: 'none', oauth: undefined };
  }
  const tokens = fromList === undefined ? [] : parseList(fromList);
  if (file !== undefined) {
    try {
      tokens.push(...parseList(readFileSync(file, 'utf8')));
    } catch (err: unknown) {
      const reason = toErrnoCode(err) ?? 'unreadable';
      problems.push(`MCP_AUTH_TOKEN_FILE cannot be read (${reason}): ${file}`);
    }
  }
  for (const token of tokens) {
    if (!/^[\x21-\x7e]+$/.test(token)) {
      problems.push('auth tokens must be visible ASCII without spaces (one token is not; it is not shown here)');
      break;
    }
  }
  const source =
    fromList !== undefined && file !== undefined
      ? 'both'
      : fromList !== undefined
        ? 'MCP_AUTH_TOKENS'
        : 'MCP_AUTH_TOKEN_FILE';
  return { mode: 'bearer', tokens, source, oauth };
}
