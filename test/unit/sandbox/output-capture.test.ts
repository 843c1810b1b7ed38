import { OutputCapture } from '../../../functions/mcp/sandbox/output-capture';

describe('OutputCapture', () => {
  it('keeps short output whole', () => {
    const capture = new OutputCapture(100);
    capture.push(Buffer.from('hello\n', 'utf8'));
    expect(capture.result()).toEqual({ text: 'hello\n', totalBytes: 6, truncated: false });
  });

  it('keeps head and tail of a flood, marks the omission and counts every byte', () => {
    const capture = new OutputCapture(10);
    for (let i = 0; i < 100; i += 1) capture.push(Buffer.from(String(i % 10)));
    const result = capture.result();
    expect(result.totalBytes).toBe(100);
    expect(result.truncated).toBe(true);
    expect(result.text).toBe('01234\n[… 90 bytes omitted …]\n56789');
  });

  it('handles chunks larger than the whole budget', () => {
    const capture = new OutputCapture(4);
    capture.push(Buffer.from('abcdefghij'));
    capture.push(Buffer.from('klm'));
    expect(capture.result().text).toBe('ab\n[… 9 bytes omitted …]\nlm');
  });
});
