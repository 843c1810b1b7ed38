/** The `/health` body: status, version, protocol versions, backend readiness, counts. No secrets. */
import type { AuthMode } from '../config';
import type { BackendStatus } from '../sandbox/types';
import { SERVER_INFO } from '../version';
import type { HealthReport } from './app';

export interface HealthSources {
  backend: () => BackendStatus;
  counts: () => { sessions: number; sandboxes: number };
  authMode: AuthMode;
  /** Protocol versions `initialize` negotiates over HTTP, preferred first. */
  versions: readonly string[];
  /** Every revision served, by transport, newest first (protocol/versions.ts). */
  byTransport: Readonly<Record<string, readonly string[]>>;
  startedAtMs: number;
  /** @default Date.now */
  now?: () => number;
}

/** Creates the `/health` report builder. */
export function createHealthReport({
  backend,
  counts,
  authMode,
  versions,
  byTransport,
  startedAtMs,
  now = Date.now,
}: HealthSources): () => HealthReport {
  // `supported`: every revision some transport serves; `transports`: which serves which; `preferred`: what
  // `initialize` answers a version it does not serve with.
  const transports = Object.fromEntries(Object.entries(byTransport).map(([name, list]) => [name, [...list]]));
  const supported = [...new Set(Object.values(transports).flat())].sort().reverse();
  return () => {
    const status = backend();
    const { sessions, sandboxes } = counts();
    return {
      status: status.ready ? 'ok' : 'degraded',
      name: SERVER_INFO.name,
      version: SERVER_INFO.version,
      protocol: { supported, preferred: versions[0], transports },
      // `detail`: what isolates sandboxes here (the local backend's hardening), or why none are run.
      backend: {
        name: status.backend,
        ready: status.ready,
        isolation: status.isolation,
        detail: status.detail,
        ...(status.limits === undefined ? {} : { limits: status.limits }),
      },
      auth: authMode,
      sessions,
      sandboxes,
      uptime_s: Math.round((now() - startedAtMs) / 1000),
    };
  };
}
