/**
 * The egress proxy: where a sandbox's outbound connections are judged and made, outside the sandbox. A process
 * inside speaks HTTP proxy to its supervisor's listener (`CONNECT host:port` for TLS and any other TCP, or an
 * absolute-form `GET http://host/…`); the supervisor carries the connection to the server (supervisor-streams.ts),
 * and here the destination is judged by the sandbox's policy (policy.ts), its name resolved by the server
 * (resolver.ts), the judged address dialled, and the bytes pumped both ways. A refusal is an HTTP answer that
 * names the rule, and one log line with the sandbox, the credential's principal and the destination (never a path,
 * a header or a body). Everything held per connection is bounded: the head (MAX_HEAD_BYTES, HEAD_TIMEOUT_MS), then
 * each direction's stream window.
 */
import { connect as dialTcp, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as connectTls, rootCertificates, TLSSocket } from 'node:tls';

import type { Logger } from '../log';
import { formatIp, isDnsName, parseIp, parsePort, splitHostPort } from './addresses';
import type { SandboxAuthority } from './authority';
import { type EgressPolicy, judgeAddress, judgeName, type Verdict } from './policy';
import { type HeaderSet, relayRequests } from './request-relay';
import type { NameResolver } from './resolver';
import { type SandboxSecret, secretHeadersFor } from './secrets';

/** The most bytes of a request line and headers read before the request is refused (431). */
export const MAX_HEAD_BYTES = 16 * 1024;
const HEAD_TIMEOUT_MS = 10_000;
const CONNECT_TIMEOUT_MS = 10_000;
/** How long a refused connection stays open after its answer, so that closing does not reset the answer away. */
const LINGER_MS = 1_000;

/** The sandbox a connection comes from. */
export interface EgressContext {
  readonly policy: EgressPolicy;
  /** The owner's principal (non-reversible), for the log. */
  readonly principal: string;
  readonly sandboxId: string;
  /** The secrets this sandbox's requests get, on the hosts they are for. */
  readonly secrets?: readonly SandboxSecret[];
  /** The sandbox's own certificate authority, which lets the proxy read HTTPS to a secret's host. */
  readonly authority?: SandboxAuthority;
}

export interface EgressProxyOptions {
  readonly resolver: NameResolver;
  readonly logger: Logger;
  /** Dials a judged address. @default a TCP connection */
  readonly dial?: (address: string, port: number) => Socket;
  /**
   * Authorities trusted for the hosts' certificates where the proxy ends a sandbox's TLS, besides Node's own (a
   * test CA for a service run in-process). @default Node's trust store (with NODE_EXTRA_CA_CERTS)
   */
  readonly upstreamCa?: readonly string[];
  /** @default HEAD_TIMEOUT_MS */
  readonly headTimeoutMs?: number;
  /** @default CONNECT_TIMEOUT_MS */
  readonly connectTimeoutMs?: number;
}

export interface EgressProxy {
  /** Serves one connection from inside a sandbox until it closes. */
  serve(client: Duplex, context: EgressContext): void;
}

/** Where a request goes: a name or an IP literal, and a port. */
interface Destination {
  readonly host: string;
  readonly port: number;
}

/** A request head, read and checked. */
interface ProxyRequest {
  readonly method: string;
  readonly destination: Destination;
  /** For an absolute-form request: its path and query, which the origin gets instead of the full URL. */
  readonly path?: string;
  readonly version: string;
  /** Header lines as sent (not lower-cased), without the request line. */
  readonly fields: readonly (readonly [string, string])[];
}

type Refusal = { readonly status: 400 | 403 | 408 | 431 | 502 | 504; readonly message: string };

