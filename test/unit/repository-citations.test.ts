/**
 * The repository explains itself: comments and docs cite only what is in it. This fails on a mention of the
 * project's notes kept outside the repository (by their file names, or a rule or section number in them), and on
 * a path in backticks or after "see", in a comment or a doc, that names no file of the repository.
 *
 * A path is found when it names a file relative to the citing file, relative to the root, or as the tail of a
 * repository path (`http/origin.ts`, `fake-fc.ts`). Paths under node_modules, URLs and absolute paths are not
 * checked; paths that name no file here on purpose are listed in KNOWN with the reason.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';

const ROOT = join(__dirname, '..', '..');
/** What is checked. */
const WALKED = ['functions', 'test', 'scripts', 'docs', 'README.md', 'CHANGELOG.md', 'build.mjs'];
/** Folders neither checked nor counted as repository files: installed packages, build and deploy outputs, git. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'coverage', 'fc-deploy', '.git']);
const CHECKED_FILE = /\.(?:ts|js|mjs|cjs|md|py|ya?ml)$/;
const CODE_FILE = /\.(?:ts|js|mjs|cjs)$/;

/** Paths that name no repository file on purpose, and why. */
const KNOWN: Readonly<Record<string, string>> = {
  'dist/index.js': 'the HTTP bundle, written by `npm run build`',
  'dist/stdio.js': 'the stdio bundle, written by `npm run build`',
  'code/index.js': 'the bundle inside the deploy artifact that `node scripts/deploy.js` writes',
  'mcp-core.js': 'the core, a file the build writes beside index.js (build.mjs DEFERRED_MODULES)',
  'e2b-sdk.js': 'the E2B SDK, a file the build writes beside index.js (build.mjs DEFERRED_MODULES)',
  'jose.js': 'jose, a file the build writes beside index.js (build.mjs DEFERRED_MODULES)',
  'telemetry.js': 'OpenTelemetry, a file the build writes beside index.js (build.mjs DEFERRED_MODULES)',
  'dist/telemetry.js': 'OpenTelemetry as the build writes it (build.mjs DEFERRED_MODULES)',
  './e2b-sdk.js': 'the E2B SDK as its stand-in requires it (functions/mcp/bundle/deferred-e2b-sdk.ts)',
  'stdio.js': 'the stdio bundle by its name in dist/',
  'code/mcp-core.js': 'the core inside the deploy artifact',
  'code/e2b-sdk.js': 'the E2B SDK inside the deploy artifact',
  'code/jose.js': 'jose inside the deploy artifact',
  'index.js': 'the bundle by the name Function Compute runs it (the root of code.zip, /code/index.js)',
  'src/types.ts': 'a file of googleapis/js-genai, named with its repository in docs/tool-schemas.md',
  'src/_transformers.ts': 'a file of googleapis/js-genai, named with its repository in docs/tool-schemas.md',
  'core/src/utils/gemini_schema_util.ts': 'a file of google/adk-js, named with its repository in docs/tool-schemas.md',
};

/** The outside notes' names, built from parts so that this file does not mention them itself. */
const NOTES = ['FACTS', 'DESIGN', 'STYLE'];
const OUTSIDE_NOTES = new RegExp(
  `\\b(?:${NOTES.join('|')})\\.md\\b|\\b${NOTES[2]} R\\d|\\b${NOTES[0]} §\\d|\\b${NOTES[1]} rule \\d`,
  'g',
);

const EXTENSIONS = 'ts|js|mjs|cjs|md|py';
/** A relative path with one of the extensions: not inside a longer path, a URL, a package name or a template. */
const PATH = new RegExp(
  `(?<![\\w./@*$<>{}~:\\\\-])(?:\\.{1,2}/)*[\\w-][\\w.-]*(?:/[\\w.-]+)*\\.(?:${EXTENSIONS})\\b(?![\\w/-]|\\.\\w)`,
  'g',
);
const BACKTICKED = /`([^`\n]+)`/g;
const AFTER_SEE = new RegExp(
  `\\bsee\\s+(?:also\\s+)?((?:\\.{1,2}/)*[\\w-][\\w.-]*(?:/[\\w.-]+)*\\.(?:${EXTENSIONS}))\\b`,
  'gi',
);

/** Every file under `dir` (repository-relative, with `/`), skipping SKIPPED_DIRS. */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) out.push(...walk(path));
    } else if (entry.isFile()) {
      out.push(path);
    }
  }
  return out;
}

/** The text a reader sees as explanation, line by line: comments in code (others blanked), docs without fenced
 * blocks. */
function explanatoryLines(file: string, text: string): string[] {
  const lines = text.split('\n');
  if (CODE_FILE.test(file)) {
    let inBlock = false;
    return lines.map((line) => {
      const trimmed = line.trimStart();
      if (inBlock) {
        if (line.includes('*/')) inBlock = false;
        return line;
      }
      if (trimmed.startsWith('/*')) {
        inBlock = !line.includes('*/', line.indexOf('/*') + 2);
        return line;
      }
      if (trimmed.startsWith('//') || trimmed.startsWith('*')) return line;
      const trailing = /(?:^|[\s;,)}\]])\/\/\s(.*)$/.exec(line);
      return trailing?.[1] ?? '';
    });
  }
  if (file.endsWith('.py')) return lines.map((line) => /#(.*)$/.exec(line)?.[1] ?? '');
  if (file.endsWith('.md')) {
    let fenced = false;
    return lines.map((line) => {
      if (line.trimStart().startsWith('```')) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line;
    });
  }
  return lines;
}

