/**
 * The E2B backend's egress settings (egress/e2b-network.ts) on the SDK's calls: a sandbox is created with its
 * owner's, and one found again is updated to those in force now; a service without the update keeps the old
 * ones, which is logged, and the sandbox is still attached.
 */
import type { E2BEgressOptions } from '../../../../functions/mcp/egress/e2b-network';
import type { Logger } from '../../../../functions/mcp/log';
import { createE2BSandboxProvider } from '../../../../functions/mcp/sandbox/e2b/provider';
import { StubSdk } from '../../../support/e2b-stub';
import { createFakeClock } from '../../../support/fake-clock';

const CONFIG = {
  apiKey: 'e2b_0123456789abcdef0123456789abcdef',
  template: 'code-interpreter-v1',
  domain: 'e2b.app',
  apiUrl: 'https://api.e2b.app',
  maxCreatesPerS: 1,
  charts: 'files' as const,
  sleep: 'memory' as const,
};
const OWNER = { sessionKey: 'session-id-abc', principal: 'principal-123' };
const NARROW: E2BEgressOptions = {
  allowInternetAccess: true,
  network: {
    allowOut: ['pypi.org'],
    denyOut: ['0.0.0.0/0'],
    rules: { 'api.example.com': [{ transform: { headers: { Authorization: 'Bearer value' } } }] },
  },
};

function setup(egressOf: (principal: string) => E2BEgressOptions) {
  const clock = createFakeClock(1_000_000);
  const sdk = new StubSdk(clock);
  const warnings: Array<[string, Record<string, unknown> | undefined]> = [];
  const logger: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (msg, fields) => warnings.push([msg, fields]),
    error: () => undefined,
    flush: async () => undefined,
  };
  const provider = createE2BSandboxProvider({
    config: CONFIG,
    idleTtlMs: 1_800_000,
    logger,
    loadSdk: async () => sdk,
    clock,
    egressOf,
  });
  return { sdk, provider, warnings };
}

describe("the E2B backend's egress settings", () => {
  it("creates a sandbox with its owner's settings", async () => {
    const asked: string[] = [];
    const { sdk, provider } = setup((principal) => {
      asked.push(principal);
      return NARROW;
    });
    await provider.create(OWNER);
    expect(asked).toEqual(['principal-123']);
    expect(sdk.created[0]?.opts).toMatchObject(NARROW);
  });

  it('creates with no internet access when nothing is configured', async () => {
    const clock = createFakeClock(1_000_000);
    const sdk = new StubSdk(clock);
    const provider = createE2BSandboxProvider({
      config: CONFIG,
      idleTtlMs: 1_800_000,
      logger: { debug() {}, info() {}, warn() {}, error() {}, flush: async () => undefined },
      loadSdk: async () => sdk,
      clock,
    });
    await provider.create(OWNER);
    expect(sdk.created[0]?.opts).toMatchObject({ allowInternetAccess: false });
    expect(sdk.created[0]?.opts.network).toBeUndefined();
  });

  it('updates a sandbox found again to the settings in force now', async () => {
    let current: E2BEgressOptions = { allowInternetAccess: false };
    const { sdk, provider } = setup(() => current);
    const made = await provider.create(OWNER);
    current = NARROW;
    const found = await provider.attach?.(OWNER);
    expect(found?.info().id).toBe(made.info().id);
    expect(sdk.networkUpdates).toEqual([{ sandboxId: made.info().id, egress: NARROW }]);
  });

  it('attaches a sandbox whose service refuses the update, and says it keeps its settings', async () => {
    const { sdk, provider, warnings } = setup(() => NARROW);
    const made = await provider.create(OWNER);
    sdk.updateNetwork = async () => {
      throw Object.assign(new Error('404: Not Found'), { statusCode: 404 });
    };
    const found = await provider.attach?.(OWNER);
    expect(found?.info().id).toBe(made.info().id);
    expect(warnings).toEqual([
      [
        'sandbox egress settings not updated: it keeps those it was created with',
        expect.objectContaining({ sandbox: made.info().id, status: 404 }),
      ],
    ]);
    expect(JSON.stringify(warnings)).not.toContain('Bearer value');
  });
});
