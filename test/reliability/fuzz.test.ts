/**
 * Fuzz, the large run (issue 7): ≥ 2,000 generated hostile or malformed requests against one server; what
 * each answer must be is in test/support/fuzz-suite.ts. The generator is seeded: FUZZ_SEED=<n> (or `random`)
 * replays or varies a run, FUZZ_CASES=<n> sets its size, FUZZ_ONLY=<i,j> sends only those cases, and
 * FUZZ_REPORT=<file> writes every failing case to a file.
 */
import { describeFuzz } from '../support/fuzz-suite';

const DEFAULT_SEED = 20_260_728;
const seed =
  process.env.FUZZ_SEED === 'random'
    ? Math.floor(Math.random() * 2 ** 31)
    : Number(process.env.FUZZ_SEED ?? DEFAULT_SEED);

describeFuzz({
  cases: Number(process.env.FUZZ_CASES ?? 2_400),
  seed,
  only: process.env.FUZZ_ONLY?.split(',').map(Number),
  replay: `FUZZ_SEED=${seed} npm run test:reliability -- test/reliability/fuzz.test.ts`,
  reportFile: process.env.FUZZ_REPORT,
});
