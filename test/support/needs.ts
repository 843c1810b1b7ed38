/**
 * Tests that need something of the machine (requirements.js): `needs('bubblewrap').describe(…)` is `describe`
 * where the machine has it, and otherwise a `describe.skip` whose name says what is missing, so the run's last
 * line (skip-reporter.js) can count and name it. With CI=true nothing is skipped: test/preflight.js has already
 * failed the run for anything missing.
 */
import { missing, type RequirementName, skipTag } from './requirements';

export interface Needed {
  /** Whether everything needed is here. */
  readonly ok: boolean;
  readonly describe: jest.Describe;
  readonly it: jest.It;
}

/** `describe` and `it` for tests that need all of `names`. */
export function needs(...names: RequirementName[]): Needed {
  const absent = names.filter((name) => missing(name) !== undefined);
  if (absent.length === 0) return { ok: true, describe, it };
  const tag = ` ${skipTag(absent)}`;
  return {
    ok: false,
    describe: tagged(describe.skip, tag) as unknown as jest.Describe,
    it: tagged(it.skip, tag) as unknown as jest.It,
  };
}

type Skipper = typeof describe.skip | typeof it.skip;

/** A skipping `describe`/`it` (with `.each`) whose names end in `tag`. */
function tagged(skip: Skipper, tag: string) {
  const named = (name: string | number | jest.FunctionLike, ...rest: unknown[]) =>
    (skip as (...args: unknown[]) => void)(`${String(name)}${tag}`, ...rest);
  const each =
    (...table: unknown[]) =>
    (name: string, ...rest: unknown[]) =>
      ((skip.each as (...t: unknown[]) => (...args: unknown[]) => void)(...table) as (...args: unknown[]) => void)(
        `${name}${tag}`,
        ...rest,
      );
  return Object.assign(named, {
    each,
    skip,
    only: skip,
    todo: (name: string) => (skip as (n: string) => void)(`${name}${tag}`),
  });
}
