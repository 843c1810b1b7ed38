/**
 * A piece of text percent-encoded for a URI, whatever the text: a lone UTF-16 surrogate (which a JSON string may
 * carry, and `encodeURIComponent` throws on) becomes U+FFFD, as it does in the UTF-8 name of the file it names.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

export function toUriComponent(text: string): string {
  return encodeURIComponent(text.replace(LONE_SURROGATE, '\uFFFD'));
}
