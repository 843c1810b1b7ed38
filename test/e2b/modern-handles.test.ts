/**
 * Both protocol eras on the E2B backend, through the real E2B SDKs against the local E2B service: a model-like
 * loop (on 2026-07-28 carrying the handle it reads from each result; on 2025-11-25 in its session) keeps its
 * Python state and files, as on the local backend (test/e2e/modern-lane.test.ts runs the same loop there).
 */
import { NODES, suiteWire, WIRE_TOKEN, wireDescribe } from '../support/e2b-wire';
import { expectedNotes, runModelLoop } from '../support/model-loop';

wireDescribe.each(NODES)('on %s', (_name, node) => {
  const suite = suiteWire(node);

  it.each([
    ['2026-07-28', 'modern'],
    ['2025-11-25', 'legacy'],
  ] as const)('keeps Python state and files across the loop on %s, in one E2B sandbox', async (version, era) => {
    const outcome = await runModelLoop(suite.wire.server.url, WIRE_TOKEN, era);
    expect(outcome.handles.size).toBe(version === '2026-07-28' ? 1 : 0);
    expect(outcome.counter).toBe(String(outcome.increments));
    expect(outcome.notes).toBe(expectedNotes(outcome.appends));
  });
});
