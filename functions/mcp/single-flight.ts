/**
 * A lazy start shared by concurrent callers, and restartable: the first caller starts it, the others wait for
 * that same start; a start that fails is forgotten, so the next caller starts again; a value the caller finds no
 * longer usable (a process that exited) is replaced once, by the first caller to see it, and the others join that
 * replacement. A leaf: anything may import it.
 */

/** Holds at most one start of a `T` at a time, and its value once it resolved. */
export class SingleFlight<T> {
  /** The start in flight or resolved, until it failed or was taken. */
  private promise: Promise<T> | undefined;
  /** Its value, once it resolved. */
  private settled: { readonly value: T } | undefined;

  /** The value of the start that resolved (and was not taken or replaced since), without waiting. */
  get value(): T | undefined {
    return this.settled?.value;
  }

  /** True while a start is in flight. */
  get starting(): boolean {
    return this.promise !== undefined && this.settled === undefined;
  }

  /** The start in flight or resolved; never starts one. */
  current(): Promise<T> | undefined {
    return this.promise;
  }

  /**
   * The value: the current start's while `usable` accepts it, else a fresh `start()`. A `start` that throws
   * rejects this call and leaves nothing behind.
   */
  get(start: () => Promise<T>, usable: (value: T) => boolean = () => true): Promise<T> {
    const current = this.promise;
    if (current === undefined) return this.begin(start);
    return current.then((value) => {
      if (usable(value)) return value;
      // The first caller to find it unusable starts the next one; the others join that one.
      return this.promise === current ? this.begin(start) : this.get(start, usable);
    });
  }

  /** Forgets the current start (in flight or resolved) and hands it over, for the caller to stop its value. */
  take(): Promise<T> | undefined {
    const taken = this.promise;
    this.promise = undefined;
    this.settled = undefined;
    return taken;
  }

  private begin(start: () => Promise<T>): Promise<T> {
    let started: Promise<T>;
    try {
      started = start();
    } catch (err: unknown) {
      return Promise.reject(err);
    }
    this.promise = started;
    this.settled = undefined;
    started.then(
      (value) => {
        if (this.promise === started) this.settled = { value };
      },
      () => {
        if (this.promise === started) this.promise = undefined;
      },
    );
    return started;
  }
}
