/**
 * The framing of an HTTP/1.1 request stream (RFC 9112), read so that whoever relays it sees every request head of
 * a connection before any of its bytes go on, and never mistakes a body for a head or a head for a body: the
 * preview front (sandbox/local/preview-auth.ts) judges each head going into a sandbox, and the egress proxy
 * (egress/secret-injection.ts) adds a secret's header to each head coming out of one. The stream is read as a
 * head, then its body by Content-Length or chunked, then the next head; after a request that asks to upgrade (a
 * WebSocket), whatever follows is no longer HTTP and passes unread.
 *
 * Strict where parsers disagree (the ground of request smuggling): Transfer-Encoding other than exactly
 * `chunked`, with Content-Length, or on HTTP/1.0; more than one Content-Length or Host; a Content-Length that is
 * not plain digits; a head line, chunk line or chunk end not ended by CRLF (a bare LF or CR); CONNECT: all `bad`
 * (400), and nothing more is framed. Everything it holds is bounded: a head or the trailers at `maxHeadBytes`
 * (431), a chunk line at PREVIEW_MAX_CHUNK_LINE_BYTES; bodies pass as they come, never gathered.
 */

/** The most bytes of request line and headers read before a request is refused (431). */
export const PREVIEW_MAX_HEAD_BYTES = 16 * 1024;
/** The most bytes of one chunk-size line, its extensions included. */
export const PREVIEW_MAX_CHUNK_LINE_BYTES = 1024;

/** A whole request head, read and checked. */
export interface RequestHead {
  /** The head as sent (latin1: byte for byte), its blank line included. */
  readonly text: string;
  readonly method: string;
  readonly target: string;
  /** Its header fields in order: names lower-cased, values without surrounding whitespace. */
  readonly fields: readonly (readonly [string, string])[];
}

/** What a read yields, in order. */
export type Framed =
  /** The next request's head: nothing of it has been passed on; judge it. */
  | { readonly kind: 'head'; readonly head: RequestHead }
  /**
   * Bytes of the current request's body (its chunk framing included), or anything after an upgrade: pass as they are.
   */
  | { readonly kind: 'bytes'; readonly bytes: Buffer }
  /** The stream cannot be framed (or not safely): refuse with `status`; nothing more is read. */
  | { readonly kind: 'bad'; readonly status: 400 | 431 };

const TCHAR = "[!#$%&'*+.^_`|~0-9A-Za-z-]";
const REQUEST_LINE = new RegExp(`^(${TCHAR}{1,32}) ([\\x21-\\x7e]+) HTTP/1\\.([01])$`);
const HEADER_LINE = new RegExp(`^(${TCHAR}+):([\\t\\x20-\\x7e\\x80-\\xff]*)$`);
const METHOD_SO_FAR = new RegExp(`^${TCHAR}{0,32}$`);
/** A chunk-size line without its CRLF: hex size (at most 2^48 - 1), optional extensions of visible characters. */
const CHUNK_LINE = /^([0-9A-Fa-f]{1,12})(?:[\t ]*;[\t\x20-\x7e]*)?$/;
const EMPTY = Buffer.alloc(0);
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
const CR = 0x0d;
const LF = 0x0a;

type State =
  | { readonly name: 'head' }
  | { readonly name: 'fixed'; remaining: number }
  | { readonly name: 'chunk-line' }
  | { readonly name: 'chunk-data'; remaining: number }
  | { readonly name: 'chunk-end' }
  | { readonly name: 'trailers'; bytes: number }
  | { readonly name: 'raw' }
  | { readonly name: 'bad' };

/** One connection's request stream, fed as it arrives. */
export class RequestFramer {
  private state: State = { name: 'head' };
  /** Bytes of an unfinished head or line. */
  private pending: Buffer = EMPTY;
  /** The unfinished head's request line was found well formed. */
  private lineChecked = false;
  /** The current request asked to upgrade: once its body is over, the stream is raw. */
  private upgrade = false;

  constructor(private readonly maxHeadBytes = PREVIEW_MAX_HEAD_BYTES) {}

