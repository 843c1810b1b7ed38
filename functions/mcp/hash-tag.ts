/** Short names and ids derived from text that must not be readable back from them (a token, a root, a session key). */
import { createHash } from 'node:crypto';

/** The first `chars` hex digits of the SHA-256 of `text`: stable, short, and not reversible. */
export function hashTag(text: string, chars: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, chars);
}
