/**
 * IP addresses as the egress policy judges them: parsed to bytes, matched against CIDR ranges, and sorted into
 * the ranges a sandbox never reaches unless an entry names them (private, loopback, link-local, the cloud metadata
 * addresses). An IPv6 address that carries an IPv4 address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`,
 * NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged as that IPv4 address too, so no IPv6 spelling of a denied
 * IPv4 address gets through.
 */
import { isIP } from 'node:net';

/** An address or a range: its bytes (4 or 16) and how many leading bits count. */
export interface Cidr {
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

/** The bytes of an IP literal (IPv4 dotted, or IPv6 without a zone), or undefined when it is not one. */
export function parseIp(text: string): Uint8Array | undefined {
  const family = isIP(text);
  if (family === 4) return Uint8Array.from(text.split('.').map(Number));
  if (family !== 6 || text.includes('%')) return undefined;
  let head = text;
  let tail: number[] = [];
  const dotted = /:(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1] !== undefined) {
    tail = dotted[1].split('.').map(Number);
    head = `${text.slice(0, dotted.index + 1)}0:0`;
  }
  const [left = '', right] = head.split('::');
  const groups = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const before = groups(left);
  const after = right === undefined ? [] : groups(right);
  const words = [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
  const bytes = new Uint8Array(16);
  words.forEach((word, i) => {
    bytes[i * 2] = word >> 8;
    bytes[i * 2 + 1] = word & 0xff;
  });
  if (tail.length === 4) bytes.set(tail, 12);
  return bytes;
}

/** `a.b.c.d`, `a.b.c.d/n`, an IPv6 address or range; undefined when it is none of these. */
export function parseCidr(text: string): Cidr | undefined {
  const [address = '', prefixText, ...rest] = text.split('/');
  const bytes = parseIp(address);
  if (bytes === undefined || rest.length > 0) return undefined;
  const bits = bytes.length * 8;
  if (prefixText === undefined) return { bytes, prefix: bits };
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > bits) return undefined;
  return { bytes: masked(bytes, Number(prefixText)), prefix: Number(prefixText) };
}