  /** Bytes of a head have come, and not its end (a deadline may run). */
  get midHead(): boolean {
    return this.state.name === 'head' && this.pending.length > 0;
  }

  /** Reads `chunk`; what it completes, in order. Nothing comes after a `bad`. */
  push(chunk: Buffer): Framed[] {
    const out: Framed[] = [];
    let input = chunk;
    while (input.length > 0 && this.state.name !== 'bad') input = this.step(input, out);
    return out;
  }

  /** Consumes a prefix of `input` in the current state; the rest. */
  private step(input: Buffer, out: Framed[]): Buffer {
    const { state } = this;
    switch (state.name) {
      case 'head':
        return this.readHead(input, out);
      case 'fixed':
      case 'chunk-data': {
        const n = Math.min(state.remaining, input.length);
        out.push({ kind: 'bytes', bytes: input.subarray(0, n) });
        state.remaining -= n;
        if (state.remaining === 0) {
          if (state.name === 'fixed') this.requestDone();
          else this.state = { name: 'chunk-end' };
        }
        return input.subarray(n);
      }
      case 'chunk-line':
        return this.readLine(input, out, PREVIEW_MAX_CHUNK_LINE_BYTES, (line) => {
          const match = CHUNK_LINE.exec(line);
          if (match === null) return false;
          const size = parseInt(match[1] ?? '', 16);
          this.state = size === 0 ? { name: 'trailers', bytes: 0 } : { name: 'chunk-data', remaining: size };
          return true;
        });
      case 'chunk-end':
        return this.readLine(input, out, 2, (line) => {
          if (line !== '') return false;
          this.state = { name: 'chunk-line' };
          return true;
        });
      case 'trailers':
        return this.readLine(input, out, this.maxHeadBytes - state.bytes, (line) => {
          state.bytes += line.length + 2;
          if (line === '') this.requestDone();
          return line === '' || HEADER_LINE.test(line);
        });
      case 'raw':
        out.push({ kind: 'bytes', bytes: input });
        return EMPTY;
      case 'bad':
        return EMPTY;
    }
  }

  /**
   * Gathers one CRLF-ended line of at most `max` bytes (CRLF included) and passes it on once `accept` takes it
   * (without its CRLF); a longer line, a bare LF, or one `accept` refuses is bad.
   */
  private readLine(input: Buffer, out: Framed[], max: number, accept: (line: string) => boolean): Buffer {
    const at = input.indexOf(LF);
    const taken = at < 0 ? input : input.subarray(0, at + 1);
    if (this.pending.length + taken.length > max) return this.fail(out, this.state.name === 'trailers' ? 431 : 400);
    this.pending = this.pending.length === 0 ? Buffer.from(taken) : Buffer.concat([this.pending, taken]);
    if (at < 0) return EMPTY;
    const line = this.pending;
    this.pending = EMPTY;
    if (line.length < 2 || line[line.length - 2] !== CR) return this.fail(out, 400);
    if (!accept(line.toString('latin1', 0, line.length - 2))) return this.fail(out, 400);
    out.push({ kind: 'bytes', bytes: line });
    return input.subarray(at + 1);
  }

