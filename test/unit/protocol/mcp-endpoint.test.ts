/** The endpoint's shortcut for plain 2025-era messages must agree with the SDK's classifier. */
import { isLegacyRequest } from '@modelcontextprotocol/server';

import { isPlainLegacyMessage } from '../../../functions/mcp/protocol/mcp-endpoint';

const post = (headers: Record<string, string>): Request =>
  new Request('http://localhost/mcp', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
  });

const MESSAGES: unknown[] = [
  { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'run_command', arguments: { command: 'ls' } } },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
  {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
  },
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', _meta: { progressToken: 1 } } },
  {
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'x', _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
  },
  { jsonrpc: '2.0', id: 1.5, method: 'tools/list' },
  { jsonrpc: '2.0', id: null, method: 'tools/list' },
  { jsonrpc: '2.0', id: 1, method: 'tools/list', extra: true },
  { jsonrpc: '2.0', id: 1, method: 'tools/list', params: [] },
  { jsonrpc: '2.0', id: 1, method: 'tools/list', params: null },
  { jsonrpc: '1.0', id: 1, method: 'tools/list' },
  { jsonrpc: '2.0', id: 1, method: 7 },
  { jsonrpc: '2.0', id: 1, result: {} },
  [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }],
  null,
  'tools/list',
];

const HEADERS: Array<Record<string, string>> = [
  {},
  { 'mcp-protocol-version': '2025-11-25' },
  { 'mcp-protocol-version': '2025-03-26' },
  { 'mcp-protocol-version': '2026-07-28' },
  { 'mcp-protocol-version': ' 2025-11-25' },
];

it('calls legacy only what the SDK calls legacy', async () => {
  let taken = 0;
  for (const body of MESSAGES) {
    for (const headers of HEADERS) {
      if (!isPlainLegacyMessage(post(headers), body)) continue;
      taken += 1;
      expect({ body, headers, legacy: await isLegacyRequest(post(headers), body) }).toEqual({
        body,
        headers,
        legacy: true,
      });
    }
  }
  expect(taken).toBeGreaterThanOrEqual(15);
});

it('takes the messages of a 2025-era session', () => {
  const headers = { 'mcp-session-id': 'id', 'mcp-protocol-version': '2025-11-25' };
  for (const body of MESSAGES.slice(0, 4)) expect(isPlainLegacyMessage(post(headers), body)).toBe(true);
});

it('leaves envelopes, modern headers and odd shapes to the SDK', () => {
  expect(isPlainLegacyMessage(post({}), MESSAGES[6])).toBe(false);
  expect(isPlainLegacyMessage(post({ 'mcp-protocol-version': '2026-07-28' }), MESSAGES[0])).toBe(false);
  for (const body of MESSAGES.slice(7)) expect(isPlainLegacyMessage(post({}), body)).toBe(false);
});
