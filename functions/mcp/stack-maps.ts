/**
 * Stacks that name our TypeScript. Each file of the bundle (index.js, stdio.js, and the files loaded on first
 * use, mcp-core.js, e2b-sdk.js and jose.js: build.mjs) has a source map beside it; once installed, every formatted
 * stack gives a frame in one of those files the position its map names: `/code/../functions/mcp/core.ts`, which reads
 * `/functions/mcp/core.ts:133:9`, rather than mcp-core.js:1:NNNNN. Lazy: a map is read and decoded the first time
 * a stack has a frame in its file (the core's 1.1 MB map: ~80 ms and ~4 MB, once); start-up reads nothing.
 *
 * Not Node's own support (`--enable-source-maps`, `process.setSourceMapsEnabled`), which on Node 20 reads a file's
 * map and counts the lines of the whole file when it compiles the file: ~20 ms at every start for index.js (and
 * the in-process switch comes too late for the file that turns it on); it ignores code compiled by `vm` (the
 * core, bundle/code-cache.ts); and the first stack through the core's map would take ~300 ms and keep ~18 MB to
 * decode it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';

/** A source map's mappings, decoded: generated line `l`'s segments are `lineStarts[l]` ≤ i < `lineStarts[l + 1]`. */
export interface DecodedMap {
  /** Each source's path, resolved against the map's directory (esbuild's own, `<define:…>`, kept as they are). */
  sources: string[];
  lineStarts: Uint32Array;
  /** Per segment: its generated column, and the source index (-1: none), line and column it comes from (0-based). */
  columns: Int32Array;
  sourceIndexes: Int32Array;
  originalLines: Int32Array;
  originalColumns: Int32Array;
}

export interface OriginalPosition {
  source: string;
  /** 1-based, as in a stack frame. */
  line: number;
  column: number;
}

const BASE64_DIGITS = new Int8Array(128).fill(-1);
for (const [i, c] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].entries())
  BASE64_DIGITS[c.charCodeAt(0)] = i;

/** Decodes a version 3 source map (`sources`, `mappings`) whose file lies in `mapDir`; throws on a malformed one. */
export function decodeSourceMap(
  map: { sources?: unknown; sourceRoot?: unknown; mappings?: unknown },
  mapDir: string,
): DecodedMap {
  const { mappings } = map;
  if (typeof mappings !== 'string' || !Array.isArray(map.sources)) throw new Error('not a source map');
  const root = typeof map.sourceRoot === 'string' ? map.sourceRoot : '';
  const sources = map.sources.map((source: unknown) =>
    typeof source !== 'string' ? '' : source.startsWith('<') ? source : resolve(mapDir, root + source),
  );
  let lines = 1;
  let segments = 1;
  for (let i = 0; i < mappings.length; i++) {
    const c = mappings.charCodeAt(i);
    if (c === 59 /* ; */) lines++;
    if (c === 59 || c === 44 /* , */) segments++;
  }
  const lineStarts = new Uint32Array(lines + 1);
  const columns = new Int32Array(segments);
  const sourceIndexes = new Int32Array(segments);
  const originalLines = new Int32Array(segments);
  const originalColumns = new Int32Array(segments);
  // A segment holds 1, 4 or 5 base64 VLQ fields, each relative to the same field of the segment before (the
  // column: before on its line). Field 5 (a name) is not kept.
  let line = 0;
  let count = 0;
  let field = 0;
  let value = 0;
  let shift = 0;
  let column = 0;
  let sourceIndex = 0;
  let originalLine = 0;
  let originalColumn = 0;
  for (let i = 0; i <= mappings.length; i++) {
    const c = i === mappings.length ? 59 : mappings.charCodeAt(i);
    if (c === 59 /* ; */ || c === 44 /* , */) {
      if (shift !== 0 || (field !== 0 && field !== 1 && field !== 4 && field !== 5))
        throw new Error('malformed mappings');
      if (field !== 0) {
        columns[count] = column;
        if (field === 1) sourceIndexes[count] = -1;
        else {
          sourceIndexes[count] = sourceIndex;
          originalLines[count] = originalLine;
          originalColumns[count] = originalColumn;
        }
        count++;
        field = 0;
      }
      if (c === 59 && i < mappings.length) {
        line++;
        lineStarts[line] = count;
        column = 0;
      }
      continue;
    }
    const digit = c < 128 ? BASE64_DIGITS[c]! : -1;
    if (digit < 0 || field === 5 || shift > 25) throw new Error('malformed mappings');
    value |= (digit & 31) << shift;
    if ((digit & 32) !== 0) {
      shift += 5;
      continue;
    }
    const delta = (value & 1) === 1 ? -(value >>> 1) : value >>> 1;
    if (field === 0) column += delta;
    else if (field === 1) sourceIndex += delta;
    else if (field === 2) originalLine += delta;
    else if (field === 3) originalColumn += delta;
    field++;
    value = 0;
    shift = 0;
  }
  lineStarts[lines] = count;
  return { sources, lineStarts, columns, sourceIndexes, originalLines, originalColumns };
}

