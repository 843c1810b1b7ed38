/**
 * A multipart/form-data body, parsed whole (the SDK's uploads are buffered anyway): each part's form name,
 * its filename with any directories kept (envd reads the full path from it, unlike Go's FileName()), and its
 * bytes. Filenames come escaped as browsers and undici's FormData write them (`%22`, `%0A`, `%0D`).
 */

export interface FormPart {
  readonly name: string | undefined;
  readonly filename: string | undefined;
  readonly data: Buffer;
}

/** The boundary of a `multipart/*` content type, or undefined. */
export function boundaryOf(contentType: string): string | undefined {
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

function unescapeFilename(value: string): string {
  return value.replace(/%22/g, '"').replace(/%0A/gi, '\n').replace(/%0D/gi, '\r');
}

function dispositionParam(disposition: string, param: string): string | undefined {
  const match =
    new RegExp(`;\\s*${param}="((?:[^"\\\\]|\\\\.)*)"`, 'i').exec(disposition) ??
    new RegExp(`;\\s*${param}=([^;\\s]+)`, 'i').exec(disposition);
  return match?.[1] === undefined ? undefined : unescapeFilename(match[1].replace(/\\(.)/g, '$1'));
}

/** The parts of `body`; throws on a body that is not multipart with `boundary`. */
export function parseMultipart(body: Buffer, boundary: string): FormPart[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: FormPart[] = [];
  let start = body.indexOf(delimiter);
  if (start < 0) throw new Error('multipart: no boundary in the body');
  for (;;) {
    let cursor = start + delimiter.length;
    if (body.subarray(cursor, cursor + 2).toString() === '--') break;
    if (body.subarray(cursor, cursor + 2).toString() === '\r\n') cursor += 2;
    const headerEnd = body.indexOf('\r\n\r\n', cursor);
    if (headerEnd < 0) throw new Error('multipart: truncated part headers');
    const next = body.indexOf(Buffer.from(`\r\n--${boundary}`), headerEnd + 4);
    if (next < 0) throw new Error('multipart: missing closing boundary');
    const headers = body.subarray(cursor, headerEnd).toString('utf8').split('\r\n');
    const disposition = headers.find((h) => /^content-disposition:/i.test(h)) ?? '';
    parts.push({
      name: dispositionParam(disposition, 'name'),
      filename: dispositionParam(disposition, 'filename'),
      data: body.subarray(headerEnd + 4, next),
    });
    start = next + 2;
  }
  return parts;
}
