/**
 * The in-memory index of one tombstone file (sandbox/tombstones.ts): each record as a 52-bit key (the start of
 * its name's hash) and its until time, in two typed arrays, 16 bytes a record (a `Map` of string keys takes
 * about 90). Keys come in the order they were appended; a sorted run is searched by bisection and the short
 * unsorted tail after it scanned, until the tail is large enough to be merged in (linear, so appends cost
 * O(1) amortized).
 *
 * 52 bits are exact in a double. A lookup that matches another session's key refuses a live session: with a
 * million tombstones that happens once in about 4·10⁹ lookups.
 */

/** The tail is merged into the sorted run once it is longer than this, or than a quarter of the run. */
const MIN_MERGE_TAIL = 64;

export class TombstoneIndex {
  private keys = new Float64Array(16);
  private untils = new Float64Array(16);
  private size = 0;
  /** `keys[0, sorted)` is in ascending order. */
  private sorted = 0;

  /** Records held. */
  get count(): number {
    return this.size;
  }

  /** Adds a record: the session keyed `key` is refused until `untilMs`. */
  add(key: number, untilMs: number): void {
    if (this.size === this.keys.length) this.grow();
    this.keys[this.size] = key;
    this.untils[this.size] = untilMs;
    this.size += 1;
    if (this.size - this.sorted > Math.max(MIN_MERGE_TAIL, this.sorted >> 2)) this.merge();
  }

  /** True when a record of `key` holds at `nowMs`. */
  holds(key: number, nowMs: number): boolean {
    let low = 0;
    let high = this.sorted;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.keys[mid] ?? 0) < key) low = mid + 1;
      else high = mid;
    }
    for (let i = low; i < this.sorted && this.keys[i] === key; i += 1) if ((this.untils[i] ?? 0) > nowMs) return true;
    for (let i = this.sorted; i < this.size; i += 1)
      if (this.keys[i] === key && (this.untils[i] ?? 0) > nowMs) return true;
    return false;
  }

  private grow(): void {
    const keys = new Float64Array(this.keys.length * 2);
    const untils = new Float64Array(this.keys.length * 2);
    keys.set(this.keys);
    untils.set(this.untils);
    this.keys = keys;
    this.untils = untils;
  }

  /** Sorts the tail and merges it with the sorted run. */
  private merge(): void {
    const tail: number[] = [];
    for (let i = this.sorted; i < this.size; i += 1) tail.push(i);
    tail.sort((a, b) => (this.keys[a] ?? 0) - (this.keys[b] ?? 0));
    const keys = new Float64Array(this.keys.length);
    const untils = new Float64Array(this.keys.length);
    let run = 0;
    let next = 0;
    for (let out = 0; out < this.size; out += 1) {
      const fromTail = tail[next];
      const takeRun =
        fromTail === undefined || (run < this.sorted && (this.keys[run] ?? 0) <= (this.keys[fromTail] ?? 0));
      const at = takeRun ? run : (fromTail ?? 0);
      keys[out] = this.keys[at] ?? 0;
      untils[out] = this.untils[at] ?? 0;
      if (takeRun) run += 1;
      else next += 1;
    }
    this.keys = keys;
    this.untils = untils;
    this.sorted = this.size;
  }
}
