/**
 * Telling text from binary, and the media type of a sandbox file: by its first bytes where they tell (images), else
 * by its name. For the file tools and the resources alike.
 */

const BY_EXTENSION: Readonly<Record<string, string>> = {
  txt: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  html: 'text/html',
  htm: 'text/html',
  css: 'text/css',
  js: 'text/javascript',
  mjs: 'text/javascript',
  ts: 'text/plain',
  py: 'text/x-python',
  sh: 'text/x-shellscript',
  json: 'application/json',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  tgz: 'application/gzip',
  tar: 'application/x-tar',
  parquet: 'application/vnd.apache.parquet',
};

/** The media type of the file `path`, its content (or its start) `bytes` when known. */
export function mediaTypeOf(path: string, bytes?: Buffer): string | undefined {
  const image = bytes === undefined ? undefined : toImageMime(bytes);
  if (image !== undefined) return image;
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? undefined : BY_EXTENSION[name.slice(dot + 1).toLowerCase()];
}

const IMAGE_SIGNATURES: ReadonlyArray<{ mime: string; bytes: readonly number[]; offset?: number }> = [
  { mime: 'image/png', bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { mime: 'image/jpeg', bytes: [0xff, 0xd8, 0xff] },
  { mime: 'image/gif', bytes: [0x47, 0x49, 0x46, 0x38] },
  { mime: 'image/webp', bytes: [0x57, 0x45, 0x42, 0x50], offset: 8 },
];

/** The image type of `bytes` by its signature, or `undefined`. */
export function toImageMime(bytes: Buffer): string | undefined {
  return IMAGE_SIGNATURES.find(({ bytes: sig, offset = 0 }) => sig.every((b, i) => bytes[offset + i] === b))?.mime;
}

/** The text of `bytes` when they are valid UTF-8 without NUL bytes; `undefined` for binary data. */
export function toText(bytes: Buffer): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
