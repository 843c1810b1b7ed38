/** A sandbox supervisor started straight on the host (no launcher, no isolation), for unit tests of what runs through
 * it. */
import { Supervisor, type SupervisorOptions } from '../../functions/mcp/sandbox/local/supervisor';
import { SUPERVISOR_SOURCE } from '../../functions/mcp/sandbox/local/supervisor-source';

/** The sandbox PATH, where python3 is the system's (not a version manager's shim). */
export const HOST_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export function startHostSupervisor(cwd: string, options: SupervisorOptions = {}): Promise<Supervisor> {
  return Supervisor.start(
    { file: 'python3', args: ['-I', '-S', '-c', SUPERVISOR_SOURCE], env: { PATH: HOST_PATH }, cwd },
    options,
  );
}
