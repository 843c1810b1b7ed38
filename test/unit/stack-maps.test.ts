/**
 * functions/mcp/stack-maps.ts: the decoder, against Node's own (`SourceMap` of node:module) on a map esbuild writes
 * for minified code, and the formatter it installs, given frames as V8 passes them (the real thing, through the
 * bundle, is test/e2e/source-maps.test.ts).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { buildSync } from 'esbuild';

import { decodeSourceMap, installStackMaps, originalPositionOf } from '../../functions/mcp/stack-maps';

let dir: string;
let map: { sources: string[]; mappings: string };
const savedPrepare = Error.prepareStackTrace;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'stack-maps-'));
  writeFileSync(
    join(dir, 'lib.ts'),
    [
      'export function boom(n: number): never {',
      '  const why: string = `boom ${n}`;',
      '  throw new Error(why);',
      '}',
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'entry.ts'),
    [
      'import { boom } from "./lib";',
      '',
      'export function run(times: number): number {',
      '  let total = 0;',
      '  for (let i = 0; i < times; i++) total += i;',
      '  return total > 3 ? boom(total) : total;',
      '}',
      '',
    ].join('\n'),
  );
  buildSync({
    entryPoints: [join(dir, 'entry.ts')],
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'cjs',
    outfile: join(dir, 'chunk.js'),
    sourcemap: 'external',
    sourcesContent: false,
    logLevel: 'silent',
  });
  map = JSON.parse(readFileSync(join(dir, 'chunk.js.map'), 'utf8')) as typeof map;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

afterEach(() => {
  Error.prepareStackTrace = savedPrepare;
});

describe('decodeSourceMap and originalPositionOf', () => {
  it('give the position Node’s SourceMap gives, at every generated column of the chunk', () => {
    const decoded = decodeSourceMap(map, dir);
    const oracle = new SourceMap(map as never);
    const lines = readFileSync(join(dir, 'chunk.js'), 'utf8').split('\n');
    let compared = 0;
    lines.forEach((text, line) => {
      for (let column = 0; column < text.length; column++) {
        const theirs = oracle.findEntry(line, column) as {
          originalSource?: string;
          originalLine?: number;
          originalColumn?: number;
        };
        const mine = originalPositionOf(decoded, line + 1, column + 1);
        const expected =
          theirs.originalSource === undefined
            ? undefined
            : {
                source: join(dir, theirs.originalSource),
                line: (theirs.originalLine ?? 0) + 1,
                column: (theirs.originalColumn ?? 0) + 1,
              };
        expect({ line, column, mine }).toEqual({ line, column, mine: expected });
        compared++;
      }
    });
    expect(compared).toBeGreaterThan(200);
  });

  it('resolves sources against the map’s directory, keeps esbuild’s own names, and applies sourceRoot', () => {
    expect(
      decodeSourceMap({ sources: ['../functions/mcp/core.ts', '<define:X>'], mappings: '' }, '/code').sources,
    ).toEqual(['/functions/mcp/core.ts', '<define:X>']);
    expect(decodeSourceMap({ sources: ['core.ts'], sourceRoot: 'src/', mappings: '' }, '/a').sources).toEqual([
      '/a/src/core.ts',
    ]);
  });

  it('maps nothing outside the mapped lines, before a line’s first segment, or in a segment without a source', () => {
    // Line 1: column 0 has no source, column 4 maps to source 0, line 3 col 2. Line 2 is empty.
    const decoded = decodeSourceMap({ sources: ['a.ts'], mappings: 'A,IAEE;' }, '/m');
    expect(originalPositionOf(decoded, 1, 1)).toBeUndefined();
    expect(originalPositionOf(decoded, 1, 5)).toEqual({ source: '/m/a.ts', line: 3, column: 3 });
    expect(originalPositionOf(decoded, 1, 99)).toEqual({ source: '/m/a.ts', line: 3, column: 3 });
    expect(originalPositionOf(decoded, 2, 1)).toBeUndefined();
    expect(originalPositionOf(decoded, 0, 1)).toBeUndefined();
    expect(originalPositionOf(decoded, 9, 1)).toBeUndefined();
  });

  it('refuses what is not a source map', () => {
    expect(() => decodeSourceMap({ sources: ['a.ts'], mappings: 'A!' }, '/m')).toThrow('malformed');
    expect(() => decodeSourceMap({ sources: ['a.ts'], mappings: 'AA' }, '/m')).toThrow('malformed');
    expect(() => decodeSourceMap({ sources: ['a.ts'], mappings: 'g' }, '/m')).toThrow('malformed');
    expect(() => decodeSourceMap({ mappings: 'A' }, '/m')).toThrow('not a source map');
  });
});

/** A frame as V8 hands it to Error.prepareStackTrace (the parts the formatter reads). */
function frame(file: string | undefined, line: number, column: number, name = 'Object.f'): NodeJS.CallSite {
  const where = file === undefined ? 'native' : `${file}:${line}:${column}`;
  return {
    getFileName: () => file,
    getLineNumber: () => line,
    getColumnNumber: () => column,
    toString: () => `${name} (${where})`,
  } as unknown as NodeJS.CallSite;
}

