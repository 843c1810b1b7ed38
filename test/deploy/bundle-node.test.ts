/**
 * The bundle as FC runs it: code.zip unpacked (index.js and its source maps) in a directory (FC's /code), started on
 * the Node of each FC runtime it may be deployed on, with the function's environment from s.yaml and FC's own
 * variables. On each it must answer /health, the lifecycle hooks and an authenticated initialize, and load the E2B
 * SDK (e2b-sdk.js, which the bundle requires only at its first E2B call). The Nodes and where FC ships them:
 * test/support/deploy-tools.ts and docs/platform-facts.md.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { fc3Props, makeTempDir, readYaml, removeTempDirs, runDeployCli } from '../support/deploy-cli';
import { isDeployToolInstalled, NODE_20_10, NODE_22 } from '../support/deploy-tools';
import { needs } from '../support/needs';
import { skipTag } from '../support/requirements';
import { findFreePort } from '../support/server';
import { shippedFiles } from '../support/shipped-files';
import { readZip } from '../support/zip-reader';

const tools = needs('the deploy tools');

/** [name, binary, what `node --version` prints] of each Node the bundle must boot on. */
type NodeRow = [string, string, string];
const NODES: NodeRow[] = [
  ['Node 20.10.0 (custom.debian10)', NODE_20_10, 'v20.10.0'],
  ['Node 22.23.2 (custom.debian12, Nodejs22 layer)', NODE_22, 'v22.23.2'],
];

/**
 * Without the deploy tools, needs() skips every Node's suite and tags it. With them, a Node whose binary is missing
 * (an install from before it was added) is skipped and tagged alike, so the run's last line names it; with CI=true
 * nothing is skipped, and that Node's suite fails instead.
 */
const runnable = (row: NodeRow): boolean =>
  !tools.ok || process.env.CI === 'true' || isDeployToolInstalled(row[1], row[0]);
const present: NodeRow[] = [];
const absent: NodeRow[] = [];
for (const row of NODES) (runnable(row) ? present : absent).push(row);

const TOKEN = 'bundle-test-token-0123456789abcdef';

/** A started bundle: the process, its base URL, and everything it printed so far. */
interface RunningBundle {
  child: ChildProcess;
  base: string;
  output: () => string;
}

/** Starts index.js as FC does, on FC_CUSTOM_LISTEN_PORT = `port`; resolves once it listens, or with why it exited. */
function startOnFc(
  node: string,
  code: string,
  env: Record<string, string>,
  port: number,
): Promise<RunningBundle | { exitOutput: string }> {
  const child = spawn(node, [join(code, 'index.js')], {
    cwd: code,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env, FC_CUSTOM_LISTEN_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => (output += c));
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (output += c));
  return new Promise((resolveStarted, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the bundle did not listen within 15 s:\n${output}`));
    }, 15_000);
    const check = (): void => {
      if (output.includes('"msg":"listening"')) {
        clearTimeout(timer);
        resolveStarted({ child, base: `http://127.0.0.1:${port}`, output: () => output });
      }
    };
    child.stdout?.on('data', check);
    // 'close', not 'exit': by then stdout and stderr are read to the end, the reason included.
    child.once('close', () => {
      clearTimeout(timer);
      resolveStarted({ exitOutput: output });
    });
  });
}

/**
 * FC gives the function a fixed port, so the test picks one that was free a moment ago. Another process (another
 * copy of the suite, say) may take it first: then the bundle exits with EADDRINUSE and is started on another port.
 */
async function startOnFreePort(node: string, code: string, env: Record<string, string>): Promise<RunningBundle> {
  for (let attempt = 1; ; attempt++) {
    const started = await startOnFc(node, code, env, await findFreePort());
    if (!('exitOutput' in started)) return started;
    if (!started.exitOutput.includes('EADDRINUSE') || attempt === 3)
      throw new Error(`the bundle exited before listening:\n${started.exitOutput}`);
  }
}

/** code.zip as the deploy CLI writes it, and the function's literal environment from its s.yaml. */
interface Artifact {
  entries: ReturnType<typeof readZip>;
  variables: Record<string, string>;
}

let artifact: Promise<Artifact> | undefined;

/** Runs the deploy CLI once for every Node's suite (on the first that asks). */
function theArtifact(): Promise<Artifact> {
  artifact ??= (async () => {
    const out = makeTempDir();
    const run = await runDeployCli(['--output-dir', out, '--generate-token'], { env: { E2B_API_KEY: 'unused' } });
    if (run.code !== 0) throw new Error(`the deploy CLI exited with ${run.code}:\n${run.stderr}`);
    const entries = readZip(readFileSync(join(out, 'code.zip')));
    // The function's environment as s deploy would set it: the literal values of s.yaml, the secrets from the shell.
    const variables = Object.fromEntries(
      Object.entries(fc3Props(readYaml(join(out, 's.yaml'))).environmentVariables).filter(
        ([, v]) => !v.startsWith('${'),
      ),
    );
    return { entries, variables };
  })();
  return artifact;
}

