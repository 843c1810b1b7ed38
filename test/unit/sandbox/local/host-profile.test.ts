/** The host profile: what the start-up probes found, frozen, and what refuses sandbox code here. */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { LocalSandboxConfig } from '../../../../functions/mcp/config';
import { SILENT_LOGGER } from '../../../../functions/mcp/log';
import { hostProbeInput, probeHostProfile, probingLimits } from '../../../../functions/mcp/sandbox/local/host-profile';
import { findHostTools } from '../../../../functions/mcp/sandbox/local/host-tools';
import { DEFAULT_PROCESS_LIMITS } from '../../../../functions/mcp/sandbox/local/launch';
import { cgroupParentsOf, removeCgroupsOf } from '../../../support/cgroups';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'host-profile-'));
  chmodSync(root, 0o711);
});
afterEach(async () => {
  // The cgroup probe makes the root's parent groups, where this host lets it.
  await removeCgroupsOf(root);
  expect(cgroupParentsOf(root)).toEqual([]);
  rmSync(root, { recursive: true, force: true });
});

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
const probe = (over: Partial<LocalSandboxConfig>) =>
  probeHostProfile(hostProbeInput(config(over), withoutBwrap, SILENT_LOGGER, DEFAULT_PROCESS_LIMITS));

describe('the host profile', () => {
  it('is frozen, down to what each supervisor is launched with', async () => {
    const profile = await probe({ hiddenPaths: ['/nonexistent-token-file'] });
    expect(Object.isFrozen(profile)).toBe(true);
    expect(Object.isFrozen(profile.launch)).toBe(true);
    expect(Object.isFrozen(profile.launch.hiddenPaths)).toBe(true);
    expect(Object.isFrozen(profile.launch.limits)).toBe(true);
    expect(Object.isFrozen(profile.limits)).toBe(true);
    expect(profile.launch).toMatchObject({ isolation: 'none', python: 'python3', allowNetwork: false });
    expect(profile.refusal).toBeUndefined();
  });

  it('refuses sandbox code without bubblewrap on a server other hosts reach, and says so in its detail', async () => {
    const profile = await probe({ exposed: true });
    expect(profile.refusal).toContain('sandbox code is not run without isolation');
    expect(profile.refusal).toContain('LOCAL_SANDBOX_ISOLATION=none');
    expect(profile.detail).toBe(profile.refusal);
  });

  it(
    'refuses when LOCAL_SANDBOX_ISOLATION=bwrap and bubblewrap does not work, ' + 'keeping the probe’s detail',
    async () => {
      const profile = await probe({ isolation: 'bwrap', exposed: true });
      expect(profile.refusal).toBe(
        'LOCAL_SANDBOX_ISOLATION=bwrap but bubblewrap does not work here (bwrap is not installed).',
      );
      expect(profile.detail).toBe('bwrap is not installed');
    },
  );

  it('runs plain processes when isolation is off on purpose, on a server others reach too', async () => {
    const profile = await probe({ isolation: 'none', exposed: true });
    expect(profile).toMatchObject({ detail: 'isolation off (LOCAL_SANDBOX_ISOLATION=none)', refusal: undefined });
    expect(profile.launch.isolation).toBe('none');
  });

  it('reports every limit as probing before the probes ran', () => {
    const limits = probingLimits(hostProbeInput(config({}), withoutBwrap, SILENT_LOGGER, DEFAULT_PROCESS_LIMITS));
    expect(limits.disk).toEqual({ value: null, enforcedBy: 'none (probing)' });
    expect(limits.cpu).toEqual({ value: null, enforcedBy: 'probing' });
  });
});