/** Where generated `line`:`column` (1-based, as a stack frame gives them) comes from; `undefined` when unmapped. */
export function originalPositionOf(map: DecodedMap, line: number, column: number): OriginalPosition | undefined {
  const l = line - 1;
  if (!(l >= 0 && l < map.lineStarts.length - 1)) return undefined;
  // The last segment of the line that starts at or before the column.
  let low = map.lineStarts[l] ?? 0;
  let high = (map.lineStarts[l + 1] ?? 0) - 1;
  let found = -1;
  while (low <= high) {
    const mid = (low + high) >>> 1;
    if ((map.columns[mid] ?? 0) <= column - 1) {
      found = mid;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  const sourceIndex = found < 0 ? -1 : (map.sourceIndexes[found] ?? -1);
  const source = map.sources[sourceIndex];
  if (source === undefined || source === '') return undefined;
  return { source, line: (map.originalLines[found] ?? 0) + 1, column: (map.originalColumns[found] ?? 0) + 1 };
}

/**
 * Formats stacks with the bundle's maps from now on, when the bundle at `bundle` (the entry's `__filename`) has
 * its map beside it; from source, or a bundle copied without its maps, does nothing. Returns whether it did.
 * A frame the maps do not cover, or any failure to read one, leaves the frame as V8 writes it.
 */
export function installStackMaps(bundle: string): boolean {
  if (!existsSync(`${bundle}.map`)) return false;
  const dir = dirname(bundle);
  // By the name a frame gives (a path, or the name a chunk is compiled under): each name is looked at once.
  const maps = new Map<string, DecodedMap | null>();
  const mapOf = (file: string): DecodedMap | null => {
    let map = maps.get(file);
    if (map === undefined) {
      map = readMapOf(isAbsolute(file) ? file : join(dir, file), dir);
      maps.set(file, map);
    }
    return map;
  };
  Error.prepareStackTrace = (error: Error, frames: NodeJS.CallSite[]): string => {
    const lines = frames.map((frame) => `\n    at ${mappedFrame(frame, mapOf)}`);
    return `${headerOf(error)}${lines.join('')}`;
  };
  return true;
}

/** The map of a file of the bundle (one of `dir`), or `null`: another file, no map, or a map that cannot be read. */
function readMapOf(path: string, dir: string): DecodedMap | null {
  if (!path.endsWith('.js') || dirname(path) !== dir) return null;
  try {
    return decodeSourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8')) as Record<string, unknown>, dir);
  } catch {
    return null;
  }
}

/** The frame as V8 writes it, with its position replaced by the original one when a map covers it. */
function mappedFrame(frame: NodeJS.CallSite, mapOf: (file: string) => DecodedMap | null): string {
  const text = String(frame);
  try {
    const file = frame.getFileName();
    const line = frame.getLineNumber();
    const column = frame.getColumnNumber();
    if (file === undefined || file === null || line === null || column === null) return text;
    const map = mapOf(file);
    const original = map === null ? undefined : originalPositionOf(map, line, column);
    const position = `${file}:${line}:${column}`;
    const at = text.lastIndexOf(position);
    if (original === undefined || at < 0) return text;
    const where = `${original.source}:${original.line}:${original.column}`;
    return `${text.slice(0, at)}${where}${text.slice(at + position.length)}`;
  } catch {
    return text;
  }
}

/**
 * The stack's first line as Node writes it: `Name: message`, and Node's own errors `Name [CODE]: message` (their
 * toString). An object given a stack by Error.captureStackTrace is not an error: its own toString is not asked.
 */
function headerOf(error: Error): string {
  try {
    return Object.prototype.toString.call(error) === '[object Error]'
      ? String(error)
      : Error.prototype.toString.call(error);
  } catch {
    return '<error>';
  }
}