/** True when `address` lies in `range` (the same family). */
export function inCidr(address: Uint8Array, range: Cidr): boolean {
  if (address.length !== range.bytes.length) return false;
  for (let bit = 0; bit < range.prefix; bit += 8) {
    const take = Math.min(8, range.prefix - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if (((address[bit / 8] ?? 0) & mask) !== ((range.bytes[bit / 8] ?? 0) & mask)) return false;
  }
  return true;
}

/** Whether `outer` holds every address of `inner`. */
export function cidrCovers(outer: Cidr, inner: Cidr): boolean {
  return outer.prefix <= inner.prefix && inCidr(inner.bytes, outer);
}

/** The narrower of two ranges when one holds the other; undefined when they do not meet. */
export function intersectCidr(a: Cidr, b: Cidr): Cidr | undefined {
  if (a.bytes.length !== b.bytes.length) return undefined;
  if (a.prefix >= b.prefix) return inCidr(a.bytes, b) ? a : undefined;
  return inCidr(b.bytes, a) ? b : undefined;
}

/** The address and, for an IPv6 address that carries one, the IPv4 address inside it: each must pass. */
export function facesOf(address: Uint8Array): Uint8Array[] {
  const v4 = embeddedIpv4(address);
  return v4 === undefined ? [address] : [address, v4];
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if any. */
export function embeddedIpv4(address: Uint8Array): Uint8Array | undefined {
  if (address.length !== 16) return undefined;
  const zeros = (from: number, to: number) => address.slice(from, to).every((b) => b === 0);
  if (zeros(0, 10) && address[10] === 0xff && address[11] === 0xff) return address.slice(12);
  // ::a.b.c.d, but not :: and ::1, which are IPv6's own.
  if (zeros(0, 12) && !(zeros(12, 15) && (address[15] ?? 0) <= 1)) return address.slice(12);
  if (inCidr(address, NAT64)) return address.slice(12);
  if (address[0] === 0x20 && address[1] === 0x02) return address.slice(2, 6);
  return undefined;
}

/** The text of an address: dotted IPv4, or IPv6 as Node writes it. */
export function formatIp(address: Uint8Array): string {
  if (address.length === 4) return address.join('.');
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push((((address[i] ?? 0) << 8) | (address[i + 1] ?? 0)).toString(16));
  // The longest run of zero words becomes "::".
  let best = { at: -1, length: 0 };
  for (let i = 0; i < 8; ) {
    if (words[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === '0') j++;
    if (j - i > best.length) best = { at: i, length: j - i };
    i = j;
  }
  if (best.length < 2) return words.join(':');
  const left = words.slice(0, best.at).join(':');
  const right = words.slice(best.at + best.length).join(':');
  return `${left}::${right}`;
}

/** `a.b.c.d/n`, or the address alone for a single one. */
export function formatCidr(range: Cidr): string {
  const text = formatIp(range.bytes);
  return range.prefix === range.bytes.length * 8 ? text : `${text}/${range.prefix}`;
}

const NAT64 = parseCidr('64:ff9b::/96') as Cidr;

/**
 * What a sandbox reaches only when an entry names it: this host and its network, the cloud metadata services
 * (169.254.169.254 on most clouds, 100.100.100.200 on Alibaba Cloud, inside 100.64.0.0/10), and what is not
 * a unicast internet address at all.
 */
export const SPECIAL_RANGES: readonly Cidr[] = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '::/128',
  '::1/128',
  '64:ff9b:1::/48',
  '100::/64',
  '2001:db8::/32',
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
].map((text) => parseCidr(text) as Cidr);

/** True when some face of `address` lies in a special range. */
export function isSpecial(address: Uint8Array): boolean {
  return facesOf(address).some((face) => SPECIAL_RANGES.some((range) => inCidr(face, range)));
}

/** True when every address of `range` is special. */
export function isSpecialRange(range: Cidr): boolean {
  return SPECIAL_RANGES.some((special) => cidrCovers(special, range));
}

/**
 * A DNS name as entries, secrets and proxy requests take it: lower-case labels of letters, digits, hyphens (not at
 * either end) and underscores, at most 253 characters, and a last label that is not a number (`0x7f.1` and
 * `example.123` are what URL parsers read as IPv4 addresses).
 */
export function isDnsName(name: string): boolean {
  if (name.length === 0 || name.length > 253) return false;
  const labels = name.split('.');
  const last = labels[labels.length - 1] ?? '';
  return labels.every((label) => /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/.test(label)) && !/^(\d+|0x[0-9a-f]*)$/.test(last);
}

/**
 * `host[:port]` split, with an IPv6 host in brackets (`[2001:db8::1]:443`); a bare IPv6 address has no port. The
 * port is as written (parsePort checks it); undefined for an unclosed bracket.
 */
export function splitHostPort(text: string): { host: string; port?: string; bracketed: boolean } | undefined {
  const bracketed = /^\[([^\]]+)\](?::([^:]*))?$/.exec(text);
  if (bracketed !== null) {
    const port = bracketed[2];
    return { host: bracketed[1] ?? '', ...(port === undefined ? {} : { port }), bracketed: true };
  }
  if (text.startsWith('[')) return undefined;
  if ((text.match(/:/g) ?? []).length !== 1) return { host: text, bracketed: false };
  const [host = '', port = ''] = text.split(':');
  return { host, port, bracketed: false };
}

/** A port as written: up to five digits, 1 to 65535; undefined for anything else. */
export function parsePort(text: string): number | undefined {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : 0;
  return port >= 1 && port <= 65_535 ? port : undefined;
}

function masked(bytes: Uint8Array, prefix: number): Uint8Array {
  const out = Uint8Array.from(bytes);
  for (let i = 0; i < out.length; i++) {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    out[i] = (out[i] ?? 0) & ((0xff << (8 - keep)) & 0xff);
  }
  return out;
}
