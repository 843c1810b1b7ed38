/**
 * An object whose named async methods each run through `wrap` (a span around the call), the rest as they are: the
 * one way the tracing wrappers of the sandbox backends (sandbox/traced-provider.ts, sandbox/e2b/traced-sdk.ts)
 * put their spans around an interface's calls. Pure of OpenTelemetry.
 */

/** Runs one call of a traced method: `run` makes the original call with the caller's arguments. */
export type MethodWrapper<T> = (
  name: string,
  property: keyof T & string,
  args: readonly unknown[],
  run: () => Promise<unknown>,
) => Promise<unknown>;

export function withTracedMethods<T extends object>(
  target: T,
  names: Partial<Record<keyof T & string, string>>,
  wrap: MethodWrapper<T>,
): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value: unknown = Reflect.get(object, property, receiver);
      const name = typeof property === 'string' ? names[property as keyof T & string] : undefined;
      if (name === undefined || typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => Promise<unknown>;
      return (...args: unknown[]) => wrap(name, property as keyof T & string, args, () => method.apply(object, args));
    },
  });
}
