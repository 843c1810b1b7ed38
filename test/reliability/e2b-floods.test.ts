/**
 * Floods from inside an E2B sandbox through its code interpreter's answer, through the built bundle and the
 * real SDKs against the local E2B service: an answer line far longer than any result this server keeps must
 * leave the server's peak RSS (VmHWM, reset before the attack) under a bound while another credential's calls
 * are served meanwhile (functions/mcp/sandbox/e2b/execute.ts). Slow by nature (hundreds of MiB go through).
 */
import { connectClient, type TestClient } from '../support/clients';
import { WIRE_TOKEN, startWire, type Wire } from '../support/e2b-wire';
import { peakRssMiB, resetPeakRss, victimCallsWhile } from '../support/peak-rss';

const VICTIM = 'e2b-flood-victim-token-0123456789abcdef';
/** The server's own ~70 MiB, one line at the reader's limit (8.25 MiB) and its copies, with room to spare. */
const PEAK_RSS_BOUND_MIB = 256;

let wire: Wire;
let attacker: TestClient;
let victim: TestClient;

beforeAll(async () => {
  wire = await startWire(process.execPath, { env: { MCP_AUTH_TOKENS: `${WIRE_TOKEN},${VICTIM}` } });
  attacker = await wire.connect();
  victim = await connectClient('v2', wire.server.url, { token: VICTIM });
  // Both sandboxes and the attacker's interpreter exist before the attack: what follows is the attack's cost.
  expect((await attacker.callTool('run_code', { code: '1' })).isError).toBeFalsy();
  expect((await victim.callTool('run_command', { command: 'true' })).isError).toBeFalsy();
});
afterAll(async () => {
  await victim?.close().catch(() => undefined);
  await wire?.stop();
});

it('a run_code result of 300 MiB is left out, counted, and costs the server no more than its bound', async () => {
  const pid = wire.server.child.pid ?? 0;
  resetPeakRss(pid);
  const attack = attacker.callTool(
    'run_code',
    { code: "'y' * (300 << 20)", timeout_ms: 240_000 },
    { timeoutMs: 280_000 },
  );
  expect(await victimCallsWhile(victim, attack)).toBeGreaterThan(0);
  const result = await attack;
  expect(result.structuredContent).toMatchObject({ error: null, results: [], results_omitted: { count: 1 } });
  expect(peakRssMiB(pid)).toBeLessThan(PEAK_RSS_BOUND_MIB);
  // The interpreter serves the next call.
  expect((await attacker.callTool('run_code', { code: '6 * 7' })).structuredContent).toMatchObject({
    results: [{ type: 'text', text: '42' }],
  });
});
