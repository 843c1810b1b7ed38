/**
 * Run by build.mjs, not by the server: asks a real 2025-era SDK session for `tools/list` at each protocol
 * version and returns each answer's `result` exactly as the SDK serialized it. The build embeds these in the
 * entry, so that a cold instance answers `tools/list` before its core is loaded (http/early-listener.ts),
 * with the bytes the core would send.
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';

import { SILENT_LOGGER } from '../log';
import { createToolCatalog } from '../tools';
import { createProtocolServer } from './server-factory';
import { HTTP_PROTOCOL_VERSIONS } from './versions';

/** The serialized `tools/list` result per protocol version. */
export type ToolsListResults = Record<string, string>;

const ACCEPT = 'application/json, text/event-stream';

export async function captureToolsListResults(): Promise<ToolsListResults> {
  const catalog = createToolCatalog(SILENT_LOGGER);
  const results: ToolsListResults = {};
  for (const version of HTTP_PROTOCOL_VERSIONS) {
    const server = createProtocolServer({ tools: catalog.list, versions: HTTP_PROTOCOL_VERSIONS, call: async () => ({ content: [] }) });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => 'capture' });
    await server.connect(transport);
    const post = async (message: unknown, session: boolean): Promise<string> => {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: ACCEPT };
      if (session) Object.assign(headers, { 'mcp-session-id': 'capture', 'mcp-protocol-version': version });
      const res = await transport.handleRequest(new Request('http://localhost/mcp', { method: 'POST', headers }), { parsedBody: message });
      return res.text();
    };
    await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'build', version: '0' } } }, false);
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, true);
    results[version] = resultText(await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, true));
    await transport.close();
  }
  return results;
}

/** The `result` member of the one SSE event in `answer`, as serialized (`{"result":…,"jsonrpc":"2.0","id":1}`). */
function resultText(answer: string): string {
  const data = answer.split('\n').find((line) => line.startsWith('data: '))?.slice('data: '.length) ?? '';
  const prefix = '{"result":';
  const suffix = ',"jsonrpc":"2.0","id":1}';
  if (!data.startsWith(prefix) || !data.endsWith(suffix)) throw new Error(`unexpected tools/list answer from the SDK: ${data.slice(0, 200)}`);
  return data.slice(prefix.length, -suffix.length);
}
