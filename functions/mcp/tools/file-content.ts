/** How much of a file the file tools carry (telling text from binary is resources/media-types.ts's). */

/** Largest file the file tools load at once (text is then paged by lines). */
export const MAX_FILE_BYTES = 10 * 1024 * 1024;
/** Largest binary file returned whole (base64 or image content). */
export const MAX_BINARY_BYTES = 2 * 1024 * 1024;
