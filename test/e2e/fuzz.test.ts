/**
 * Fuzz, the small fixed run of `npm test`: 400 seeded hostile or malformed requests, every family of the
 * generator among them (what each answer must be is in test/support/fuzz-suite.ts). The large run, with
 * FUZZ_SEED and friends, is test/reliability/fuzz.test.ts.
 */
import { describeFuzz } from '../support/fuzz-suite';

describeFuzz({ cases: 400, seed: 11_2026, replay: 'this file (the seed is fixed)' });
