/** The bounded line reader (functions/mcp/sandbox/bounded-lines.ts): lines whole, long ones skipped unkept. */
import { BoundedLineReader } from '../../../functions/mcp/sandbox/bounded-lines';

function reader(limitBytes: number) {
  const seen: Array<string | number> = [];
  const lines = new BoundedLineReader({
    limitBytes: () => limitBytes,
    onLine: (line) => void seen.push(line),
    onDropped: (bytes) => void seen.push(bytes),
  });
  return { lines, seen };
}

it(
  'splits lines across chunks, keeps a character split between chunks whole, ' + 'and ends a last unterminated line',
  () => {
    const { lines, seen } = reader(64);
    const text = Buffer.from('one\ntw✓o\n\nlast', 'utf8');
    // One byte at a time: the ✓ (3 bytes) arrives in three chunks.
    for (const byte of text) lines.feed(Uint8Array.of(byte));
    expect(seen).toEqual(['one', 'tw✓o', '']);
    lines.end();
    expect(seen).toEqual(['one', 'tw✓o', '', 'last']);
  },
);

it('skips a line over the limit to its end, reports its length, and reads the next one', () => {
  const { lines, seen } = reader(8);
  lines.feed(Buffer.from('short\n12345'));
  lines.feed(Buffer.from('6789'));
  lines.feed(Buffer.from('0123\nafter\n'));
  expect(seen).toEqual(['short', 13, 'after']);
});

it('holds nothing of a skipped line however long it runs', () => {
  const { lines, seen } = reader(1024);
  const chunk = Buffer.alloc(1 << 20, 'x');
  for (let i = 0; i < 64; i += 1) lines.feed(chunk);
  expect((lines as unknown as { parts: Buffer[] }).parts).toEqual([]);
  lines.feed(Buffer.from('\n'));
  expect(seen).toEqual([64 << 20]);
  lines.end();
  expect(seen).toEqual([64 << 20]);
});

it('reports a skipped last line at the end', () => {
  const { lines, seen } = reader(2);
  lines.feed(Buffer.from('abcdef'));
  lines.end();
  expect(seen).toEqual([6]);
});
