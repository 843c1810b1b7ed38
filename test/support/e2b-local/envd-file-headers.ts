/**
 * The headers of envd's `/files` that follow rules of their own: which encoding a download gets from Accept-Encoding
 * (envd's parseAcceptEncoding and isIdentityAcceptable: gzip is the one it supports, identity is acceptable unless
 * refused with q=0) and the Content-Disposition it sends (Go's mime.FormatMediaType).
 */

/** Accept-Encoding's entries with their quality: the last `q=` Go's ParseFloat reads, else 1. */
function acceptedEncodings(header: string): Array<{ name: string; q: number }> {
  return header.split(',').map((value) => {
    const [name = '', ...params] = value.split(';').map((s) => s.trim());
    let q = 1;
    for (const param of params) {
      const text = param.slice(2);
      if (param.toLowerCase().startsWith('q=') && /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text))
        q = Number(text);
    }
    return { name: name.toLowerCase(), q };
  });
}

/** Whether Accept-Encoding refuses identity (`identity;q=0`, or `*;q=0` without `identity` accepted). */
export function refusesIdentity(header: string | undefined): boolean {
  if (header === undefined || header === '') return false;
  const accepted = acceptedEncodings(header);
  const has = (name: string, refused: boolean): boolean =>
    accepted.some((e) => e.name === name && (e.q === 0) === refused);
  return has('identity', true) || (has('*', true) && !has('identity', false));
}

/** envd's parseAcceptEncoding: the best encoding it supports (gzip) or identity, undefined when none is acceptable. */
export function responseEncoding(header: string | undefined): 'gzip' | 'identity' | undefined {
  if (header === undefined || header === '') return 'identity';
  const identityRefused = refusesIdentity(header);
  for (const e of acceptedEncodings(header).sort((a, b) => b.q - a.q)) {
    if (e.q === 0) continue;
    if (e.name === 'identity') return 'identity';
    if (e.name === '*') return identityRefused ? 'gzip' : 'identity';
    if (e.name === 'gzip') return 'gzip';
  }
  return identityRefused ? undefined : 'identity';
}

const TSPECIALS = '()<>@,;:\\"/[]?=';

/** Go's mime.FormatMediaType('inline', {filename}): a token as it is, else quoted, RFC 2231 when not ASCII. */
export function inlineDisposition(filename: string): string {
  const bytes = Buffer.from(filename, 'utf8');
  if (bytes.some((b) => (b < 0x20 || b > 0x7e) && b !== 0x09)) {
    const encoded = [...bytes]
      .map((b) => {
        const c = String.fromCharCode(b);
        const plain = b > 0x20 && b < 0x7f && !`*'%${TSPECIALS}`.includes(c);
        return plain ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
      })
      .join('');
    return `inline; filename*=utf-8''${encoded}`;
  }
  const isToken = filename !== '' && [...filename].every((c) => c > ' ' && c < '\x7f' && !TSPECIALS.includes(c));
  return isToken ? `inline; filename=${filename}` : `inline; filename="${filename.replace(/["\\]/g, '\\$&')}"`;
}
