/**
 * The one rewrite of the SDK's source text (scripts/build/spec-schemas-on-use.mjs) runs only on the versions it was
 * written and checked for: any other installed version fails the build, naming what to re-check.
 */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = resolve(__dirname, '../..');
const MODULE = pathToFileURL(resolve(ROOT, 'scripts/build/spec-schemas-on-use.mjs')).href;

/** Runs specSchemasOnUse(installed) in a child Node (the module is ESM): its error message, or 'ok'. */
function check(installed: Record<string, string> | 'installed'): string {
  const given = installed === 'installed' ? `m.installedVersions(${JSON.stringify(ROOT)})` : JSON.stringify(installed);
  const script = `import(${JSON.stringify(MODULE)}).then((m) => {
    try { m.specSchemasOnUse(${given}); process.stdout.write('ok'); } catch (err) { process.stdout.write(err.message); }
  })`;
  return execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' });
}

it('accepts the installed SDK, which is the one it was written for', () => {
  expect(check('installed')).toBe('ok');
  expect(check({ '@modelcontextprotocol/core': '2.4.0', '@modelcontextprotocol/server': '2.4.0' })).toBe('ok');
});

it('fails the build on another version of either package, naming it and what to re-check', () => {
  const message = check({ '@modelcontextprotocol/core': '2.5.0', '@modelcontextprotocol/server': '2.4.0' });
  expect(message).toContain('@modelcontextprotocol/core 2.5.0 is installed');
  expect(message).toContain('dist/schemas-*.mjs');
  expect(message).toContain('dist/src-*.mjs');
  expect(message).toContain('WRITTEN_FOR');
  expect(check({ '@modelcontextprotocol/core': '2.4.0', '@modelcontextprotocol/server': '2.4.1' })).toContain(
    '@modelcontextprotocol/server 2.4.1 is installed',
  );
  expect(check({ '@modelcontextprotocol/core': '2.4.0' })).toContain('@modelcontextprotocol/server (not installed)');
});
