// R2: the pattern of Alibaba Cloud's FC MCP template (start-mcp-nodejs-hello-world-streamable): SDK v1 on
// express, stateless, a new McpServer and transport per request, JSON responses. GET and DELETE answer 405.
// The template's per-request console.log of headers is left out, which only flatters R2.
import express from 'express';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

function createMcpServer() {
  const server = new McpServer({ name: 'r2-reference', version: '1.0.0' });
  server.registerTool('status', { description: 'Report that the server is up.' }, async () => ({
    content: [{ type: 'text', text: 'ok' }],
  }));
  return server;
}

const app = express();

app.post('/mcp', async (req, res) => {
  const server = createMcpServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});

const methodNotAllowed = (_req, res) => {
  res
    .status(405)
    .set('Allow', 'POST')
    .json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null });
};
app.get('/mcp', methodNotAllowed);
app.delete('/mcp', methodNotAllowed);

app.listen(Number(process.env.PORT ?? 8080), process.env.HOST ?? '127.0.0.1');