/** The generated line and column (1-based) of the `throw` in the chunk. */
function throwPosition(): { line: number; column: number } {
  const lines = readFileSync(join(dir, 'chunk.js'), 'utf8').split('\n');
  const line = lines.findIndex((text) => text.includes('throw new Error'));
  return { line: line + 1, column: (lines[line] ?? '').indexOf('throw new Error') + 1 };
}

describe('installStackMaps', () => {
  it('does nothing when the bundle has no map beside it (from source, or a bundle copied alone)', () => {
    expect(installStackMaps(join(dir, 'no-such-bundle.js'))).toBe(false);
    expect(Error.prepareStackTrace).toBe(savedPrepare);
  });

  it(
    'writes frames of the bundle’s files (by path, or by the bare name a chunk is compiled under) at their ' +
      'TypeScript position',
    () => {
      expect(installStackMaps(join(dir, 'chunk.js'))).toBe(true);
      const { line, column } = throwPosition();
      const error = new Error('boom 6');
      const stack = Error.prepareStackTrace?.(error, [
        frame('chunk.js', line, column, 'c'),
        frame(join(dir, 'chunk.js'), line, column),
        frame('node:internal/timers', 5, 7),
        frame(undefined, 0, 0),
      ]) as string;
      expect(stack.split('\n')).toEqual([
        'Error: boom 6',
        `    at c (${join(dir, 'lib.ts')}:3:3)`,
        `    at Object.f (${join(dir, 'lib.ts')}:3:3)`,
        '    at Object.f (node:internal/timers:5:7)',
        '    at Object.f (native)',
      ]);
    },
  );

  it('leaves a frame as it is when its file has no map, or is not beside the bundle', () => {
    installStackMaps(join(dir, 'chunk.js'));
    writeFileSync(join(dir, 'other.js.map'), '{"version":3,"sources":["x.ts"],"mappings":"%%"}');
    const frames = [
      frame('other.js', 1, 1),
      frame('unmapped.js', 1, 1),
      frame('/elsewhere/chunk.js', 1, 1),
      frame(join(dir, 'chunk.js'), 99, 1),
    ];
    const stack = Error.prepareStackTrace?.(new TypeError('t'), frames) as string;
    expect(stack.split('\n').slice(1)).toEqual(frames.map((f) => `    at ${String(f)}`));
  });

  it('keeps the first line as Node writes it, a Node error’s code included', () => {
    installStackMaps(join(dir, 'chunk.js'));
    let nodeError: unknown;
    try {
      readFileSync({} as never);
    } catch (err: unknown) {
      nodeError = err;
    }
    expect(Error.prepareStackTrace?.(nodeError as Error, [])).toMatch(
      /^TypeError \[ERR_INVALID_ARG_TYPE\]: The "path" argument/,
    );
    const renamed = new Error('m');
    renamed.name = 'Custom';
    expect(Error.prepareStackTrace?.(renamed, [])).toBe('Custom: m');
  });
});
