/**
 * The access Serverless Devs 3.x stores with `s config add` (~/.s/access.yaml), read for `--s-access ALIAS` so that
 * an operator who deploys with `s` needs no other credentials for `node scripts/deploy.js --deploy`.
 */
'use strict';

const { createDecipheriv, createHash } = require('node:crypto');
const { existsSync, readFileSync } = require('node:fs');
const { join, relative, sep } = require('node:path');
const { parse } = require('yaml');

const { UsageError } = require('./deploy-errors');

/**
 * A path for messages: under the home directory as ~/…, else as it is.
 * @param {string} path
 * @param {string | undefined} home
 */
function shown(path, home) {
  if (home === undefined) return path;
  const inside = relative(home, path);
  return inside.startsWith('..') || inside === path ? path : `~/${inside.split(sep).join('/')}`;
}

/** Serverless Devs encrypts each value of access.yaml with crypto-js AES under this fixed passphrase. */
const S_PASSPHRASE = Buffer.from('SecretKey123', 'utf8');
/** crypto-js's passphrase output is OpenSSL's: base64 of "Salted__", an 8-byte salt, then AES-256-CBC. */
const OPENSSL_MAGIC = Buffer.from('Salted__', 'utf8');

/**
 * The access Serverless Devs 3.x stored under `alias` (`s config add`): <home>/.s/access.yaml (or access.yml), a
 * mapping from alias to { AccessKeyID, AccessKeySecret, AccountID, SecurityToken?, __default? }, each value
 * encrypted. `serverless_devs_config_home` moves the .s directory as it does for `s`.
 * @param {string} alias
 * @param {Record<string, string | undefined>} env
 * @param {string | undefined} home
 * @returns {import('./fc-credentials').FcCredentials}
 */
function readServerlessDevsAccess(alias, env, home) {
  const base = env.serverless_devs_config_home || home;
  if (base === undefined)
    throw new UsageError([`--s-access ${alias}: HOME is not set, so Serverless Devs' access.yaml cannot be found`]);
  const dir = join(base, '.s');
  const file =
    [join(dir, 'access.yaml'), join(dir, 'access.yml')].find((path) => existsSync(path)) ?? join(dir, 'access.yaml');
  const where = shown(file, home);
  if (!existsSync(file))
    throw new UsageError([`--s-access ${alias}: ${where} does not exist; add the access with \`s config add\` first`]);
  let content;
  try {
    content = parse(readFileSync(file, 'utf8'));
  } catch {
    // The parser's message quotes the file, values included: name the file only.
    throw new UsageError([`--s-access ${alias}: ${where} is not valid YAML`]);
  }
  const aliases = isMapping(content) ? Object.keys(content) : [];
  const entry = isMapping(content) && Object.hasOwn(content, alias) ? content[alias] : undefined;
  if (!isMapping(entry)) {
    throw new UsageError([
      `--s-access ${alias}: ${where} has no access "${alias}"; it has ` +
        `${aliases.length === 0 ? 'none' : aliases.map((a) => `"${a}"`).join(', ')}`,
    ]);
  }
  /** @param {string} key */
  const field = (key) => {
    const raw = entry[key];
    if (raw === undefined || raw === null || String(raw) === '') return undefined;
    const value = decryptValue(String(raw));
    if (value === undefined)
      throw new UsageError([
        `--s-access ${alias}: ${key} of that access in ${where} cannot be decrypted; add the access again with ` +
          `\`s config add\``,
      ]);
    return value;
  };
  const accessKeyId = field('AccessKeyID');
  const accessKeySecret = field('AccessKeySecret');
  if (accessKeyId === undefined || accessKeySecret === undefined) {
    throw new UsageError([
      `--s-access ${alias}: that access in ${where} has no AccessKeyID and AccessKeySecret (keys: ` +
        `${Object.keys(entry).join(', ')}); is it an Alibaba Cloud access?`,
    ]);
  }
  return {
    accessKeyId,
    accessKeySecret,
    securityToken: field('SecurityToken'),
    source: `Serverless Devs access "${alias}" (${where})`,
  };
}

/**
 * A value of access.yaml in clear text. Values that are not crypto-js output are taken as they are, as `s` does.
 * @param {string} value
 * @returns {string | undefined} undefined when it looks encrypted but does not decrypt
 */
function decryptValue(value) {
  const bytes = Buffer.from(value, 'base64');
  if (bytes.length < 32 || !bytes.subarray(0, 8).equals(OPENSSL_MAGIC)) return value;
  const { key, iv } = evpBytesToKey(S_PASSPHRASE, bytes.subarray(8, 16));
  try {
    const decipher = createDecipheriv('aes-256-cbc', key, iv);
    return Buffer.concat([decipher.update(bytes.subarray(16)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

/**
 * OpenSSL's EVP_BytesToKey with MD5 and one round, which crypto-js uses to turn a passphrase and salt into an
 * AES-256 key and IV.
 * @param {Buffer} passphrase
 * @param {Buffer} salt
 */
function evpBytesToKey(passphrase, salt) {
  const blocks = [];
  let previous = Buffer.alloc(0);
  while (blocks.length * 16 < 48) {
    previous = createHash('md5')
      .update(Buffer.concat([previous, passphrase, salt]))
      .digest();
    blocks.push(previous);
  }
  const material = Buffer.concat(blocks);
  return { key: material.subarray(0, 32), iv: material.subarray(32, 48) };
}

/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
function isMapping(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

module.exports = { readServerlessDevsAccess, shown };
