/**
 * The MCP conformance suite's 2026-07-28 ("modern") scenarios against the built bundle, auth off, run by the
 * suite's 0.2.0-alpha.12 (installed as `conformance-modern` next to 0.1.16, test/conformance/package.json) on the
 * Node 22 binary installed with it.
 *
 * Checks are judged one by one from the results the suite saves (`-o`): every check must be SUCCESS, INFO or
 * SKIPPED except those listed in test/conformance/expected-modern-check-failures.yml, and each listed check must
 * really fail. The same alpha also runs the five 2025-era scenarios that conformance.test.ts requires of 0.1.16.
 *
 * It is installed apart from the main dependencies (`npm run conformance:install`); without it these tests are
 * reported as skipped, not passed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import {
  CONFORMANCE_DIR,
  type ConformanceCheck,
  conformanceEntry,
  runConformance as run,
} from '../support/conformance';
import { startServer, stopAllServers, type StartedServer } from '../support/server';
import { needs } from '../support/needs';

const ENTRY = conformanceEntry('conformance-modern');
const EXPECTED_FAILURES = join(CONFORMANCE_DIR, 'expected-modern-check-failures.yml');

const MODERN_VERSION = '2026-07-28';

/**
 * The 2026-07-28 scenarios that apply to a server with only its own tools (the rest call the suite's fixture
 * tools, prompts or resources, and test nothing else). `http-custom-header-server-validation` runs on the `sandbox`
 * argument, the one annotated `x-mcp-header`.
 */
const MODERN = [
  'server-stateless',
  'http-header-validation',
  'http-custom-header-server-validation',
  'tools-list',
  'dns-rebinding-protection',
  'server-sse-multiple-streams',
  'caching',
  'input-required-result-unsupported-methods',
];

/**
 * The tasks extension's scenarios (io.modelcontextprotocol/tasks). They are extension scenarios, not on the
 * revision's timeline: run without `--spec-version` (the suite then speaks its draft, 2026-07-28), since with it the
 * suite skips them. Most of their checks call the suite's fixture tools (listed as expected failures). Not run:
 * `tasks-status-notifications`, whose one check this alpha skips without a request ("pending subscriptions/listen
 * rewrite").
 */
const TASKS = [
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-wire-fields',
  'tasks-request-state-removal',
  'tasks-mrtr-input',
  'tasks-request-headers',
  'tasks-dispatch-and-envelope',
  'tasks-required-task-error',
  'tasks-mrtr-composition',
];

/** What each modern scenario is run with. */
const MODERN_RUNS: Array<[string, string[]]> = [
  ...MODERN.map((scenario): [string, string[]] => [
    scenario,
    ['--scenario', scenario, '--spec-version', MODERN_VERSION],
  ]),
  ...TASKS.map((scenario): [string, string[]] => [scenario, ['--scenario', scenario]]),
];

/** The 2025-era scenarios conformance.test.ts requires, run here by the alpha at 2025-11-25. */
const LEGACY = ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'];
const LEGACY_VERSION = '2025-11-25';

/** One scenario takes well under a second; this leaves a wide margin. */
const SCENARIO_TIMEOUT_MS = 30_000;

const PASSING = new Set(['SUCCESS', 'INFO', 'SKIPPED']);

const suite = needs('the MCP conformance suite');
const installed = suite.ok;
const describeIfInstalled = suite.describe;

/** Runs the alpha against `url`. */
const runConformance = (url: string, args: string[], timeoutMs: number) => run(ENTRY, url, args, timeoutMs);

