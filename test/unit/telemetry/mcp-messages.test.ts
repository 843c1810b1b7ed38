/** MCP spans' names and attributes (functions/mcp/telemetry/mcp-messages.ts): the conventions', no argument values. */
import {
  mcpMessagesOf,
  mcpSpanName,
  mcpStartAttributes,
  requestEndAttributes,
} from '../../../functions/mcp/telemetry/mcp-messages';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('MCP messages as spans', () => {
  it('name a tool call after its tool, and read the trace context from _meta, not the arguments', () => {
    const [call] = mcpMessagesOf({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'run_command', arguments: { command: 'echo secret' }, _meta: { traceparent: TRACEPARENT } },
    });
    expect(call).toEqual({ method: 'tools/call', tool: 'run_command', requestId: '7', traceparent: TRACEPARENT });
    expect(call && mcpSpanName(call)).toBe('tools/call run_command');
    expect(call && mcpStartAttributes(call)).toEqual({
      'mcp.method.name': 'tools/call',
      'jsonrpc.request.id': '7',
      'gen_ai.tool.name': 'run_command',
      'gen_ai.operation.name': 'execute_tool',
    });
    expect(JSON.stringify(call)).not.toContain('secret');
  });

  it('name other methods by the method alone; take each message of a batch; skip what is no message', () => {
    const messages = mcpMessagesOf([
      { jsonrpc: '2.0', id: 'a', method: 'tools/list' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 3, result: {} },
      'junk',
    ]);
    expect(messages.map(mcpSpanName)).toEqual(['tools/list', 'notifications/initialized']);
    expect(messages[1]?.requestId).toBeUndefined();
  });

  it('bound what a client controls: long names are cut, an overlong or non-string traceparent is ignored', () => {
    const [message] = mcpMessagesOf({
      jsonrpc: '2.0',
      id: 1,
      method: `x/${'m'.repeat(500)}`,
      params: { _meta: { traceparent: 'x'.repeat(600), tracestate: 'a=b' } },
    });
    expect(message?.method).toHaveLength(64);
    expect(message?.traceparent).toBeUndefined();
    const [numeric] = mcpMessagesOf({ jsonrpc: '2.0', id: 1, method: 'ping', params: { _meta: { traceparent: 5 } } });
    expect(numeric?.traceparent).toBeUndefined();
  });
});

describe('what a request learned, on its spans', () => {
  it('names a 2025 session as mcp.session.id and a 2026-07-28 handle as sandbox_mcp.handle, by their tags', () => {
    expect(requestEndAttributes({ era: 'legacy', session: 'aaaa11112222', protocol_version: '2025-11-25' })).toEqual(
      expect.objectContaining({ 'mcp.session.id': 'aaaa11112222', 'sandbox_mcp.handle': undefined }),
    );
    expect(requestEndAttributes({ era: 'modern', session: 'bbbb33334444', error_code: 'no_room' })).toEqual(
      expect.objectContaining({
        'mcp.session.id': undefined,
        'sandbox_mcp.handle': 'bbbb33334444',
        'error.type': 'no_room',
      }),
    );
  });
});
