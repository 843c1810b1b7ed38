/**
 * run_code on the E2B backend, through the built bundle and the real code-interpreter SDK, against the local
 * E2B service's interpreter (a stateful Python per context): state across calls, exceptions, images,
 * interrupts at a timeout and on cancel that keep the state, and a template without an interpreter.
 */
import type { ToolResult } from '../support/clients';
import { failure, inlineImagesIt, NODES, ok, startWire, suiteWire, type Wire, wireDescribe } from '../support/e2b-wire';
import { pollUntil, SETTLE_MS } from '../support/processes';

interface CodeOut {
  stdout: string;
  stderr: string;
  results: Array<{ type: string; text?: string; mime_type?: string }>;
  error: { name: string; value: string; traceback: string } | null;
  timed_out: boolean;
  state_lost: boolean;
}

/** A 1×1 PNG. */
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

wireDescribe.each(NODES)('run_code on E2B, server on %s', (_name, node) => {
  const suite = suiteWire(node);

  const run = async (
    code: string,
    extra: Record<string, unknown> = {},
  ): Promise<{ result: ToolResult; out: CodeOut }> => {
    const result = await suite.client.callTool('run_code', { code, ...extra });
    return { result, out: result.structuredContent as unknown as CodeOut };
  };

  it('keeps variables between calls and returns the last expression and printed output', async () => {
    expect((await run('import math\nside = 7\nprint("set")')).out).toMatchObject({
      stdout: 'set\n',
      results: [],
      error: null,
    });
    const { result, out } = await run('side * side + math.floor(math.pi)');
    expect(result.isError).toBeFalsy();
    expect(out).toMatchObject({
      results: [{ type: 'text', text: '52' }],
      error: null,
      timed_out: false,
      state_lost: false,
    });
  });

  it('streams a long execution through, keeping head and tail of its output, and the state', async () => {
    await run('kept = 7');
    // 40 lines of a million characters: taken as they come, none of it held beyond the output's head and tail.
    const { result, out } = await run("for _ in range(40): print('x' * 999_999)\n'done'");
    expect(result.isError).toBeFalsy();
    expect(out).toMatchObject({ error: null, results: [{ type: 'text', text: 'done' }] });
    expect(out.stdout).toContain(' bytes omitted …]');
    expect((await run('kept * 6')).out.results).toEqual([{ type: 'text', text: '42' }]);
  });

  it('leaves out an answer line too long to hold, counts it, and answers the rest', async () => {
    // A 24 MiB text result is one line of the interpreter's answer, past what the server reads of a line.
    const { result, out } = await run("print('before')\n'y' * (24 << 20)");
    expect(result.isError).toBeFalsy();
    expect(out).toMatchObject({ stdout: 'before\n', error: null, results: [], results_omitted: { count: 1 } });
    expect((out as unknown as { results_omitted: { bytes: number } }).results_omitted.bytes).toBeGreaterThan(24 << 20);
    expect((await run('1 + 1')).out.results).toEqual([{ type: 'text', text: '2' }]);
  });

  // E2B's interpreter strips one pair of quotes from a result's text (its server's Result model): 'a' comes back as a.
  it('passes env to the code', async () => {
    expect(
      (await run('import os\nos.environ.get("WIRE_GREETING")', { env: { WIRE_GREETING: 'hi there' } })).out.results,
    ).toEqual([{ type: 'text', text: 'hi there' }]);
  });

  it('returns an exception with its name, value and traceback', async () => {
    const { result, out } = await run('a = 1\nb = 0\nc = a / b\n');
    expect(result.isError).toBe(true);
    expect(out.error).toMatchObject({ name: 'ZeroDivisionError', value: 'division by zero' });
    expect(out.error?.traceback).toContain('ZeroDivisionError');
  });

  inlineImagesIt('returns an image result as image content', async () => {
    const code =
      `import base64\nclass Chart:\n    def _repr_png_(self):\n        return ` +
      `base64.b64decode("${PNG_B64}")\nChart()`;
    const { result, out } = await run(code);
    expect(out.results).toEqual([{ type: 'image', mime_type: 'image/png' }]);
    expect(result.content).toContainEqual({ type: 'image', data: PNG_B64, mimeType: 'image/png' });
  });

  it('interrupts code at its timeout and keeps the earlier state', async () => {
    await run('kept = 41');
    // A 600 s sleep that comes back timed out was interrupted; the next call is served, not queued behind it.
    const { result, out } = await run('import time; time.sleep(600)', { timeout_ms: 1500 });
    expect(result.isError).toBe(true);
    expect(out.timed_out).toBe(true);
    expect((await run('kept + 1')).out).toMatchObject({ results: [{ type: 'text', text: '42' }], error: null });
  });

  it('interrupts cancelled code, kills what it started, and keeps the state', async () => {
    await run('survivor = "still here"');
    const controller = new AbortController();
    const call = suite.client.callTool(
      'run_code',
      { code: 'import subprocess\nsubprocess.run(["sleep", "1005"])' },
      { signal: controller.signal },
    );
    const outcome = call.then(
      () => 'resolved',
      () => 'rejected',
    );
    const sleeping = async (): Promise<boolean> =>
      ok<{ exit_code: number }>(await suite.client.callTool('run_command', { command: "pgrep -f 'sleep 100[5]'" }))
        .exit_code === 0;
    await pollUntil(sleeping, (yes) => yes, SETTLE_MS, 200);
    controller.abort();
    expect(await outcome).toBe('rejected');
    await pollUntil(sleeping, (yes) => !yes, SETTLE_MS, 200);
    expect((await run('survivor')).out).toMatchObject({ results: [{ type: 'text', text: 'still here' }], error: null });
  });
});

wireDescribe.each(NODES)('run_code on an E2B template without an interpreter, server on %s', (_name, node) => {
  let wire: Wire;
  beforeAll(async () => {
    wire = await startWire(node, { env: { E2B_TEMPLATE: 'base' } });
  });
  afterAll(() => wire?.stop());

  it('says the template has no code interpreter, and run_command still works', async () => {
    const client = await wire.connect();
    expect(failure(await client.callTool('run_code', { code: '1 + 1' }))).toMatch(
      /template "base" has no code interpreter.*use run_command/,
    );
    expect(ok(await client.callTool('run_command', { command: 'echo fine' }))).toMatchObject({ stdout: 'fine\n' });
  });
});
