/**
 * The few DER (X.690) encodings an X.509 certificate is made of, for authority.ts: definite lengths, and the types
 * a certificate uses. Each function returns the whole type-length-value.
 */

function tlv(tag: number, content: Uint8Array): Buffer {
  const n = content.length;
  let length: number[];
  if (n < 0x80) length = [n];
  else {
    const bytes: number[] = [];
    for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
    length = [0x80 | bytes.length, ...bytes];
  }
  return Buffer.concat([Buffer.from([tag, ...length]), content]);
}

export const sequence = (...items: Uint8Array[]): Buffer => tlv(0x30, Buffer.concat(items));
export const set = (...items: Uint8Array[]): Buffer => tlv(0x31, Buffer.concat(items));
export const boolean = (value: boolean): Buffer => tlv(0x01, Buffer.from([value ? 0xff : 0]));
export const octetString = (bytes: Uint8Array): Buffer => tlv(0x04, bytes);
export const utf8String = (text: string): Buffer => tlv(0x0c, Buffer.from(text, 'utf8'));
/** A BIT STRING of whole bytes (no unused bits). */
export const bitString = (bytes: Uint8Array): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), bytes]));
/** `[n] EXPLICIT`: a constructed context tag around `inner`. */
export const explicit = (n: number, inner: Uint8Array): Buffer => tlv(0xa0 | n, inner);
/** `[n] IMPLICIT` of a primitive type: its content under a context tag. */
export const implicit = (n: number, content: Uint8Array): Buffer => tlv(0x80 | n, content);
/** `[n] IMPLICIT` of a constructed type (a SEQUENCE's items under a context tag). */
export const implicitConstructed = (n: number, ...items: Uint8Array[]): Buffer => tlv(0xa0 | n, Buffer.concat(items));

/** A non-negative INTEGER from its big-endian magnitude. */
export function unsignedInteger(magnitude: Uint8Array): Buffer {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start += 1;
  const trimmed = magnitude.subarray(start);
  const pad = (trimmed[0] ?? 0) & 0x80 ? [0] : [];
  return tlv(0x02, Buffer.concat([Buffer.from(pad), trimmed.length === 0 ? Buffer.from([0]) : trimmed]));
}

export const smallInteger = (value: number): Buffer => unsignedInteger(Buffer.from([value]));

/** An OBJECT IDENTIFIER from its dotted form. */
export function objectId(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const groups: number[] = [arc % 128];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) groups.unshift(0x80 | (v % 128));
    bytes.push(...groups);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** A certificate time: UTCTime through 2049, GeneralizedTime after (RFC 5280, 4.1.2.5). */
export function time(date: Date): Buffer {
  // 2026-12-06T05:08:51.123Z → 20261206050851Z
  const digits = `${date.toISOString().slice(0, 19).replace(/[-T:]/g, '')}Z`;
  return date.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(digits.slice(2))) : tlv(0x18, Buffer.from(digits));
}
