/**
 * The E2B SDK with every call traced (telemetry/telemetry.ts `clientCall`): a client span per call to E2B's control
 * plane (create, connect, pause, kill, list, snapshots, network) and to a sandbox's envd (commands, code, files), each
 * attempt of a retried call on its own, with its duration in `sandbox_mcp.e2b.api.duration` by operation and error
 * class. No argument is recorded: not the template, the metadata, a path or code. Used only when telemetry is on.
 */
import type { Telemetry } from '../../telemetry/telemetry';
import { withTracedMethods } from '../../telemetry/traced-methods';
import type { E2BSandboxApi, E2BSdk } from './sdk';

/** The control plane's calls, by operation name. */
const SDK_CALLS: Partial<Record<keyof E2BSdk & string, string>> = {
  create: 'sandbox.create',
  findByMetadata: 'sandbox.list',
  connect: 'sandbox.connect',
  pause: 'sandbox.pause',
  kill: 'sandbox.kill',
  createSnapshot: 'snapshot.create',
  deleteSnapshot: 'snapshot.delete',
  updateNetwork: 'sandbox.update_network',
};

/** A sandbox's calls (envd, the interpreter, and the lease on the control plane), by operation name. */
const SANDBOX_CALLS: Partial<Record<keyof E2BSandboxApi & string, string>> = {
  runCode: 'code.run',
  startCommand: 'command.start',
  readFile: 'files.read',
  writeFile: 'files.write',
  readStream: 'files.read_stream',
  writeStream: 'files.write_stream',
  rename: 'files.rename',
  remove: 'files.remove',
  signedFileUrl: 'files.signed_url',
  listFiles: 'files.list',
  getInfo: 'files.info',
  exists: 'files.exists',
  setTimeout: 'sandbox.set_timeout',
  leaseEnd: 'sandbox.info',
  kill: 'sandbox.kill',
};

export function traceE2BSdk(sdk: E2BSdk, telemetry: Telemetry): E2BSdk {
  const sandboxes = new WeakMap<E2BSandboxApi, E2BSandboxApi>();
  const wrapSandbox = (api: E2BSandboxApi): E2BSandboxApi => {
    let traced = sandboxes.get(api);
    if (traced === undefined) {
      traced = withTracedMethods(api, SANDBOX_CALLS, (operation, _method, _args, run) =>
        telemetry.clientCall('e2b', operation, run),
      );
      sandboxes.set(api, traced);
    }
    return traced;
  };
  // create and connect hand back a sandbox, whose own calls are traced too.
  return withTracedMethods(sdk, SDK_CALLS, (operation, method, _args, run) =>
    telemetry.clientCall('e2b', operation, async () => {
      const result = await run();
      return method === 'create' || method === 'connect' ? wrapSandbox(result as E2BSandboxApi) : result;
    }),
  );
}
