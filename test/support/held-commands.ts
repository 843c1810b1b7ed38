/**
 * Commands the test holds open in the in-process harness's stub sandboxes, and a bounded wait for what the
 * event loop will bring about: no time passes, the loop only turns.
 */
import type { Harness } from './harness';

export interface HeldCommands {
  /** True once a command naming `name` reached a sandbox. */
  started(name: string): boolean;
  /** Lets the command naming `name` finish (exit 0). */
  release(name: string): void;
}

/**
 * From now on, every command in the harness's new sandboxes that names `hold-<something>` runs until
 * `release('hold-<something>')` (or until killed); others finish at once.
 */
export function holdCommands(h: Harness): HeldCommands {
  const { sdk } = h;
  const gates = new Map<string, { promise: Promise<void>; open: () => void }>();
  const gate = (name: string) => {
    let entry = gates.get(name);
    if (entry === undefined) {
      let open = (): void => undefined;
      const promise = new Promise<void>((resolve) => {
        open = resolve;
      });
      entry = { promise, open };
      gates.set(name, entry);
    }
    return entry;
  };
  const seen = new Set<string>();
  sdk.onSandbox = (sandbox) => {
    sandbox.command = (cmd) => {
      const name = /hold-[\w-]+/.exec(cmd)?.[0];
      if (name === undefined) return { exitCode: 0 };
      seen.add(name);
      return { until: gate(name).promise };
    };
  };
  return {
    started: (name) => seen.has(name),
    release: (name) => gate(name).open(),
  };
}

/** Turns the event loop until `condition` holds; fails after `turns` turns (no wall-clock time involved). */
export async function settle(condition: () => boolean, turns = 10_000): Promise<void> {
  for (let i = 0; i < turns; i += 1) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`the condition did not hold after ${turns} turns of the event loop: ${condition.toString()}`);
}
