/**
 * Destinations for the egress tests, on loopback addresses of their own (127.0.0.0/8 is all this host's): an HTTP
 * host that answers with the request it got, a raw TCP echo host, and canaries that must never be reached. Each
 * records what reached it, so a test can tell a refusal by the policy from a connection that failed.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
}

export interface HttpHost {
  readonly address: string;
  readonly port: number;
  /** Requests that reached it. */
  readonly seen: SeenRequest[];
  /** TCP connections that reached it (a refused request makes none). */
  connections: number;
  close(): Promise<void>;
}

/**
 * An HTTP host on `address` (`port` 0: any free one) that answers every request with JSON of what it got, and
 * serves `files` by path.
 */
export async function startHttpHost(
  address: string,
  port = 0,
  files: Record<string, Buffer | string> = {},
  wrap: (server: Server) => Server = (s) => s,
): Promise<HttpHost> {
  const seen: SeenRequest[] = [];
  const server = wrap(
    createHttpServer((req, res) => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
      const file = files[(req.url ?? '').split('?')[0] ?? ''];
      if (file !== undefined) {
        const type = typeof file === 'string' ? 'text/html' : 'application/octet-stream';
        res.writeHead(200, { 'content-length': Buffer.byteLength(file), 'content-type': type });
        res.end(file);
        return;
      }
      if (Object.keys(files).length > 0 && req.url !== '/echo') {
        res.writeHead(404).end();
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ host: address, method: req.method, url: req.url, headers: req.headers }));
    }),
  );
  const host: HttpHost = {
    address,
    port: 0,
    seen,
    connections: 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  server.on('connection', () => {
    host.connections++;
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => resolve());
  });
  const bound = server.address();
  (host as { port: number }).port = typeof bound === 'object' && bound !== null ? bound.port : 0;
  return host;
}

/** A raw TCP host that echoes each line back upper-cased (a protocol that is not HTTP). */
export async function startEchoHost(address: string): Promise<{ port: number; close(): Promise<void> }> {
  const server: TcpServer = createTcpServer((socket) => {
    socket.on('data', (chunk) => socket.write(chunk.toString('latin1').toUpperCase()));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, address, () => resolve()));
  const bound = server.address();
  return {
    port: typeof bound === 'object' && bound !== null ? bound.port : 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * A `wrap` for startHttpHost: the host's request handler on an HTTPS server with the certificate makeCertificates
 * wrote in `certDir`.
 */
export function httpsWith(certDir: string): (plain: Server) => Server {
  return (plain) => {
    const tls = createHttpsServer({
      key: readFileSync(join(certDir, 'host.key')),
      cert: readFileSync(join(certDir, 'host.crt')),
    });
    for (const listener of plain.listeners('request')) tls.on('request', listener as () => void);
    return tls as unknown as Server;
  };
}

/**
 * A test CA (`ca.crt`) and a certificate for `names` signed by it (`host.key`, `host.crt`), made by openssl in a
 * fresh directory.
 */
export function makeCertificates(names: readonly string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'egress-certs-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl('req', '-x509', ...key, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=egress test CA');
  openssl('req', ...key, '-keyout', 'host.key', '-out', 'host.csr', '-subj', `/CN=${names[0]}`);
  const alt = names.map((n) => `DNS:${n}`).join(',');
  writeFileSync(join(dir, 'host.ext'), `subjectAltName=${alt}\nextendedKeyUsage=serverAuth\n`);
  openssl(
    'x509',
    '-req',
    '-in',
    'host.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'host.crt',
    '-days',
    '2',
    '-extfile',
    'host.ext',
  );
  return dir;
}

/** A PEP 503 index with one pure-Python wheel (built by Python's zipfile). */
export function pypiIndex(): Record<string, Buffer | string> {
  const name = 'demo_pkg-1.0-py3-none-any.whl';
  const wheel = execFileSync('python3', [
    '-c',
    `import io, sys, zipfile
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    z.writestr("demo_pkg/__init__.py", "VALUE = 1\\n")
    z.writestr("demo_pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\\nName: demo-pkg\\nVersion: 1.0\\n")
    z.writestr("demo_pkg-1.0.dist-info/WHEEL",
               "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    z.writestr("demo_pkg-1.0.dist-info/RECORD", "")
sys.stdout.buffer.write(buf.getvalue())`,
  ]);
  const sha = createHash('sha256').update(wheel).digest('hex');
  return {
    '/simple/demo-pkg/': `<html><body><a href="/files/${name}#sha256=${sha}">${name}</a></body></html>`,
    [`/files/${name}`]: wheel,
  };
}
