import { createHarness } from '../support/harness';

it('smoke', async () => {
  const h = createHarness();
  for (const kind of ['v2', 'v1'] as const) {
    const c = await h.connect({ kind });
    const w = await c.callTool('write_file', { path: 'a.txt', content: 'hi' });
    const r = await c.callTool('read_file', { path: 'a.txt' });
    console.log(kind, JSON.stringify(w.structuredContent), JSON.stringify(r.structuredContent));
    await c.terminate();
  }
  console.log(h.logs().map((l) => `${l.msg} ${l.status ?? ''} ${l.mcp_method ?? ''}`).join('\n'));
  await h.close();
});