export function createEgressProxy(options: EgressProxyOptions): EgressProxy {
  const { resolver, logger } = options;
  const dial = options.dial ?? ((address: string, port: number) => dialTcp({ host: address, port }));

  /** The address to dial for `destination`, or why there is none. */
  const choose = async (policy: EgressPolicy, { host, port }: Destination): Promise<string | Refusal> => {
    const literal = parseIp(host);
    if (literal !== undefined) {
      const verdict = judgeAddress(policy, undefined, literal, port);
      return verdict.ok ? formatIp(literal) : refusedBy(verdict);
    }
    const byName = judgeName(policy, host, port);
    if (!byName.ok) return refusedBy(byName);
    let addresses: Uint8Array[];
    try {
      addresses = await resolver.resolve(host);
    } catch (err: unknown) {
      const code = (err as { code?: unknown }).code;
      return { status: 502, message: `${host} could not be resolved (${typeof code === 'string' ? code : 'error'})` };
    }
    let first: Verdict | undefined;
    for (const address of addresses) {
      const verdict = judgeAddress(policy, host, address, port);
      if (verdict.ok) return formatIp(address);
      first ??= verdict;
    }
    return refusedBy(first ?? { ok: false, rule: `${host} has no address` });
  };

  const serve = async (client: Duplex, context: EgressContext): Promise<void> => {
    client.on('error', () => client.destroy());
    const read = await readHead(client, options.headTimeoutMs ?? HEAD_TIMEOUT_MS);
    if (read === undefined) return;
    if ('status' in read) return answer(client, read);
    const request = parseRequest(read.head);
    if ('status' in request) return answer(client, request);
    const shown = `${request.destination.host}:${request.destination.port}`;
    const chosen = await choose(context.policy, request.destination);
    if (typeof chosen !== 'string') {
      if (chosen.status === 403) {
        logger.warn('sandbox egress refused', {
          sandbox: context.sandboxId,
          principal: context.principal,
          destination: shown,
          rule: chosen.message,
        });
      }
      return answer(client, chosen);
    }
    const { host, port } = request.destination;
    const tls = request.method === 'CONNECT';
    const headers = secretHeadersFor(context.secrets ?? [], host, port, tls);
    if (headers.size > 0) {
      logger.info('sandbox egress with secrets', {
        sandbox: context.sandboxId,
        principal: context.principal,
        destination: shown,
        secrets: secretNames(context.secrets ?? [], headers).join(','),
      });
    }
    const upstream = dial(chosen, port);
    const timer = setTimeout(
      () => upstream.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })),
      options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    );
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      clearTimeout(timer);
      logger.debug('sandbox egress', { sandbox: context.sandboxId, destination: shown, address: chosen });
      if (!tls) {
        const preface = Buffer.concat([Buffer.from(`${read.head}\r\n\r\n`, 'latin1'), read.rest]);
        relayRequests(client, upstream, {
          headers,
          preface,
          firstHead: toOriginHead(request),
          once: true,
          refuse: (status) => refuse(client, upstream, status),
        });
        pumpResponses(client, upstream);
        return;
      }
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      if (read.rest.length > 0) client.unshift(read.rest);
      if (headers.size > 0 && context.authority !== undefined)
        return endTls(client, upstream, host, headers, context.authority);
      client.resume();
      pump(client, upstream);
    });
    upstream.once('error', (err: Error & { code?: string }) => {
      clearTimeout(timer);
      if (!connected) {
        answer(client, { status: err.code === 'ETIMEDOUT' ? 504 : 502, message: `${shown}: ${err.code ?? 'error'}` });
      }
      upstream.destroy();
    });
  };

  /**
   * The sandbox's TLS ended here with a certificate from its own authority, a TLS connection of the proxy's own to
   * the host (its certificate checked against the server's trust store and the name), and the requests between
   * them relayed with the secrets' headers set.
   */
  const endTls = (client: Duplex, tcp: Socket, host: string, headers: HeaderSet, authority: SandboxAuthority): void => {
    const inside = new TLSSocket(client, {
      isServer: true,
      secureContext: authority.contextFor(host),
      ALPNProtocols: ['http/1.1'],
    });
    const outside = connectTls({
      socket: tcp,
      servername: host,
      ALPNProtocols: ['http/1.1'],
      ...(options.upstreamCa !== undefined && { ca: [...rootCertificates, ...options.upstreamCa] }),
    });
    let relaying = false;
    let secure = false;
    let failure: string | undefined;
    // Said inside the sandbox's TLS, once it is up: the only place its client can read it.
    const tell = (): void => {
      if (failure !== undefined && secure) answer(inside, { status: 502, message: failure });
    };
    inside.pause();
    inside.once('secure', () => {
      secure = true;
      tell();
    });
    inside.on('error', () => {
      inside.destroy();
      outside.destroy();
      client.destroy();
    });
    outside.once('secureConnect', () => {
      relaying = true;
      relayRequests(inside, outside, { headers, once: false, refuse: (status) => refuse(inside, outside, status) });
      pumpResponses(inside, outside);
    });
    outside.on('error', (err: Error & { code?: string }) => {
      if (relaying) return;
      failure = `${host}: ${err.code ?? 'TLS error'} (its certificate or TLS was not accepted)`;
      outside.destroy();
      tell();
    });
  };

  return {
    serve(client, context) {
      serve(client, context).catch(() => client.destroy());
    },
  };
}

/** The names of the secrets whose headers are in `headers` (for the log: never a value). */
function secretNames(secrets: readonly SandboxSecret[], headers: HeaderSet): string[] {
  return secrets.filter((s) => headers.get(s.header.toLowerCase())?.value === s.value).map((s) => s.name);
}

function refusedBy(verdict: Verdict): Refusal {
  return { status: 403, message: verdict.ok ? '' : verdict.rule };
}

/** The head's bytes and what came after them; a refusal; or undefined when the client went first. */
function readHead(client: Duplex, timeoutMs: number): Promise<{ head: string; rest: Buffer } | Refusal | undefined> {
  return new Promise((resolve) => {
    let held: Buffer = Buffer.alloc(0);
    const finish = (value: { head: string; rest: Buffer } | Refusal | undefined): void => {
      clearTimeout(timer);
      client.off('data', onData);
      client.off('end', onEnd);
      client.off('close', onEnd);
      client.pause();
      resolve(value);
    };
    const onData = (chunk: Buffer): void => {
      held = held.length === 0 ? chunk : Buffer.concat([held, chunk]);
      const end = held.indexOf('\r\n\r\n');
      if (end >= 0 && end + 4 <= MAX_HEAD_BYTES)
        return finish({ head: held.subarray(0, end).toString('latin1'), rest: held.subarray(end + 4) });
      if (held.length >= MAX_HEAD_BYTES) finish({ status: 431, message: 'the request head is too large' });
    };
    const onEnd = (): void => finish(undefined);
    const timer = setTimeout(() => finish({ status: 408, message: 'no request head came in time' }), timeoutMs);
    client.on('data', onData);
    client.once('end', onEnd);
    client.once('close', onEnd);
  });
}