/** Reads the `scenario:` / `  - check-id` list (comments after `#`); anything else is an error. */
function readExpectedFailures(file: string): Map<string, string[]> {
  const expected = new Map<string, string[]>();
  let current: string[] | undefined;
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((raw, index) => {
      const line = raw.replace(/#.*$/, '').trimEnd();
      if (line.trim() === '') return;
      const scenario = /^([a-z0-9-]+):$/.exec(line);
      const item = /^\s+- ([a-z0-9-]+(?:\/[A-Za-z0-9_]+)?)$/.exec(line);
      if (scenario?.[1] !== undefined) {
        if (expected.has(scenario[1])) throw new Error(`${file}:${index + 1}: scenario ${scenario[1]} listed twice`);
        current = [];
        expected.set(scenario[1], current);
      } else if (item?.[1] !== undefined && current !== undefined) {
        current.push(item[1]);
      } else {
        throw new Error(`${file}:${index + 1}: expected "scenario:" or "  - check-id", got ${JSON.stringify(raw)}`);
      }
    });
  return expected;
}

const describeCheck = (c: ConformanceCheck): string =>
  `${c.id}/${c.name ?? ''} ${c.status}${c.errorMessage ? ` ${c.errorMessage}` : ''}`;

/** Whether a list entry (`check-id`, or `check-id/CheckName` for one of an id's checks) names `c`. */
const names = (entry: string, c: ConformanceCheck): boolean => entry === c.id || entry === `${c.id}/${c.name}`;

/**
 * Waits until the server has written nothing for 200 ms (at most 20 s), so that its log has every request of
 * the last run (the suite's process has exited by then; a busy machine may still be writing the last lines).
 */
async function settle(server: StartedServer): Promise<void> {
  for (let i = 0, last = -1; i < 100; i++) {
    const length = server.stdout().length;
    if (length === last) return;
    last = length;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The protocol era (lane) of each request logged since `offset` that reached a lane, counted. */
function erasSince(server: StartedServer, offset: number): Record<string, number> {
  const eras: Record<string, number> = {};
  for (const line of server.stdout().slice(offset).split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { msg?: string; era?: string };
    if (entry.msg === 'request' && entry.era !== undefined) eras[entry.era] = (eras[entry.era] ?? 0) + 1;
  }
  return eras;
}

describeIfInstalled('the MCP conformance suite, 2026-07-28 (0.2.0-alpha.12)', () => {
  const expectedFailures = installed ? readExpectedFailures(EXPECTED_FAILURES) : new Map<string, string[]>();
  let server: StartedServer;
  beforeAll(async () => {
    server = await startServer({ env: { MCP_AUTH: 'none' } });
  });
  afterAll(stopAllServers);

  it('lists expected failures only for scenarios this file runs', () => {
    const runs = MODERN_RUNS.map(([scenario]) => scenario);
    expect([...expectedFailures.keys()].filter((scenario) => !runs.includes(scenario))).toEqual([]);
  });

  it.each(MODERN_RUNS)(
    '%s: every check passes except the listed ones, which fail',
    async (scenario, args) => {
      const offset = server.stdout().length;
      const run = await runConformance(server.url, args, SCENARIO_TIMEOUT_MS);
      await settle(server);
      const listed = expectedFailures.get(scenario) ?? [];
      const unexpected = run.checks
        .filter((c) => !PASSING.has(c.status) && !listed.some((entry) => names(entry, c)))
        .map(describeCheck);
      // A listed check that no longer fails every time (or is gone) makes the list stale.
      const stale = listed.filter((entry) => {
        const results = run.checks.filter((c) => names(entry, c));
        return results.length === 0 || results.some((c) => c.status !== 'FAILURE');
      });
      const eras = erasSince(server, offset);
      // One object, so that a failure shows the exit, the offending checks and the suite's whole output together.
      expect({
        code: run.code,
        signal: run.signal,
        dirs: run.dirs,
        unexpected,
        stale,
        servedByModernLaneOnly: eras.modern !== undefined && Object.keys(eras).length === 1,
        output: run.output,
      }).toEqual({
        code: run.checks.some((c) => c.status === 'FAILURE') ? 1 : 0,
        signal: null,
        dirs: [expect.stringMatching(new RegExp(`^server-${scenario}-`))],
        unexpected: [],
        stale: [],
        servedByModernLaneOnly: true,
        output: expect.any(String),
      });
      expect(run.checks.length).toBeGreaterThan(0);
    },
    SCENARIO_TIMEOUT_MS + 10_000,
  );

  it.each(LEGACY)(
    `%s (${LEGACY_VERSION}) passes on the 2025-era lane`,
    async (scenario) => {
      const offset = server.stdout().length;
      const run = await runConformance(
        server.url,
        ['--scenario', scenario, '--spec-version', LEGACY_VERSION],
        SCENARIO_TIMEOUT_MS,
      );
      await settle(server);
      const eras = erasSince(server, offset);
      expect({
        code: run.code,
        signal: run.signal,
        dirs: run.dirs,
        badChecks: run.checks.filter((c) => c.status !== 'SUCCESS' && c.status !== 'INFO').map(describeCheck),
        servedByLegacyLaneOnly: eras.legacy !== undefined && Object.keys(eras).length === 1,
        output: run.output,
      }).toEqual({
        code: 0,
        signal: null,
        dirs: [expect.stringMatching(new RegExp(`^server-${scenario}-`))],
        badChecks: [],
        servedByLegacyLaneOnly: true,
        output: expect.stringContaining('0 failed, 0 warnings'),
      });
      expect(run.checks.length).toBeGreaterThan(0);
    },
    SCENARIO_TIMEOUT_MS + 10_000,
  );
});
