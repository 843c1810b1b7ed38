/**
 * The 2026-07-28 lane on the E2B backend, through the real E2B SDKs against the local E2B service: a model-like
 * loop that carries the handle it reads from each result keeps its Python state and files, as on the local
 * backend (test/e2e/modern-lane.test.ts runs the same loop there).
 */
import { NODES, suiteWire, WIRE_TOKEN } from '../support/e2b-wire';
import { expectedNotes, runModelLoop } from '../support/model-loop';

describe.each(NODES)('on %s', (_name, node) => {
  const suite = suiteWire(node);

  it('keeps Python state and files across the loop, in one E2B sandbox', async () => {
    const outcome = await runModelLoop(suite.wire.server.url, WIRE_TOKEN);
    expect(outcome.handles.size).toBe(1);
    expect(outcome.counter).toBe(String(outcome.increments));
    expect(outcome.notes).toBe(expectedNotes(outcome.appends));
  });
});
