/**
 * A DNS server on loopback UDP for the egress tests: it answers A and AAAA queries from a table the test sets,
 * one answer per query (so a name can answer differently each time, as a rebinding attacker's does), with TTL 0,
 * and NXDOMAIN for names it does not know. Real DNS on the wire: the proxy's resolver (c-ares) is pointed at it.
 */
import { createSocket, type Socket } from 'node:dgram';

import { parseIp } from '../../functions/mcp/egress/addresses';

/** The addresses a name answers with, per query type; a function answers the n-th query (from 0). */
export type Answers = { readonly a?: readonly string[]; readonly aaaa?: readonly string[] };
export type Entry = Answers | ((query: number) => Answers);

export interface DnsServer {
  /** `127.0.0.1:<port>`, for MCP_SANDBOX_RESOLVER. */
  readonly address: string;
  /** Every name asked for, in order (lower case). */
  readonly asked: string[];
  close(): Promise<void>;
}

export async function startDnsServer(table: Record<string, Entry>): Promise<DnsServer> {
  const socket: Socket = createSocket('udp4');
  const asked: string[] = [];
  const counts = new Map<string, number>();
  socket.on('message', (query, peer) => {
    const parsed = parseQuestion(query);
    if (parsed === undefined) return;
    const { id, name, type, question } = parsed;
    asked.push(name);
    const entry = table[name];
    const count = counts.get(`${name}/${type}`) ?? 0;
    counts.set(`${name}/${type}`, count + 1);
    const answers = typeof entry === 'function' ? entry(count) : entry;
    const addresses = answers === undefined ? undefined : type === 1 ? answers.a : type === 28 ? answers.aaaa : [];
    socket.send(
      toResponse(id, question, type, entry === undefined ? undefined : (addresses ?? [])),
      peer.port,
      peer.address,
    );
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${socket.address().port}`,
    asked,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

function parseQuestion(query: Buffer): { id: number; name: string; type: number; question: Buffer } | undefined {
  if (query.length < 17 || query.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let at = 12;
  while (at < query.length && query[at] !== 0) {
    const length = query[at] ?? 0;
    labels.push(query.subarray(at + 1, at + 1 + length).toString('latin1'));
    at += 1 + length;
  }
  const end = at + 5;
  if (end > query.length) return undefined;
  return {
    id: query.readUInt16BE(0),
    name: labels.join('.').toLowerCase(),
    type: query.readUInt16BE(at + 1),
    question: query.subarray(12, end),
  };
}

/** A response with one record per address; `undefined` addresses: NXDOMAIN. */
function toResponse(id: number, question: Buffer, type: number, addresses: readonly string[] | undefined): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header.writeUInt16BE(addresses === undefined ? 0x8183 : 0x8180, 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(addresses?.length ?? 0, 6);
  const records = (addresses ?? []).map((address) => {
    const data = Buffer.from(parseIp(address) ?? []);
    const record = Buffer.alloc(12);
    record.writeUInt16BE(0xc00c, 0);
    record.writeUInt16BE(type, 2);
    record.writeUInt16BE(1, 4);
    record.writeUInt32BE(0, 6);
    record.writeUInt16BE(data.length, 10);
    return Buffer.concat([record, data]);
  });
  return Buffer.concat([header, question, ...records]);
}
