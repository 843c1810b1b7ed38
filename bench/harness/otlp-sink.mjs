// A loopback OTLP/HTTP endpoint that takes every export and keeps nothing but counts: what figure 12's server with
// telemetry on exports to, so that the figure measures the server's own cost of tracing, not a collector's.
import { createServer } from 'node:http';

/** Starts the sink. Resolves with `{ origin, stats(), close() }`; `stats()` counts requests and bytes by path. */
export function startOtlpSink() {
  const counts = {};
  const server = createServer((req, res) => {
    let bytes = 0;
    req.on('data', (chunk) => {
      bytes += chunk.length;
    });
    req.on('end', () => {
      counts[req.url] ??= { requests: 0, bytes: 0 };
      const entry = counts[req.url];
      entry.requests += 1;
      entry.bytes += bytes;
      const json = String(req.headers['content-type']).startsWith('application/json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
      res.end(json ? '{}' : '');
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({
        origin: `http://127.0.0.1:${port}`,
        stats: () => structuredClone(counts),
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}
