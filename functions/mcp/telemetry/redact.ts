/** What the telemetry's own problems may say: nothing the settings hold secret. Pure. */
import type { TelemetrySettings } from './settings';

/**
 * Removes from the SDK's own messages what the settings hold secret: header values, and endpoints' paths and queries
 * (Alibaba Cloud's Managed Service for OpenTelemetry puts its token there). An endpoint keeps its origin.
 */
export function redactorOf(settings: TelemetrySettings): (message: string) => string {
  /** [secret, what stands for it] */
  const secrets: Array<[string, string]> = [];
  for (const signal of [settings.traces, settings.metrics]) {
    if (signal === undefined) continue;
    for (const value of Object.values(signal.headers)) secrets.push([value, '<redacted>']);
    try {
      const url = new URL(signal.url);
      secrets.push([`${url.pathname}${url.search}`.replace(/^\/$/, ''), '/<redacted>']);
    } catch {
      secrets.push([signal.url, '<redacted>']);
    }
  }
  // Longest first, so that a secret inside another is not left half shown; very short values would hit everywhere.
  const kept = secrets.filter(([secret]) => secret.length >= 4).sort((a, b) => b[0].length - a[0].length);
  return (message) => kept.reduce((text, [secret, mark]) => text.split(secret).join(mark), message);
}
