import * as e2b from 'e2b';

import { SILENT_LOGGER } from '../../../../functions/mcp/log';
import { createE2BSandboxProvider } from '../../../../functions/mcp/sandbox/e2b/provider';
import { createLazySandbox } from '../../../../functions/mcp/sandbox/lazy-sandbox';
import { SERVER_INFO } from '../../../../functions/mcp/version';
import { createFakeClock } from '../../../support/fake-clock';
import { StubSdk } from '../../../support/e2b-stub';

const CONFIG = {
  apiKey: 'e2b_0123456789abcdef0123456789abcdef',
  template: 'code-interpreter-v1',
  domain: 'cn-hangzhou.e2b.fc.aliyuncs.com',
  apiUrl: 'https://api.cn-hangzhou.e2b.fc.aliyuncs.com',
  maxCreatesPerS: 1,
  charts: 'files' as const,
  sleep: 'memory' as 'memory' | 'files' | 'off',
};
const OWNER = { sessionKey: 'session-id-abc', principal: 'principal-123' };

function setup(overrides: Partial<typeof CONFIG> = {}, frozen = false) {
  const clock = createFakeClock(1_000_000, { frozen });
  const sdk = new StubSdk(clock);
  let loads = 0;
  const provider = createE2BSandboxProvider({
    config: { ...CONFIG, ...overrides },
    idleTtlMs: 1_800_000,
    logger: SILENT_LOGGER,
    loadSdk: async () => {
      loads += 1;
      return sdk;
    },
    clock,
  });
  return { clock, sdk, provider, loads: () => loads };
}

