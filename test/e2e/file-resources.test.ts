/**
 * Sandbox files as MCP resources through the built bundle, with the official v1 and v2 clients and the
 * 2026-07-28 lane: results link the files they make (`resource_link`), `resources/read` gives text and blobs (and
 * refuses a large file, naming get_file_url), `resources/list` and `resources/templates/list` describe them, and a
 * handle of another credential reads nothing.
 */
import { connectClient, connectModern, type TestClient, type ToolResult } from '../support/clients';
import { needs } from '../support/needs';
import { startServer, stopAllServers, type StartedServer } from '../support/server';

const TOKEN = 'e2e-resources-token-0123456789abcdef';
const OTHER_TOKEN = 'e2e-resources-other-token-fedcba98765';
/** A valid 1×1 RGBA PNG. */
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/** The suites see paths as a sandbox does (`/home/user`): they need bubblewrap. */
const describeInSandbox = needs('bubblewrap').describe;

let server: StartedServer;
beforeAll(async () => {
  server = await startServer({ env: { MCP_AUTH_TOKENS: `${TOKEN},${OTHER_TOKEN}` } });
});
afterAll(stopAllServers);

function linksOf(result: ToolResult): Array<{ uri?: string; name?: string; mimeType?: string; size?: number }> {
  return result.content.filter((block) => block.type === 'resource_link');
}

describeInSandbox.each(['v2', 'v1'] as const)('the %s client in a 2025 session', (kind) => {
  let client: TestClient;
  beforeAll(async () => {
    client = await connectClient(kind, server.url, { token: TOKEN });
  });
  afterAll(() => client.close());

  it('links a written file and reads it back as text', async () => {
    const written = await client.callTool('write_file', { path: 'notes/report.md', content: '# Report\n' });
    expect(linksOf(written)).toEqual([
      {
        type: 'resource_link',
        uri: 'sandbox://session/home/user/notes/report.md',
        name: 'report.md',
        mimeType: 'text/markdown',
        size: 9,
      },
    ]);
    const read = await client.readResource('sandbox://session/home/user/notes/report.md');
    expect(read.contents).toEqual([
      { uri: 'sandbox://session/home/user/notes/report.md', mimeType: 'text/markdown', text: '# Report\n' },
    ]);
  });

  it('links a file whose path has lone surrogates by the name it has on disk', async () => {
    const written = await client.callTool('write_file', { path: 'odd\udfff.txt', content: 'odd\n' });
    const [link] = linksOf(written);
    expect(link?.uri).toBe('sandbox://session/home/user/odd%EF%BF%BD.txt');
    expect((await client.readResource(String(link?.uri))).contents[0]?.text).toBe('odd\n');
  });

  it('reads binary files as blobs with their media type', async () => {
    await client.callTool('write_file', { path: 'dot.png', content: PNG_BASE64, encoding: 'base64' });
    const read = await client.readResource('sandbox://session/home/user/dot.png');
    expect(read.contents).toEqual([
      { uri: 'sandbox://session/home/user/dot.png', mimeType: 'image/png', blob: PNG_BASE64 },
    ]);
  });

  it('links the files a command names, and says which were not there', async () => {
    const result = await client.callTool('run_command', {
      command: 'seq 1 3 > out.csv',
      files: ['out.csv', 'missing.txt'],
    });
    expect(linksOf(result)).toEqual([
      expect.objectContaining({ uri: 'sandbox://session/home/user/out.csv', mimeType: 'text/csv', size: 6 }),
    ]);
    expect(result.content[0]?.text).toContain('Not linked (no such regular file): missing.txt.');
  });

  it('refuses a file over the limit, naming get_file_url, and a missing one', async () => {
    await client.callTool('run_command', { command: 'head -c 3000000 /dev/zero > big.bin' });
    await expect(client.readResource('sandbox://session/home/user/big.bin')).rejects.toThrow(/get_file_url/);
    await expect(client.readResource('sandbox://session/home/user/nothing.txt')).rejects.toThrow(/No such file/);
    await expect(client.readResource('sandbox://session/etc/passwd')).rejects.toThrow(/outside the sandbox/);
    await expect(client.readResource('file:///etc/passwd')).rejects.toThrow(/Not a file of this session/);
  });

  it('lists the template and the files at the top of the working directory', async () => {
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates).toEqual([
      expect.objectContaining({ uriTemplate: 'sandbox://{sandbox}/{+path}', name: 'sandbox-file' }),
    ]);
    const { resources } = await client.listResources();
    expect(resources.map((resource) => resource.uri)).toEqual(
      expect.arrayContaining(['sandbox://session/home/user/dot.png', 'sandbox://session/home/user/out.csv']),
    );
    expect(resources.find((resource) => resource.name === 'dot.png')).toMatchObject({ mimeType: 'image/png' });
  });
});

describeInSandbox('the 2026-07-28 lane', () => {
  const connect = (token: string) => connectModern(server.url, token, 'resources-e2e');

  it('links files by handle, reads them by handle, and never for another credential', async () => {
    const client = await connect(TOKEN);
    const written = (await client.callTool({
      name: 'write_file',
      arguments: { path: 'modern.txt', content: 'handle\n' },
    })) as ToolResult;
    const handle = String(written.structuredContent?.sandbox);
    const [link] = linksOf(written);
    expect(link?.uri).toBe(`sandbox://${handle}/home/user/modern.txt`);
    const read = await client.readResource({ uri: link?.uri ?? '' });
    expect(read.contents).toEqual([{ uri: link?.uri, mimeType: 'text/plain', text: 'handle\n' }]);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates[0]?.description).toContain('handle');

    const other = await connect(OTHER_TOKEN);
    await expect(other.readResource({ uri: link?.uri ?? '' })).rejects.toThrow(/belongs to another credential/);
    await expect(client.readResource({ uri: 'sandbox://session/home/user/modern.txt' })).rejects.toThrow(
      /cannot be used/,
    );
    await other.close();
    await client.close();
  });
});
