/** Telling text from binary, and recognizing images, for the file tools. */

/** Largest file the file tools load at once (text is then paged by lines). */
export const MAX_FILE_BYTES = 10 * 1024 * 1024;
/** Largest binary file returned whole (base64 or image content). */
export const MAX_BINARY_BYTES = 2 * 1024 * 1024;

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
