/**
 * The session secret `s deploy` and the console steps use when the operator's shell has none: generated once into
 * <output-dir>/session-secret (mode 0600) and reused by every later run, so that each deploy sends the same value.
 * A new value would end every open session (it signs the session ids and sandbox handles), as a fresh
 * `openssl rand` on each deploy would.
 */
'use strict';

const { randomBytes } = require('node:crypto');
const { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } = require('node:fs');
const { dirname, join } = require('node:path');

/** The file the secret is kept in, inside the output directory. */
const SESSION_SECRET_FILE_NAME = 'session-secret';
/** The server refuses a shorter MCP_SESSION_SECRET. */
const MIN_SECRET_BYTES = 32;

/**
 * Where the session secret of this run comes from: undefined when MCP_SESSION_SECRET is set in the shell (the
 * operator keeps using that), else <output-dir>/session-secret, made sure of unless `write` is false (a dry run).
 * The value is never returned: it is read from the file by the shell that runs `s deploy`.
 * @param {{ outputDir: string, env: Record<string, string | undefined>, write: boolean, log?: (line: string) => void
 * }} options
 * @returns {string | undefined} the file
 */
function keepSessionSecret({ outputDir, env, write, log }) {
  if ((env.MCP_SESSION_SECRET ?? '') !== '') return undefined;
  const file = join(outputDir, SESSION_SECRET_FILE_NAME);
  if (write) {
    const created = ensureSessionSecretFile(file);
    log?.(
      created
        ? `New session secret written to ${file} (mode 0600); export it as MCP_SESSION_SECRET for every deploy.`
        : `Using the session secret kept in ${file}.`,
    );
  }
  return file;
}

/**
 * Reuses the secret in `file`, or writes a new one (32 random bytes, base64) with mode 0600.
 * @param {string} file
 * @returns {boolean} whether it was created now
 */
function ensureSessionSecretFile(file) {
  if (existsSync(file) && Buffer.byteLength(readFileSync(file, 'utf8').trim()) >= MIN_SECRET_BYTES) {
    chmodSync(file, 0o600);
    return false;
  }
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  // writeFileSync's mode applies only to a file it creates; a short file being replaced keeps its own.
  chmodSync(file, 0o600);
  return true;
}

module.exports = { keepSessionSecret, SESSION_SECRET_FILE_NAME };
