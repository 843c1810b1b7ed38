/** The local backend without working bubblewrap: never unisolated by accident on a server other hosts reach. */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { LocalSandboxConfig } from '../../../../functions/mcp/config';
import { SILENT_LOGGER } from '../../../../functions/mcp/log';
import { findHostTools } from '../../../../functions/mcp/sandbox/local/host-tools';
import { createLocalSandboxProvider } from '../../../../functions/mcp/sandbox/local/provider';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'provider-'));
  chmodSync(root, 0o711);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const OWNER = { sessionKey: 'session-key', principal: 'p' };
const withoutBwrap = { ...findHostTools(), bwrap: undefined };
const config = (over: Partial<LocalSandboxConfig>): LocalSandboxConfig => ({
  root,
  isolation: 'auto',
  allowNetwork: false,
  python: 'python3',
  hiddenPaths: [],
  exposed: false,
  ...over,
});

it(
  'refuses to run sandbox code without bubblewrap when other hosts can reach the server, and says how to choose ' +
    'otherwise',
  async () => {
    const provider = createLocalSandboxProvider({
      config: config({ exposed: true }),
      logger: SILENT_LOGGER,
      tools: withoutBwrap,
    });
    await provider.ready();
    expect(provider.status()).toMatchObject({
      backend: 'local',
      ready: false,
      detail: expect.stringContaining('LOCAL_SANDBOX_ISOLATION=none'),
    });
    await expect(provider.create(OWNER)).rejects.toMatchObject({
      code: 'sandbox_error',
      message: expect.stringContaining('sandbox code is not run without isolation'),
    });
  },
);

it('runs unisolated when chosen on purpose, or on a loopback-only server (with a warning)', async () => {
  for (const over of [{ exposed: true, isolation: 'none' as const }, { exposed: false }]) {
    const provider = createLocalSandboxProvider({ config: config(over), logger: SILENT_LOGGER, tools: withoutBwrap });
    const sandbox = await provider.create(OWNER);
    expect(sandbox.info()).toMatchObject({ isolation: 'none' });
    expect(provider.status()).toMatchObject({ ready: true });
    await sandbox.kill();
  }
});