describe('the E2B provider', () => {
  it('reports the backend and whether it is configured without loading the SDK or calling E2B', () => {
    const { provider, loads, sdk } = setup();
    expect(provider.status()).toMatchObject({ backend: 'e2b', ready: true });
    expect(setup({ apiKey: undefined as unknown as string }).provider.status()).toMatchObject({
      ready: false,
      detail: 'E2B_API_KEY is not set',
    });
    expect(loads()).toBe(0);
    expect(sdk.created).toHaveLength(0);
  });

  it(
    'creates with the template, the lease, the endpoints, no SDK ' +
      'retries, the sleep lifecycle and hashed owner tags',
    async () => {
      const { provider, sdk, loads } = setup();
      const sandbox = await provider.create(OWNER);
      expect(loads()).toBe(1);
      expect(sandbox.info()).toMatchObject({ backend: 'e2b', workdir: '/home/user', id: 'sbx-1' });
      const [call] = sdk.created;
      expect(call?.template).toBe('code-interpreter-v1');
      expect(call?.opts).toMatchObject({
        apiKey: CONFIG.apiKey,
        domain: CONFIG.domain,
        apiUrl: CONFIG.apiUrl,
        timeoutMs: 1_830_000,
        retries: 0,
        // E2B pauses it itself, with its memory, when its lease runs out with no instance left to do it.
        lifecycle: { onTimeout: { action: 'pause', keepMemory: true }, autoResume: false },
      });
      const metadata = call?.opts.metadata ?? {};
      expect(metadata).toEqual({
        mcp_session: expect.stringMatching(/^[0-9a-f]{24}$/),
        mcp_owner: expect.stringMatching(/^[0-9a-f]{24}$/),
        mcp_server: SERVER_INFO.name,
        mcp_version: SERVER_INFO.version,
        mcp_created: '1000000',
        mcp_template: 'code-interpreter-v1',
        mcp_sleep: 'memory',
      });
      expect(JSON.stringify(metadata)).not.toContain(OWNER.sessionKey);
      expect(JSON.stringify(metadata)).not.toContain(OWNER.principal);
      expect(JSON.stringify(call?.opts.envs ?? {})).not.toContain(CONFIG.apiKey);
    },
  );

  it('retries a 429 with growing, jittered backoff and then succeeds', async () => {
    const { provider, sdk, clock } = setup();
    sdk.createFailures = [new e2b.RateLimitError('429'), new e2b.RateLimitError('429')];
    await expect(provider.create(OWNER)).resolves.toBeDefined();
    expect(sdk.created).toHaveLength(3);
    // Backoffs: 500 ms then 1000 ms ceilings, jittered to 75 % with the clock's random 0.5; plus the creation gate.
    expect(clock.sleeps.filter((ms) => ms === 375 || ms === 750)).toEqual([375, 750]);
  });

  it('gives up on 429 within the time budget with a "retry later" error', async () => {
    const { provider, sdk, clock } = setup();
    sdk.createFailures = Array.from({ length: 50 }, () => new e2b.RateLimitError('Rate limit exceeded'));
    const started = clock.now();
    await expect(provider.create(OWNER)).rejects.toMatchObject({
      code: 'rate_limited',
      message: expect.stringContaining('retry in a minute'),
    });
    expect(clock.now() - started).toBeLessThanOrEqual(10_000 + 1000);
    expect(sdk.created.length).toBeGreaterThan(2);
    expect(sdk.created.length).toBeLessThan(50);
  });

  it('maps an authentication failure to a message naming E2B_API_KEY, without the key', async () => {
    const { provider, sdk } = setup();
    sdk.createFailures = [new e2b.AuthenticationError(`Unauthorized - invalid key ${CONFIG.apiKey}`)];
    const err = await provider.create(OWNER).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'backend_auth', message: expect.stringContaining('E2B_API_KEY') });
    expect(String((err as Error).message)).not.toContain(CONFIG.apiKey);
    expect(sdk.created).toHaveLength(1);
  });

  it('names E2B_TEMPLATE when E2B has no such template', async () => {
    const { provider, sdk } = setup({ template: 'no-such-template' });
    sdk.createFailures = [Object.assign(new e2b.SandboxError('404: template not found'), { statusCode: 404 })];
    await expect(provider.create(OWNER)).rejects.toMatchObject({
      code: 'sandbox_error',
      message: expect.stringContaining('no template "no-such-template"'),
    });
  });

  it('spaces creations to E2B_MAX_CREATES_PER_S across sessions', async () => {
    // Time stands still, so each concurrent creation shows the wait the gate gave it.
    const { provider, sdk, clock } = setup({ maxCreatesPerS: 2 }, true);
    await Promise.all([1, 2, 3, 4].map((n) => provider.create({ sessionKey: `s${n}`, principal: 'p' })));
    expect(sdk.created).toHaveLength(4);
    expect(clock.sleeps).toEqual([500, 1000, 1500]);
  });

  it('coalesces concurrent first uses of one session into one creation', async () => {
    const { provider, sdk } = setup();
    const lazy = createLazySandbox(provider, OWNER);
    const [a, b, c] = await Promise.all([lazy.get(), lazy.get(), lazy.get()]);
    expect(sdk.created).toHaveLength(1);
    expect(a).toBe(b);
    expect(b).toBe(c);
  });

  it(
    'on idle expiry pauses the sandbox with its memory, unless its ' +
      'lease shows that another instance used it lately',
    async () => {
      const { provider, sdk, clock } = setup();
      const lazy = createLazySandbox(provider, OWNER);
      await lazy.get();
      const stub = sdk.sandboxes[0];
      if (stub === undefined) throw new Error('no sandbox');
      clock.advance(1_800_001);
      // Someone else renewed the lease a minute ago: only let go here.
      stub.endAtMs = clock.now() - 60_000 + 1_800_000;
      await expect(lazy.expire(1_800_000, clock.now())).resolves.toBe('released');
      expect({ killed: stub.killed, state: stub.state }).toEqual({ killed: false, state: 'running' });
      // Nobody renewed it: it sleeps, paused with its memory.
      const again = createLazySandbox(provider, { sessionKey: 'other', principal: 'p' });
      await again.get();
      const idle = sdk.sandboxes[1];
      clock.advance(1_800_001);
      await expect(again.expire(1_800_000, clock.now())).resolves.toBe('slept');
      expect({ killed: idle?.killed, state: idle?.state }).toEqual({ killed: false, state: 'paused' });
      expect(sdk.pauses).toEqual([{ sandboxId: idle?.sandboxId, keepMemory: true }]);
      // With E2B_SLEEP=off it is destroyed, as before sandboxes slept.
      const off = setup({ sleep: 'off' });
      const lazyOff = createLazySandbox(off.provider, OWNER);
      await lazyOff.get();
      off.clock.advance(1_800_001);
      await expect(lazyOff.expire(1_800_000, off.clock.now())).resolves.toBe('destroyed');
      expect(off.sdk.sandboxes[0]?.killed).toBe(true);
      expect(off.sdk.created[0]?.opts.lifecycle).toBeUndefined();
    },
  );

  it('replaces a sandbox found gone with a fresh one on the next use', async () => {
    const { provider, sdk } = setup();
    const lazy = createLazySandbox(provider, OWNER);
    const first = await lazy.get();
    const stub = sdk.sandboxes[0];
    if (stub === undefined) throw new Error('no sandbox');
    stub.failNext = new e2b.SandboxNotFoundError('sandbox sbx-1 not found');
    await expect(first.runCommand({ command: 'ls', timeoutMs: 1000 })).rejects.toMatchObject({
      code: 'sandbox_gone',
      message: expect.stringContaining('files and state from it are gone'),
    });
    expect(lazy.current()).toBeUndefined();
    const second = await lazy.get();
    expect(second).not.toBe(first);
    expect(sdk.created).toHaveLength(2);
    // Only the path to it may have failed: the old microVM is killed rather than left to run out its lease.
    expect(stub.killed).toBe(true);
  });
});
