/**
 * A base64url token (or MAC) with one character changed where every bit counts. The last character of an unpadded
 * base64url text may carry bits no byte uses (a 32-byte MAC's 43rd character holds 4 bits and 2 unused): changing
 * only those leaves the same bytes, and a check that should refuse the token accepts it.
 */
export function tamperBase64Url(text: string): string {
  const at = Math.max(0, text.length - 5);
  return `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`;
}