/** The paths a line cites: in backticks, or right after "see". */
function citedPaths(line: string): string[] {
  const cited = new Set<string>();
  for (const span of line.matchAll(BACKTICKED)) {
    const inside = span[1] ?? '';
    if (inside.includes('://')) continue;
    for (const path of inside.matchAll(PATH)) cited.add(path[0]);
  }
  for (const see of line.matchAll(AFTER_SEE)) if (see[1] !== undefined) cited.add(see[1]);
  return [...cited].filter((path) => !path.split('/').includes('node_modules'));
}

/** True when `path`, cited in `file`, names a file of the repository (see the header for how). */
function namesRepositoryFile(
  path: string,
  file: string,
  files: ReadonlySet<string>,
  tails: ReadonlySet<string>,
): boolean {
  if (Object.hasOwn(KNOWN, path)) return true;
  const fromFile = posix.normalize(posix.join(posix.dirname(file), path));
  const fromRoot = posix.normalize(path);
  return files.has(fromFile) || files.has(fromRoot) || tails.has(fromRoot.replace(/^(?:\.\.?\/)+/, ''));
}

/** Every segment-aligned tail of every path: a/b/c.ts gives a/b/c.ts, b/c.ts and c.ts. */
function tailsOf(files: Iterable<string>): Set<string> {
  const tails = new Set<string>();
  for (const file of files) {
    const parts = file.split('/');
    for (let i = 0; i < parts.length; i++) tails.add(parts.slice(i).join('/'));
  }
  return tails;
}

/** Problems in one file's text, as `file:line: what`. */
function problemsIn(file: string, text: string, files: ReadonlySet<string>, tails: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  text.split('\n').forEach((line, i) => {
    for (const mention of line.matchAll(OUTSIDE_NOTES)) {
      problems.push(
        `${file}:${i + 1}: cites "${mention[0]}", which is not in the repository; state the fact, or cite a doc ` +
          `in docs/`,
      );
    }
  });
  explanatoryLines(file, text).forEach((line, i) => {
    for (const path of citedPaths(line)) {
      if (!namesRepositoryFile(path, file, files, tails))
        problems.push(`${file}:${i + 1}: names \`${path}\`, which is no file of the repository`);
    }
  });
  return problems;
}

const allFiles = walk('');
const FILES = new Set(allFiles);
const TAILS = tailsOf(allFiles);

describe('the repository cites only itself', () => {
  it('finds what it looks for (a check of the checker)', () => {
    const [notes, rule] = [`${NOTES[0]}.md`, `${NOTES[2]} R17`];
    expect(problemsIn('docs/x.md', `As ${notes} says, and ${rule}.`, FILES, TAILS)).toHaveLength(2);
    const comment = '//'; // spelled apart, so that this file's own comments stay clean
    const code = [
      '/** See `http/no-such-file.ts`. */',
      'const s = `${dir}/gone.ts`; ' + comment + ' see functions/mcp/gone.ts',
      'x(); ' + comment + ' `http/origin.ts`',
    ].join('\n');
    expect(problemsIn('functions/mcp/x.ts', code, FILES, TAILS)).toEqual([
      'functions/mcp/x.ts:1: names `http/no-such-file.ts`, which is no file of the repository',
      'functions/mcp/x.ts:2: names `functions/mcp/gone.ts`, which is no file of the repository',
    ]);
    const fine =
      '`https://example.com/a/b.md`, `node_modules/x/y.js`, `/var/fc/index.js`, `@scope/pkg/z.js`, ' +
      '`../support/server.ts`';
    expect(problemsIn('test/e2e/x.md', fine, FILES, TAILS)).toEqual([]);
  });

  it('no comment or doc cites a note kept outside it, or a file it does not have', () => {
    const checked = WALKED.flatMap((top) => (top.includes('.') ? [top] : walk(top))).filter((file) =>
      CHECKED_FILE.test(file),
    );
    expect(checked.length).toBeGreaterThan(100);
    const problems = checked.flatMap((file) => problemsIn(file, readFileSync(join(ROOT, file), 'utf8'), FILES, TAILS));
    expect(problems).toEqual([]);
  });
});
