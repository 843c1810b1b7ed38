/** A loopback reverse proxy that sends each request to the next backend in turn: no session affinity. */
import { createServer, request as httpRequest, type Server } from 'node:http';

export interface RoundRobinProxy {
  readonly url: string;
  /** Which backend (index) served each request, in order. */
  readonly served: number[];
  /** Sends every request to one backend from now on (`undefined`: round robin again). */
  pin(index: number | undefined): void;
  close(): Promise<void>;
}

/** Starts the proxy on 127.0.0.1 in front of `ports`. */
export async function startRoundRobinProxy(ports: readonly number[]): Promise<RoundRobinProxy> {
  let next = 0;
  let pinned: number | undefined;
  const served: number[] = [];
  const server: Server = createServer((req, res) => {
    const index = pinned ?? next;
    next = (next + 1) % ports.length;
    served.push(index);
    const upstream = httpRequest(
      {
        host: '127.0.0.1',
        port: ports[index],
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: `127.0.0.1:${ports[index]}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    served,
    pin: (index) => {
      pinned = index;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
