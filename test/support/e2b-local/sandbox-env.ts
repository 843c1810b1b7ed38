/**
 * The environment of a sandbox process, in the order envd builds it: PATH, HOME, USER and LOGNAME of the
 * user, the sandbox's envVars (from create), then the request's own envs; later entries win. LANG=C.UTF-8
 * stands for what E2B's templates set in their image; the proxy and trust variables (sandbox-network.ts
 * `egressEnvironment`) for E2B's transparent egress and the CA in its templates.
 */
import { dirname } from 'node:path';

import type { SandboxUser } from './envd-users';
import { egressEnvironment } from './sandbox-network';

const EGRESS_ENV = egressEnvironment();

const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The PATH of sandbox processes: the usual one, plus where this Node lives (the templates ship Node). */
export const SANDBOX_PATH = SYSTEM_PATH.split(':').includes(dirname(process.execPath))
  ? SYSTEM_PATH
  : `${SYSTEM_PATH}:${dirname(process.execPath)}`;

export function processEnvironment(
  user: SandboxUser,
  sandboxEnvVars: Readonly<Record<string, string>>,
  requestEnvs: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return {
    PATH: SANDBOX_PATH,
    HOME: user.home,
    USER: user.name,
    LOGNAME: user.name,
    LANG: 'C.UTF-8',
    ...EGRESS_ENV,
    ...sandboxEnvVars,
    ...requestEnvs,
  };
}