  private readHead(input: Buffer, out: Framed[]): Buffer {
    let start = 0;
    // Empty lines before a request line are dropped (RFC 9112, 2.2): a client may end a body with an extra CRLF.
    if (this.pending.length === 0) {
      while (start < input.length && (input[start] === CR || input[start] === LF)) start += 1;
      if (start === input.length) return EMPTY;
    }
    const from = Math.max(0, this.pending.length - 3);
    const view = this.pending.length === 0 ? input.subarray(start) : Buffer.concat([this.pending, input]);
    // Not HTTP is told at once, from the method, or from the request line once it is whole.
    if (!this.lineChecked) {
      const lineEnd = view.indexOf(LF);
      if (lineEnd < 0) {
        const begun = view.toString('latin1', 0, Math.min(view.length, 33));
        const space = begun.indexOf(' ');
        if (!METHOD_SO_FAR.test(space < 0 ? begun : begun.slice(0, space)) || space === 0) return this.fail(out, 400);
      } else {
        if (view[lineEnd - 1] !== CR || !REQUEST_LINE.test(view.toString('latin1', 0, lineEnd - 1)))
          return this.fail(out, 400);
        this.lineChecked = true;
      }
    }
    // A bare LF is told at once, not when (or if) a blank line comes.
    for (let i = view.indexOf(LF, Math.max(0, this.pending.length - 1)); i >= 0; i = view.indexOf(LF, i + 1)) {
      if (view[i - 1] !== CR) return this.fail(out, 400);
    }
    const end = headEnd(view, from);
    if (end < 0 ? view.length > this.maxHeadBytes : end > this.maxHeadBytes) return this.fail(out, 431);
    if (end < 0) {
      this.pending = Buffer.from(view);
      return EMPTY;
    }
    this.pending = EMPTY;
    this.lineChecked = false;
    const head = parseHead(view.toString('latin1', 0, end));
    if (head === undefined) return this.fail(out, 400);
    const framing = framingOf(head);
    if (framing === undefined) return this.fail(out, 400);
    out.push({ kind: 'head', head: head.head });
    this.upgrade = framing.upgrade;
    if (framing.body === 'chunked') this.state = { name: 'chunk-line' };
    else if (framing.body > 0) this.state = { name: 'fixed', remaining: framing.body };
    else this.requestDone();
    return view.subarray(end);
  }

  private requestDone(): void {
    this.state = this.upgrade ? { name: 'raw' } : { name: 'head' };
  }

  private fail(out: Framed[], status: 400 | 431): Buffer {
    this.state = { name: 'bad' };
    this.pending = EMPTY;
    out.push({ kind: 'bad', status });
    return EMPTY;
  }
}

/**
 * The offset just past the blank line that ends the headers, or -1. Lines end at CRLF only: an app that took a bare
 * LF for part of a line would read other fields (and so other request boundaries) than the front; parseHead then
 * refuses any bare LF or CR left inside.
 */
function headEnd(view: Buffer, from: number): number {
  const at = view.indexOf(HEAD_END, from);
  return at < 0 ? -1 : at + HEAD_END.length;
}

/**
 * A head's request line and fields; undefined when a line is not well formed (folded lines, bare LF or CR included).
 */
function parseHead(text: string): { head: RequestHead; minorVersion: string } | undefined {
  const lines = text.split('\r\n');
  const request = REQUEST_LINE.exec(lines[0] ?? '');
  if (request === null) return undefined;
  const fields: (readonly [string, string])[] = [];
  for (const line of lines.slice(1, -2)) {
    const field = HEADER_LINE.exec(line);
    if (field === null) return undefined;
    fields.push([(field[1] ?? '').toLowerCase(), (field[2] ?? '').trim()]);
  }
  return { head: { text, method: request[1] ?? '', target: request[2] ?? '', fields }, minorVersion: request[3] ?? '' };
}

/**
 * How long a request's body is (bytes, or chunked) and whether it upgrades the connection; undefined when that
 * is ambiguous or not carried.
 */
function framingOf({
  head,
  minorVersion,
}: {
  head: RequestHead;
  minorVersion: string;
}): { body: number | 'chunked'; upgrade: boolean } | undefined {
  const values = (name: string): string[] => head.fields.filter(([field]) => field === name).map(([, value]) => value);
  // A tunnel's bytes after its answer are not HTTP, and previews are web apps: not carried.
  if (head.method === 'CONNECT') return undefined;
  if (values('host').length > 1) return undefined;
  const codings = values('transfer-encoding');
  const lengths = values('content-length');
  const upgrade =
    values('upgrade').length > 0 &&
    values('connection').some((value) => value.split(',').some((token) => token.trim().toLowerCase() === 'upgrade'));
  if (codings.length > 0) {
    if (minorVersion === '0' || lengths.length > 0 || codings.length > 1 || codings[0]?.toLowerCase() !== 'chunked')
      return undefined;
    return { body: 'chunked', upgrade };
  }
  if (lengths.length === 0) return { body: 0, upgrade };
  if (lengths.length > 1 || !/^\d{1,15}$/.test(lengths[0] ?? '')) return undefined;
  return { body: Number(lengths[0]), upgrade };
}
