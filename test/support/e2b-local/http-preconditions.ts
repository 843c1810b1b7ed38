/**
 * The conditional request headers of Go's http.ServeContent (serve-content.ts) when, as with envd, the response has
 * no ETag: `If-Match` holds only for `*`, `If-None-Match` fails only for `*`, and the dates (If-Unmodified-Since,
 * If-Modified-Since, If-Range) compare with the file's time to the second, in any of Go's three HTTP date layouts.
 * Headers are read as Go's Header.Get does: the first value only.
 */
import type { IncomingMessage } from 'node:http';

/** The first value of header `name` (Go's Header.Get; Node joins repeated ones). */
export function firstHeader(req: IncomingMessage, name: string): string | undefined {
  return req.headersDistinct[name]?.[0];
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY = '(?:mon|tue|wed|thu|fri|sat|sun)';
/** Go's http.ParseTime layouts: IMF-fixdate, RFC 850 (two-digit year, any zone name) and asctime. */
const HTTP_DATES = [
  new RegExp(`^${DAY}, (\\d{2}) (\\w{3}) (\\d{4}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`, 'i'),
  /^(?:mon|tues|wednes|thurs|fri|satur|sun)day, (\d{2})-(\w{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) [A-Z]{3,5}$/i,
  new RegExp(`^${DAY} (\\w{3}) ( ?\\d{1,2}) (\\d{2}):(\\d{2}):(\\d{2}) (\\d{4})$`, 'i'),
];

/** An HTTP date in whole seconds since the epoch (zones read as UTC), or undefined when it is not one. */
function parseHttpDate(text: string): number | undefined {
  for (const [index, pattern] of HTTP_DATES.entries()) {
    const m = pattern.exec(text);
    if (m === null) continue;
    const [day, month, year, hour, minute, second] =
      index === 2 ? [m[2], m[1], m[6], m[3], m[4], m[5]] : [m[1], m[2], m[3], m[4], m[5], m[6]];
    let fullYear = Number(year);
    if (index === 1) fullYear += fullYear >= 69 ? 1900 : 2000;
    const monthIndex = MONTHS.indexOf(String(month).toLowerCase());
    const parts = [fullYear, monthIndex, Number(String(day).trim()), Number(hour), Number(minute), Number(second)];
    const [y, mo, d, h, mi, s] = parts as [number, number, number, number, number, number];
    const ms = Date.UTC(y, mo, d, h, mi, s);
    const back = new Date(ms);
    // Go refuses what does not exist (31 Feb, 25:00), where Date.UTC rolls over.
    if (monthIndex < 0 || back.getUTCDate() !== d || back.getUTCMonth() !== mo || h > 23 || mi > 59 || s > 59)
      return undefined;
    return ms / 1000;
  }
  return undefined;
}

type Condition = 'none' | 'true' | 'false';

/** Go's scanETag: the entity tag at the start of `s` and what follows it, or undefined. */
function scanETag(s: string): { etag: string; rest: string } | undefined {
  const text = s.trim();
  const start = text.startsWith('W/') ? 2 : 0;
  if (text.length - start < 2 || text[start] !== '"') return undefined;
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) return { etag: text.slice(0, i + 1), rest: text.slice(i + 1) };
    if (!(c === 0x21 || (c >= 0x23 && c <= 0x7e) || c >= 0x80)) return undefined;
  }
  return undefined;
}

/** Whether a list of entity tags holds `*` (none can match envd's absent ETag): Go's If-Match/If-None-Match walk. */
function listHasStar(list: string): boolean {
  let rest = list;
  for (;;) {
    rest = rest.trim();
    if (rest === '') return false;
    if (rest[0] === ',') rest = rest.slice(1);
    else if (rest[0] === '*') return true;
    else {
      const scanned = scanETag(rest);
      if (scanned === undefined) return false;
      rest = scanned.rest;
    }
  }
}

/** Go's date conditions: whether the file (`modifiedS`, truncated to the second) is not newer than `header`. */
function notNewer(header: string | undefined, modifiedS: number | undefined): Condition {
  if (header === undefined || header === '' || modifiedS === undefined) return 'none';
  const since = parseHttpDate(header);
  if (since === undefined) return 'none';
  return modifiedS <= since ? 'true' : 'false';
}

/**
 * Go's checkPreconditions: a response already due (412, 304), else the Range header still in force. A `modifiedMs`
 * of 0 (the epoch) counts as unknown for the date conditions; If-Range compares it all the same.
 */
export function checkPreconditions(
  req: IncomingMessage,
  modifiedMs: number,
): { done: 412 | 304 } | { range: string | undefined } {
  const modifiedS = modifiedMs === 0 ? undefined : Math.floor(modifiedMs / 1000);
  const ifMatch = firstHeader(req, 'if-match');
  let condition: Condition = ifMatch ? (listHasStar(ifMatch) ? 'true' : 'false') : 'none';
  if (condition === 'none') condition = notNewer(firstHeader(req, 'if-unmodified-since'), modifiedS);
  if (condition === 'false') return { done: 412 };
  const ifNoneMatch = firstHeader(req, 'if-none-match');
  if (ifNoneMatch) {
    if (listHasStar(ifNoneMatch)) return { done: 304 };
  } else if (notNewer(firstHeader(req, 'if-modified-since'), modifiedS) === 'true') return { done: 304 };
  const range = firstHeader(req, 'range');
  const ifRange = firstHeader(req, 'if-range');
  if (!range || !ifRange) return { range };
  const since = scanETag(ifRange) === undefined ? parseHttpDate(ifRange) : undefined;
  return { range: since !== undefined && since === Math.floor(modifiedMs / 1000) ? range : undefined };
}
