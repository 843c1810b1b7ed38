/** Shell quoting for commands run inside E2B sandboxes. */

/** Quotes `text` as one POSIX shell word. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
