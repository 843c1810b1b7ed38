// The floor for figure 4: a bare node:http server that reads the request body and answers a fixed small
// JSON-RPC result, with no MCP at all. What our server adds over this is its overhead.
import { createServer } from 'node:http';

const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'ok' }] } });

createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY) });
    res.end(BODY);
  });
}).listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1');
