import { TombstoneIndex } from '../../../functions/mcp/sandbox/tombstone-index';

/** A deterministic stream of 52-bit keys. */
function* keys(seed: number): Generator<number> {
  let x = seed;
  for (;;) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    yield x * 2 ** 21 + (x % 2 ** 21);
  }
}

describe('TombstoneIndex', () => {
  it('finds every key added, in any order and across merges, and no other', () => {
    const index = new TombstoneIndex();
    const added: number[] = [];
    const source = keys(7);
    for (let i = 0; i < 5_000; i += 1) {
      const key = source.next().value as number;
      added.push(key);
      index.add(key, 1_000 + i);
      // Looked up while it grows: in the sorted run and in the tail alike.
      if (i % 97 === 0) expect(added.every((k) => index.holds(k, 0))).toBe(true);
    }
    expect(index.count).toBe(5_000);
    expect(added.every((k) => index.holds(k, 0))).toBe(true);
    const present = new Set(added);
    const other = keys(11);
    for (let i = 0; i < 5_000; i += 1) {
      const key = other.next().value as number;
      if (!present.has(key)) expect(index.holds(key, 0)).toBe(false);
    }
  });

  it('holds a key while any of its records does', () => {
    const index = new TombstoneIndex();
    for (let i = 0; i < 200; i += 1) index.add(i, 10);
    index.add(42, 50);
    index.add(42, 20);
    for (let i = 200; i < 400; i += 1) index.add(i, 10);
    expect(index.holds(42, 30)).toBe(true);
    expect(index.holds(42, 50)).toBe(false);
    expect(index.holds(41, 9)).toBe(true);
    expect(index.holds(41, 10)).toBe(false);
  });
});
