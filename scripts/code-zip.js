/**
 * code.zip: the bundle as `index.js` at the zip root (the files it requires and the maps beside it), deflated,
 * with a fixed timestamp so that the same bundle always gives the same bytes (and the same checksum FC reports).
 */
'use strict';

const { createHash } = require('node:crypto');
/** @typedef {{ mtime?: Date, mode?: number, compress?: boolean }} EntryOptions */
/**
 * The part of yazl used here. yazl ships no type declarations, and none are installed for it, so its export is
 * cast to this.
 * @typedef {object} YazlZipFile
 * @property {(buffer: Buffer, metadataPath: string, options?: EntryOptions) => void} addBuffer
 * @property {() => void} end
 * @property {import('node:stream').Readable} outputStream
 */
const { ZipFile } = /** @type {{ ZipFile: new () => YazlZipFile }} */ (
  // @ts-expect-error TS7016, no declaration file for 'yazl': the cast above types the part used.
  require('yazl')
);

const { ENTRY_FILE } = require('./fc-limits');

/** A fixed mtime: zips of the same bundle are byte-identical. */
const FIXED_MTIME = new Date('2024-01-01T00:00:00Z');

/**
 * @param {Buffer} bundle the contents of dist/index.js
 * @param {ReadonlyArray<{ name: string, contents: Buffer }>} [besides] files put beside it at the zip root, in
 *   this order
 * @returns {Promise<{ zip: Buffer, sha256: string }>}
 */
function createCodeZip(bundle, besides = []) {
  return new Promise((resolve, reject) => {
    const zipfile = new ZipFile();
    zipfile.addBuffer(bundle, ENTRY_FILE, { mtime: FIXED_MTIME, mode: 0o100644, compress: true });
    for (const file of besides)
      zipfile.addBuffer(file.contents, file.name, { mtime: FIXED_MTIME, mode: 0o100644, compress: true });
    zipfile.end();
    /** @type {Buffer[]} */
    const chunks = [];
    zipfile.outputStream.on('data', (chunk) => chunks.push(chunk));
    zipfile.outputStream.once('error', reject);
    zipfile.outputStream.once('end', () => {
      const zip = Buffer.concat(chunks);
      resolve({ zip, sha256: createHash('sha256').update(zip).digest('hex') });
    });
  });
}

module.exports = { createCodeZip };
