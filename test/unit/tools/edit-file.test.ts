import { countOccurrences } from '../../../functions/mcp/tools/edit-file';
import { toImageMime, toText } from '../../../functions/mcp/resources/media-types';

describe('file content helpers', () => {
  it('counts non-overlapping occurrences', () => {
    expect(countOccurrences('aaaa', 'aa')).toBe(2);
    expect(countOccurrences('abc', 'x')).toBe(0);
  });

  it('tells UTF-8 text from binary data', () => {
    expect(toText(Buffer.from('héllo'))).toBe('héllo');
    expect(toText(Buffer.from([0x68, 0x00, 0x69]))).toBeUndefined();
    expect(toText(Buffer.from([0xff, 0xfe, 0x41]))).toBeUndefined();
  });

  it('recognizes images by signature', () => {
    expect(toImageMime(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]))).toBe('image/png');
    expect(toImageMime(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBe('image/jpeg');
    expect(toImageMime(Buffer.from('RIFF....WEBPVP8 '))).toBe('image/webp');
    expect(toImageMime(Buffer.from('plain text'))).toBeUndefined();
  });
});
