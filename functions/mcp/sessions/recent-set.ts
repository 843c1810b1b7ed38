/** A set that remembers at most `capacity` entries, forgetting the oldest first. */
export class RecentSet {
  private readonly entries = new Set<string>();

  constructor(private readonly capacity: number) {}

  add(value: string): void {
    this.entries.delete(value);
    this.entries.add(value);
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.values().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
  }

  has(value: string): boolean {
    return this.entries.has(value);
  }

  /** Forgets `value`; true when it was remembered. */
  delete(value: string): boolean {
    return this.entries.delete(value);
  }
}
