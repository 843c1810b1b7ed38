/** The `/health` body: status, version, protocol versions, backend readiness, counts. No secrets. */
import type { AuthMode } from '../config';
import type { BackendStatus } from '../sandbox/types';
import { SERVER_INFO } from '../version';
import type { HealthReport } from './app';

export interface HealthSources {
  backend: () => BackendStatus;
  counts: () => { sessions: number; sandboxes: number };
  authMode: AuthMode;
  /** Protocol versions served, preferred first. */
  versions: readonly string[];
  startedAtMs: number;
  /** @default Date.now */
  now?: () => number;
}

/** Creates the `/health` report builder. */
export function createHealthReport({ backend, counts, authMode, versions, startedAtMs, now = Date.now }: HealthSources): () => HealthReport {
  return () => {
    const status = backend();
    const { sessions, sandboxes } = counts();
    return {
      status: status.ready ? 'ok' : 'degraded',
      name: SERVER_INFO.name,
      version: SERVER_INFO.version,
      protocol: { supported: [...versions], preferred: versions[0] },
      // `detail`: what isolates sandboxes here (the local backend's hardening), or why none are run.
      backend: { name: status.backend, ready: status.ready, isolation: status.isolation, detail: status.detail, ...(status.limits === undefined ? {} : { limits: status.limits }) },
      auth: authMode,
      sessions,
      sandboxes,
      uptime_s: Math.round((now() - startedAtMs) / 1000),
    };
  };
}
