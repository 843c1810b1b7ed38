/**
 * The tool catalog over the E2B SDK stub, in-process, on a fake clock: what unit tests of the tools' results and
 * error rules call, without a lane or a server.
 */
import { SILENT_LOGGER } from '../../functions/mcp/log';
import { createLazySandbox } from '../../functions/mcp/sandbox/lazy-sandbox';
import { createToolCatalog } from '../../functions/mcp/tools/registry';
import type { ToolContext } from '../../functions/mcp/tools/tool';
import { createStubProvider, StubSdk } from './e2b-stub';
import { createFakeClock } from './fake-clock';

/** A fresh catalog with one lazy sandbox; `call` runs a tool in it. */
export function createStubCatalog() {
  const clock = createFakeClock();
  const sdk = new StubSdk(clock);
  const provider = createStubProvider(sdk, clock, 600_000);
  const ctx: ToolContext = {
    sandbox: createLazySandbox(provider, { sessionKey: 's', principal: 'p' }),
    backend: () => provider.status(),
    expiresAt: () => new Date(clock.now() + 600_000),
    signal: new AbortController().signal,
    timeoutMs: (requested) => Math.min(requested ?? 60_000, 300_000),
  };
  const catalog = createToolCatalog(SILENT_LOGGER);
  return { sdk, clock, call: (name: string, args: unknown = {}) => catalog.call(name, args, ctx) };
}
