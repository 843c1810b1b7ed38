/**
 * The docs hold together. The README stays a front page: at most 16 KiB, with the sections a reader looks for.
 * Every relative Markdown link in the README, the changelog and docs/ names a file of the repository, and a
 * `#anchor` names a heading of that file by GitHub's slug rules. Every environment variable the server reads is
 * in docs/configuration.md.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const README_MAX_BYTES = 16_384;
/** The README's sections, in their order. */
const README_SECTIONS = [
  'Quick start',
  'Tools',
  'Connecting clients',
  'Settings most deployments set',
  'E2B or local',
  'Deploy to Function Compute',
  'Troubleshooting',
  'Documentation',
];
/** The Markdown files whose links are checked, repository-relative. */
const LINKED = [
  'README.md',
  'CHANGELOG.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The lines of a Markdown text outside fenced code blocks (those inside are blanked, so line numbers hold). */
function proseLines(markdown: string): string[] {
  let fenced = false;
  return markdown.split('\n').map((line) => {
    if (line.trimStart().startsWith('```')) {
      fenced = !fenced;
      return '';
    }
    return fenced ? '' : line;
  });
}

/**
 * GitHub's anchor for a heading's text (github-slugger): inline markup reduced to its text, lower-cased, every
 * character but letters, digits, marks, spaces, `-` and `_` dropped, each space a `-`.
 */
export function slugOf(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M} _-]/gu, '').replace(/ /g, '-');
}

/** The anchors of a Markdown text's headings; a repeated slug gets `-1`, `-2`, … as on GitHub. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading === null) continue;
    const slug = slugOf(heading[1] ?? '');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** The targets of a Markdown text's inline links and images, outside code, with their line numbers. */
function linksOf(markdown: string): Array<{ target: string; line: number }> {
  const links: Array<{ target: string; line: number }> = [];
  proseLines(markdown).forEach((line, i) => {
    const withoutCode = line.replace(/`[^`]*`/g, '');
    for (const link of withoutCode.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      links.push({ target: link[1] ?? '', line: i + 1 });
  });
  return links;
}

/** Problems with the relative links of `file` (repository-relative), as `file:line: what`. */
export function linkProblems(file: string, markdown: string, read: (path: string) => string | undefined): string[] {
  const problems: string[] = [];
  for (const { target, line } of linksOf(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // https:, mailto:, …
    const hash = target.indexOf('#');
    const path = hash === -1 ? target : target.slice(0, hash);
    const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const resolved = path === '' ? file : posix.normalize(posix.join(posix.dirname(file), decodeURIComponent(path)));
    const text = read(resolved);
    if (text === undefined) {
      problems.push(`${file}:${line}: links to ${target}, but ${resolved} is no file of the repository`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(text).has(anchor)) {
      problems.push(`${file}:${line}: links to ${target}, but ${resolved} has no heading with the anchor #${anchor}`);
    }
  }
  return problems;
}

/** A repository file's text, or undefined when there is none (a directory counts as present, with no headings). */
function readRepositoryFile(path: string): string | undefined {
  const full = join(ROOT, path);
  if (path.startsWith('..') || !existsSync(full)) return undefined;
  return statSync(full).isDirectory() ? '' : readFileSync(full, 'utf8');
}

/** Every `.ts` file under `dir`, repository-relative. */
function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/**
 * The environment variables the server reads: `env.NAME`, `env?.NAME`, `env['NAME']` and `process.env.NAME` in
 * code (comments left out), and in the config modules every quoted UPPER_SNAKE name (int('PORT', …), lists of names).
 */
function variablesRead(): Set<string> {
  const names = new Set<string>();
  for (const file of sourceFiles('functions')) {
    const isConfig = /\/config[^/]*\.ts$/.test(file);
    for (const line of readFileSync(join(ROOT, file), 'utf8').split('\n')) {
      const code = line.trimStart();
      if (code.startsWith('*') || code.startsWith('/*') || code.startsWith('//')) continue;
      for (const m of code.matchAll(/\benv\??\.([A-Z][A-Z0-9_]+)\b|\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g))
        names.add(m[1] ?? m[2] ?? '');
      if (isConfig) for (const m of code.matchAll(/'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)'/g)) names.add(m[1] ?? '');
    }
  }
  names.delete('');
  return names;
}

describe('the README', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

  it(`is a front page of at most ${README_MAX_BYTES} bytes`, () => {
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(README_MAX_BYTES);
  });

  it('has its sections, in order', () => {
    const headings = proseLines(readme).flatMap((line) => /^## (.*)$/.exec(line)?.[1] ?? []);
    expect(headings.filter((h) => README_SECTIONS.includes(h))).toEqual(README_SECTIONS);
  });

  it('holds the commands CI runs', () => {
    const ci = readFileSync(join(ROOT, '.ci', 'run'), 'utf8');
    for (const command of ['npm test', 'npm run test:reliability']) {
      expect(ci).toContain(command);
      expect(readme).toContain(command);
    }
  });
});

describe('links in the docs', () => {
  it('finds what it looks for (a check of the checker)', () => {
    const files: Record<string, string> = {
      'docs/a.md': '# A page\n\n## Two words, `code` and (more)\n\n## Two words, `code` and (more)\n',
      'docs/b.md': '',
    };
    const read = (path: string): string | undefined => files[path];
    const text = [
      '[ok](a.md) [ok](./a.md#a-page) [ok](a.md#two-words-code-and-more) [ok](a.md#two-words-code-and-more-1)',
      '[gone](missing.md) [bad anchor](a.md#no-such) [self](#nowhere)',
      '[out](https://example.com/x.md) `[code](gone.md)`',
      '```',
      '[fenced](gone.md)',
      '```',
      '![image](b.md#x)',
    ].join('\n');
    expect(linkProblems('docs/b.md', text, read)).toEqual([
      'docs/b.md:2: links to missing.md, but docs/missing.md is no file of the repository',
      'docs/b.md:2: links to a.md#no-such, but docs/a.md has no heading with the anchor #no-such',
      'docs/b.md:2: links to #nowhere, but docs/b.md has no heading with the anchor #nowhere',
      'docs/b.md:7: links to b.md#x, but docs/b.md has no heading with the anchor #x',
    ]);
    expect(slugOf('Access-token lifetime: at least 10–15 minutes')).toBe('access-token-lifetime-at-least-1015-minutes');
    expect(slugOf('Behind a reverse proxy: `MCP_TRUSTED_PROXIES`')).toBe('behind-a-reverse-proxy-mcp_trusted_proxies');
    expect(slugOf('2026-07-28: sandbox handles')).toBe('2026-07-28-sandbox-handles');
  });

  it('resolve to files of the repository, and anchors to their headings', () => {
    expect(LINKED.length).toBeGreaterThan(8);
    const problems = LINKED.flatMap((file) =>
      linkProblems(file, readFileSync(join(ROOT, file), 'utf8'), readRepositoryFile),
    );
    expect(problems).toEqual([]);
  });
});

describe('docs/configuration.md', () => {
  it('names every environment variable the server reads', () => {
    const read = variablesRead();
    expect(read.size).toBeGreaterThan(40);
    const doc = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
    expect([...read].filter((name) => !doc.includes(`\`${name}\``)).sort()).toEqual([]);
  });
});
