// R1: the official SDK v1 stateful pattern, as its docs teach it: node:http, one StreamableHTTPServerTransport
// and one McpServer per session, kept in a map by session id. One trivial tool. PORT and HOST from the environment.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const transports = new Map();

function createMcpServer() {
  const server = new McpServer({ name: 'r1-reference', version: '1.0.0' });
  server.registerTool('status', { description: 'Report that the server is up.' }, async () => ({
    content: [{ type: 'text', text: 'ok' }],
  }));
  return server;
}

function readJson(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (data += chunk));
    req.on('end', () => {
      try {
        resolve(JSON.parse(data));
      } catch (err) {
        reject(err);
      }
    });
    req.on('error', reject);
  });
}

function sendError(res, status, message) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

const httpServer = createServer(async (req, res) => {
  if (!req.url?.startsWith('/mcp')) return sendError(res, 404, 'Not found');
  const sessionId = req.headers['mcp-session-id'];
  const existing = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
  if (existing !== undefined) return existing.handleRequest(req, res);
  if (sessionId !== undefined) return sendError(res, 404, 'Session not found');
  if (req.method !== 'POST') return sendError(res, 400, 'Bad Request: No valid session ID provided');
  let body;
  try {
    body = await readJson(req);
  } catch {
    return sendError(res, 400, 'Parse error');
  }
  if (!isInitializeRequest(body)) return sendError(res, 400, 'Bad Request: No valid session ID provided');
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => transports.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId !== undefined) transports.delete(transport.sessionId);
  };
  await createMcpServer().connect(transport);
  await transport.handleRequest(req, res, body);
});

httpServer.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1');