const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}) ([\x21-\x7e]+) (HTTP\/1\.[01])$/;
const FIELD_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[\t ]*([\t\x20-\x7e\x80-\xff]*?)[\t ]*$/;

/** The request line and headers, checked; the destination from CONNECT's authority or an absolute http URL. */
function parseRequest(head: string): ProxyRequest | Refusal {
  const [line = '', ...rest] = head.split('\r\n');
  const bad = (message: string): Refusal => ({ status: 400, message });
  const parts = REQUEST_LINE.exec(line);
  if (parts === null) return bad('this is the sandbox\'s HTTP proxy: send "CONNECT host:port" or an absolute http URL');
  const [, method = '', target = '', version = ''] = parts;
  const fields: [string, string][] = [];
  for (const text of rest) {
    const field = FIELD_LINE.exec(text);
    if (field === null) return bad('a header line is malformed');
    fields.push([field[1] ?? '', field[2] ?? '']);
  }
  if (method === 'CONNECT') {
    const destination = toDestination(target);
    return destination === undefined ? bad(`"${target}" is not host:port`) : { method, destination, version, fields };
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return bad("the request needs an absolute http URL (this is the sandbox's HTTP proxy)");
  }
  if (url.protocol !== 'http:')
    return bad(`${url.protocol}// goes through CONNECT: set HTTPS_PROXY (it is set in the sandbox)`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const destination = toDestination(`${url.hostname}:${url.port || '80'}`);
  if (destination === undefined) return bad(`"${host}" is not a host name or an IP address`);
  return { method, destination, path: `${url.pathname}${url.search}`, version, fields };
}

/** `host:port` (`[v6]:port` for IPv6), a host a name of DNS characters or an IP literal. */
function toDestination(authority: string): Destination | undefined {
  const split = splitHostPort(authority);
  const port = split?.port === undefined ? undefined : parsePort(split.port);
  if (split === undefined || port === undefined) return undefined;
  const host = split.host.toLowerCase().replace(/\.$/, '');
  const literal = parseIp(host) !== undefined;
  if (split.bracketed ? !literal : !literal && !isDnsName(host)) return undefined;
  return { host, port };
}

/** Hop-by-hop and proxy headers, which the origin does not get. */
const DROPPED = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'upgrade']);

/** The head the origin gets for an absolute-form request: origin-form, one request, then the connection closes. */
function toOriginHead(request: ProxyRequest): string {
  const lines = [`${request.method} ${request.path ?? '/'} ${request.version}`];
  let host = false;
  for (const [name, value] of request.fields) {
    const lower = name.toLowerCase();
    if (DROPPED.has(lower)) continue;
    if (lower === 'host') host = true;
    lines.push(`${name}: ${value}`);
  }
  if (!host) lines.push(`Host: ${request.destination.host}:${request.destination.port}`);
  lines.push('Connection: close', '', '');
  return lines.join('\r\n');
}

/** Bytes both ways until both ends are done; an error on either side ends both. */
function pump(client: Duplex, upstream: Socket): void {
  pumpResponses(client, upstream);
  client.pipe(upstream);
}

/** The origin's bytes back to the client, and the ends of both tied together; the requests go by relayRequests. */
function pumpResponses(client: Duplex, upstream: Duplex): void {
  const destroyBoth = (): void => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', destroyBoth);
  upstream.on('error', destroyBoth);
  upstream.once('close', () => {
    if (!client.writableEnded) client.end();
  });
  client.once('close', () => upstream.destroy());
  upstream.pipe(client);
}

/** A request stream that cannot be framed: a 400 or 431 to the client, and the origin let go. */
function refuse(client: Duplex, upstream: Duplex, status: 400 | 431): void {
  upstream.unpipe(client);
  upstream.destroy();
  const message = status === 431 ? 'a request head is too large' : "a request's framing is malformed or ambiguous";
  answer(client, { status, message });
}

const REASONS: Record<Refusal['status'], string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
  502: 'Bad Gateway',
  504: 'Gateway Timeout',
};

/** A closing answer that says why; what the client still sends is dropped for LINGER_MS. */
function answer(client: Duplex, refusal: Refusal): void {
  if (client.destroyed || client.writableEnded) return;
  const what = refusal.status === 403 ? "Refused by the sandbox's egress policy" : 'The sandbox egress proxy could not';
  const body = `${what}: ${refusal.message}.\n`;
  client.end(
    `HTTP/1.1 ${refusal.status} ${REASONS[refusal.status]}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\nX-Sandbox-Egress: refused\r\n\r\n${body}`,
  );
  client.resume();
  setTimeout(() => client.destroy(), LINGER_MS).unref();
}
