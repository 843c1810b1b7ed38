/**
 * The E2B SDK with every call traced (telemetry/telemetry.ts `clientCall`): a client span per call to E2B's control
 * plane (create, connect, pause, kill, list, snapshots, network) and to a sandbox's envd (commands, code, files), each
 * attempt of a retried call on its own, with its duration in `sandbox_mcp.e2b.api.duration` by operation and error
 * class. No argument is recorded: not the template, the metadata, a path or code. Used only when telemetry is on.
 */
import type { Telemetry } from '../../telemetry/telemetry';
import type { E2BSandboxApi, E2BSdk } from './sdk';

type AsyncMethod = (...args: never[]) => Promise<unknown>;

/** The control plane's calls, by operation name. */
const SDK_CALLS: Partial<Record<keyof E2BSdk, string>> = {
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
const SANDBOX_CALLS: Partial<Record<keyof E2BSandboxApi, string>> = {
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
      traced = traceCalls(api, SANDBOX_CALLS, telemetry, (result) => result);
      sandboxes.set(api, traced);
    }
    return traced;
  };
  // create and connect hand back a sandbox, whose own calls are traced too.
  return traceCalls(sdk, SDK_CALLS, telemetry, (result, name) =>
    name === 'create' || name === 'connect' ? wrapSandbox(result as E2BSandboxApi) : result,
  );
}

function traceCalls<T extends object>(
  target: T,
  calls: Partial<Record<keyof T, string>>,
  telemetry: Telemetry,
  adapt: (result: unknown, name: keyof T) => unknown,
): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value: unknown = Reflect.get(object, property, receiver);
      const operation = typeof property === 'string' ? calls[property as keyof T] : undefined;
      if (operation === undefined || typeof value !== 'function') return value;
      const method = value as AsyncMethod;
      return (...args: never[]) =>
        telemetry.clientCall('e2b', operation, async () =>
          adapt(await method.apply(object, args), property as keyof T),
        );
    },
  });
}
