// @ts-check
/**
 * The one rewrite of a dependency's source text the build makes, behind a check of the installed versions.
 *
 * The MCP SDK's public zod schemas (@modelcontextprotocol/core: ~200 spec and OAuth schemas) are built at module
 * scope, and the server package registers every one of them in its `specTypeSchemas` and `isSpecType` tables at
 * module scope too, so a bundle builds them all at start-up although the server's own checks use a few dozen (its
 * wire schemas per protocol revision are built separately, on first use). Two rewrites let esbuild drop the unused
 * ones: each top-level `const X = <expression>;` of the core's schema modules becomes a call marked pure (kept only
 * where something the bundle runs refers to X), and the two tables, which this server never reads, become
 * stand-ins that throw on use, without the registration loops.
 *
 * The rewrites are of the SDK's built files as the versions in `WRITTEN_FOR` ship them. Another installed version
 * stops the build with what to re-check; each rewrite also checks the text it expects, so that even a file changed
 * in place is looked at again rather than silently mis-rewritten.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The versions of the SDK's packages whose built files these rewrites were written and checked for. */
export const WRITTEN_FOR = Object.freeze({
  '@modelcontextprotocol/core': '2.4.0',
  '@modelcontextprotocol/server': '2.4.0',
});

/** The built files rewritten, by package. */
const CORE_SCHEMA_FILES = /[\\/]@modelcontextprotocol[\\/]core[\\/]dist[\\/](?:schemas|auth)-[\w-]+\.mjs$/;
const SERVER_TABLES_FILE = /[\\/]@modelcontextprotocol[\\/]server[\\/]dist[\\/]src-[\w-]+\.mjs$/;

/**
 * The esbuild plugin that makes the rewrites, once `installed` (package name → installed version) has been checked
 * against `WRITTEN_FOR`. Throws, naming each package, its version and what to re-check, when they differ.
 * @param {Readonly<Record<string, string | undefined>>} installed
 * @returns {import('esbuild').Plugin}
 */
export function specSchemasOnUse(installed) {
  const differing = Object.entries(WRITTEN_FOR).filter(([name, version]) => installed[name] !== version);
  if (differing.length > 0) {
    throw new Error(
      [
        `scripts/build/spec-schemas-on-use.mjs rewrites the built files of ${Object.entries(WRITTEN_FOR)
          .map(([name, version]) => `${name} ${version}`)
          .join(' and ')}, but ${differing
          .map(([name]) => `${name} ${installed[name] ?? '(not installed)'}`)
          .join(' and ')} is installed. Re-check, in the installed packages:`,
        '- @modelcontextprotocol/core dist/schemas-*.mjs and dist/auth-*.mjs: only imports, exports and top-level',
        '  `const` declarations, each free of side effects once marked pure (markConstantsPure);',
        '- @modelcontextprotocol/server dist/src-*.mjs: the registration loops over SPEC_SCHEMA_KEYS and',
        '  authSchemas, and `specTypeSchemas` / `isSpecType`, still unread by this server (TABLE_REWRITES);',
        'then run the bench (cold start) with and without this plugin, and set WRITTEN_FOR to the new versions or',
        'drop the plugin from build.mjs.',
      ].join('\n'),
    );
  }
  return {
    name: 'spec-schemas-on-use',
    setup(build) {
      build.onLoad({ filter: CORE_SCHEMA_FILES }, (args) => ({
        loader: 'js',
        contents: markConstantsPure(args.path, readFileSync(args.path, 'utf8')),
      }));
      build.onLoad({ filter: SERVER_TABLES_FILE }, (args) => ({
        loader: 'js',
        contents: replaceTables(args.path, readFileSync(args.path, 'utf8')),
      }));
    },
  };
}

/**
 * The installed version of each package of `WRITTEN_FOR` (its package.json under `root`'s node_modules), or
 * `undefined` where there is none.
 * @param {string} root
 * @returns {Record<string, string | undefined>}
 */
export function installedVersions(root) {
  return Object.fromEntries(
    Object.keys(WRITTEN_FOR).map((name) => {
      try {
        const manifest = JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8'));
        return [name, typeof manifest.version === 'string' ? manifest.version : undefined];
      } catch {
        return [name, undefined];
      }
    }),
  );
}

/** A table the bundle leaves out: reading any entry says so. @param {string} name */
const TABLE_STAND_IN = (name) =>
  `/* @__PURE__ */ new Proxy({}, { get() { throw new Error('${name} is not in this build: ` +
  `the server looks up no spec type by name'); } })`;

/**
 * The server package's registrations and tables, each expected exactly once, and what replaces it.
 * @type {Array<[string, string]>}
 */
const TABLE_REWRITES = [
  [
    'for (const key of SPEC_SCHEMA_KEYS) register(key, schemas_exports[key]);\n' +
      'for (const [key, schema] of Object.entries(authSchemas)) register(key, schema);\n',
    '',
  ],
  [
    'const specTypeSchemas = Object.freeze(_specTypeSchemas);',
    `const specTypeSchemas = ${TABLE_STAND_IN('specTypeSchemas')};`,
  ],
  ['const isSpecType = Object.freeze(_isSpecType);', `const isSpecType = ${TABLE_STAND_IN('isSpecType')};`],
];

/** @param {string} path @param {string} text */
function replaceTables(path, text) {
  let out = text;
  for (const [from, to] of TABLE_REWRITES) {
    if (out.split(from).length !== 2)
      throw new Error(`${path}: expected once: ${from.split('\n')[0]}; re-check scripts/build/spec-schemas-on-use.mjs`);
    out = out.replace(from, to);
  }
  return out;
}

/**
 * A module whose top level is only imports, exports, comments and `const` declarations, with each declaration's
 * initializer wrapped as `/* @__PURE__ *\/ (() => (<expression>))()` unless it is a literal. A declaration runs from
 * its `const` line to the line before the next one at column 0 that is not a closing bracket, and ends with `;`.
 * @param {string} path
 * @param {string} text
 */
export function markConstantsPure(path, text) {
  const lines = text.split('\n');
  /** @type {string[]} */
  const out = [];
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i] ?? '';
    const declaration = /^const ([\w$]+) = (.*)$/.exec(line);
    if (declaration === null) {
      if (!/^(?:$|import |export |\/\/|\/\*|\*|[ \t])/.test(line))
        throw new Error(`${path}:${i + 1}: unexpected top-level line; re-check scripts/build/spec-schemas-on-use.mjs`);
      out.push(line);
      continue;
    }
    let end = i;
    while (end + 1 < lines.length && /^(?:[ \t]|[}\])])/.test(lines[end + 1] ?? '')) end += 1;
    if (!(lines[end] ?? '').endsWith(';'))
      throw new Error(
        `${path}:${end + 1}: a declaration that does not end with ';'; re-check scripts/build/spec-schemas-on-use.mjs`,
      );
    const statement = lines.slice(i, end + 1);
    if (!/^(?:"[^"]*"|\d+);$/.test(declaration[2] ?? '')) {
      const last = statement.length - 1;
      statement[0] = `const ${declaration[1]} = /* @__PURE__ */ (() => (${declaration[2]}`;
      statement[last] = `${(statement[last] ?? '').slice(0, -1)}))();`;
    }
    out.push(...statement);
    i = end;
  }
  return out.join('\n');
}
