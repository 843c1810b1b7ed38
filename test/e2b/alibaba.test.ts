/**
 * The E2B backend against the local service switched to Alibaba Cloud's known differences: its interpreter
 * returns charts only as files (so the backend saves open matplotlib figures and reports their paths), and it
 * does not serve `GET /v2/sandboxes` (so a sandbox cannot be found by its tags after a restart).
 */
import { alibabaDescribe, NODES, ok, suiteWire } from '../support/e2b-wire';

/** A 1×1 PNG. */
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/** A stand-in for matplotlib.pyplot (the local service's Python has no matplotlib): figures that save a PNG. */
const FAKE_PYPLOT = `import base64, sys, types
plt = types.ModuleType("matplotlib.pyplot")
plt._open = {}
class _Figure:
    def savefig(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode("${PNG_B64}"))
def _figure(number=None):
    number = number or (max(plt._open) + 1 if plt._open else 1)
    return plt._open.setdefault(number, _Figure())
plt.figure = _figure
plt.get_fignums = lambda: sorted(plt._open)
plt.close = lambda which=None: plt._open.clear()
matplotlib = types.ModuleType("matplotlib")
matplotlib.pyplot = plt
sys.modules["matplotlib"] = matplotlib
sys.modules["matplotlib.pyplot"] = plt`;

alibabaDescribe.each(NODES)('the E2B backend on Alibaba Cloud’s service, server on %s', (_name, node) => {
  const suite = suiteWire(node, { flavor: 'alibaba', env: { E2B_CHARTS: 'files', LOG_LEVEL: 'debug' } });

  it('reports a chart as a file the agent can read, and as an image', async () => {
    ok(await suite.client.callTool('run_code', { code: FAKE_PYPLOT }));
    const result = await suite.client.callTool('run_code', {
      code: 'import matplotlib.pyplot as p\np.figure()\nprint("plotted")',
    });
    const out = ok<{ stdout: string; results: Array<{ type: string; text?: string }> }>(result);
    expect(out.stdout).toBe('plotted\n');
    const saved = out.results.find((r) => r.type === 'text')?.text ?? '';
    const path = /Chart saved as (\/home\/user\/charts\/chart-[\w-]+\.png)/.exec(saved)?.[1];
    expect(path).toBeDefined();
    expect(result.content).toContainEqual({ type: 'image', data: PNG_B64, mimeType: 'image/png' });
    const read = await suite.client.callTool('read_file', { path: path as string });
    expect(read.content).toContainEqual({ type: 'image', data: PNG_B64, mimeType: 'image/png' });
    // Saved once: the figure was closed.
    const again = ok<{ results: unknown[] }>(await suite.client.callTool('run_code', { code: '1 + 1' }));
    expect(again.results).toEqual([{ type: 'text', text: '2' }]);
  });

  it('gets no image from the interpreter itself (the service returns none)', async () => {
    const code =
      `import base64\nclass Chart:\n    def _repr_png_(self):\n        return ` +
      `base64.b64decode("${PNG_B64}")\nChart()`;
    const out = ok<{ results: Array<{ type: string }> }>(await suite.client.callTool('run_code', { code }));
    expect(out.results.some((r) => r.type === 'image')).toBe(false);
  });

  it('cannot find the session’s sandbox by its tags after a restart: the session goes on in a fresh one', async () => {
    ok(await suite.client.callTool('write_file', { path: 'mark.txt', content: 'here' }));
    const before = ok<{ sandbox_id: string }>(await suite.client.callTool('sandbox_status')).sandbox_id;
    await suite.wire.restartServer();
    const after = await suite.client.callTool('read_file', { path: 'mark.txt' });
    expect(after.isError).toBe(true);
    expect(ok<{ sandbox_id: string }>(await suite.client.callTool('sandbox_status')).sandbox_id).not.toBe(before);
    expect(suite.wire.server.logs().filter((l) => l.msg === 'sandbox listing not served')).toHaveLength(1);
  });
});