/** Runs `node -e script` in `cwd` and resolves with what it printed on stdout. */
function runScript(node: string, cwd: string, script: string): Promise<string> {
  return new Promise((resolveRun, reject) => {
    execFile(
      node,
      ['-e', script],
      { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeout: 30_000, encoding: 'utf8' },
      (err, stdout, stderr) => (err === null ? resolveRun(stdout) : reject(new Error(`${err.message}\n${stderr}`))),
    );
  });
}

afterAll(removeTempDirs);

/** One Node's checks: code.zip unpacked into a /code of its own and started on `node`, which must be `version`. */
function suite(_name: string, node: string, version: string): void {
  let bundle: RunningBundle | undefined;
  let code: string;
  let base: string;
  let output = (): string => '';

  beforeAll(async () => {
    if (!existsSync(node)) throw new Error(`${node} is not installed: run npm run deploy-tools:install`);
    const { entries, variables } = await theArtifact();
    expect(entries.map((e) => e.name)).toEqual(shippedFiles());
    code = join(makeTempDir('fc-code-'), 'code');
    mkdirSync(code);
    for (const entry of entries) writeFileSync(join(code, entry.name), entry.data);
    bundle = await startOnFreePort(node, code, {
      ...variables,
      MCP_AUTH_TOKENS: TOKEN,
      MCP_SESSION_SECRET: 'bundle-test-session-secret-0123456789',
      // SANDBOX_BACKEND=e2b refuses to start without a key; these calls never create a sandbox, so it is not used.
      E2B_API_KEY: 'e2b-key-not-used-by-these-calls',
      FC_FUNCTION_NAME: 'sandbox-mcp',
      FC_REGION: 'cn-hangzhou',
      LOCAL_SANDBOX_ROOT: makeTempDir('fc-sandboxes-'),
    });
    ({ base, output } = bundle);
  });

  afterAll(async () => {
    const child = bundle?.child;
    if (child !== undefined && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  });

  it(`is ${version}, and the bundle listens on 0.0.0.0 at FC_CUSTOM_LISTEN_PORT with the E2B backend`, async () => {
    expect((await runScript(node, code, 'process.stdout.write(process.version)')).trim()).toBe(version);
    expect(output()).toMatch(/"msg":"listening".*"host":"0\.0\.0\.0"/);
    expect(output()).toMatch(/"msg":"listening".*"backend":"e2b"/);
    expect(output()).toContain('"on_fc":true');
  });

  it('answers GET /health', async () => {
    const res = await fetch(`${base}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: expect.any(String) });
    // The core loaded for it, using a code cache only if the build made one for this very Node: the cache dist/
    // has from the Node that built it is never fed to another (that crashed the process).
    expect(output()).toMatch(/"msg":"core loaded".*"code_cache":"(?:none|used)"/);
  });

  it('answers the Initializer (POST /initialize) and PreStop (GET /pre-stop) hooks', async () => {
    expect((await fetch(`${base}/initialize`, { method: 'POST' })).status).toBeLessThan(300);
    expect((await fetch(`${base}/pre-stop`)).status).toBeLessThan(300);
  });

  it('answers initialize with the bearer token, and 401 without it', async () => {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'deploy-test', version: '1' } },
    });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const denied = await fetch(`${base}/mcp`, { method: 'POST', headers, body });
    expect(denied.status).toBe(401);
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${TOKEN}` },
      body,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBeTruthy();
    expect(await res.text()).toContain('"protocolVersion":"2025-06-18"');
  });

  it('loads the E2B SDK from e2b-sdk.js, as the bundle does at its first E2B call', async () => {
    // bundle/deferred-e2b-sdk.ts: require('./e2b-sdk.js').loadE2BModules(), beside index.js in /code.
    const script = `require('./e2b-sdk.js').loadE2BModules().then(({ e2b, codeInterpreter }) =>
      process.stdout.write(JSON.stringify([typeof e2b.Sandbox, typeof codeInterpreter.Sandbox])))`;
    expect(JSON.parse(await runScript(node, code, script))).toEqual(['function', 'function']);
  });
}

// `.each` refuses an empty table.
if (present.length > 0) tools.describe.each(present)('the bundle from code.zip on %s', suite);
if (absent.length > 0)
  describe.skip.each(absent)(`the bundle from code.zip on %s ${skipTag(['the deploy tools'])}`, suite);
