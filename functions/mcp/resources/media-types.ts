/** The media type of a sandbox file, by its first bytes where they tell (images) and else by its name. */
import { toImageMime } from '../tools/file-content';

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
