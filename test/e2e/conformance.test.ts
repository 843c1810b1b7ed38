/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, test/conformance/package.json) against
 * the built bundle, auth off. The suite needs Node >= 22, so it runs on the Node 22 binary installed next to it.
 *
 * It is installed apart from the main dependencies (`npm run conformance:install`); without it these tests are
 * reported as skipped, not passed.
 */
import { join } from 'node:path';

import { CONFORMANCE_DIR, conformanceEntry, runConformance as run } from '../support/conformance';
import { startServer, stopAllServers, type StartedServer } from '../support/server';
import { needs } from '../support/needs';

const ENTRY = conformanceEntry('@modelcontextprotocol/conformance');
const EXPECTED_FAILURES = join(CONFORMANCE_DIR, 'expected-failures.yml');

/** The scenarios this server must pass on its own (the rest of the suite needs the suite's fixtures). */
const REQUIRED = ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'];

/** One scenario takes well under a second, the whole active suite about one second; these leave a wide margin. */
const SCENARIO_TIMEOUT_MS = 30_000;
const SUITE_TIMEOUT_MS = 90_000;

const describeIfInstalled = needs('the MCP conformance suite').describe;

/** The suite's run plus its checks that are neither SUCCESS nor INFO. */
async function runConformance(url: string, args: string[], timeoutMs: number) {
  const result = await run(ENTRY, url, args, timeoutMs);
  const badChecks = result.checks
    .filter((check) => check.status !== 'SUCCESS' && check.status !== 'INFO')
    .map((check) => `${check.id} ${check.status} ${check.errorMessage ?? ''}`.trim());
  return { ...result, badChecks };
}

describeIfInstalled('the MCP conformance suite', () => {
  let server: StartedServer;
  beforeAll(async () => {
    server = await startServer({ env: { MCP_AUTH: 'none' } });
  });
  afterAll(stopAllServers);

  it.each(REQUIRED)(
    'passes %s',
    async (scenario) => {
      const run = await runConformance(server.url, ['--scenario', scenario], SCENARIO_TIMEOUT_MS);
      // One object, so that a failure shows the exit, the failed checks and the suite's whole output together.
      expect({
        code: run.code,
        signal: run.signal,
        badChecks: run.badChecks,
        failure: run.output.includes('FAILURE'),
        output: run.output,
      }).toEqual({
        code: 0,
        signal: null,
        badChecks: [],
        failure: false,
        output: expect.stringContaining('0 failed, 0 warnings'),
      });
    },
    SCENARIO_TIMEOUT_MS + 10_000,
  );

  it(
    'fails exactly the scenarios in test/conformance/expected-failures.yml (the rest of the active suite passes)',
    async () => {
      const run = await runConformance(server.url, ['--expected-failures', EXPECTED_FAILURES], SUITE_TIMEOUT_MS);
      expect({ code: run.code, signal: run.signal, output: run.output }).toEqual({
        code: 0,
        signal: null,
        output: expect.stringContaining('Baseline check passed'),
      });
    },
    SUITE_TIMEOUT_MS + 10_000,
  );
});
