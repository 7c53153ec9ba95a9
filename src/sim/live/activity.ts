/**
 * Counts work in progress (deliveries waiting out a delay or retry, runs, zombies), so the runtime can
 * tell when everything it started has settled.
 */
export class Activity {
  #count = 0;
  #waiters: (() => void)[] = [];

  get count(): number {
    return this.#count;
  }

  /** Starts one piece of work; call the returned function exactly once when it ends. */
  begin(): () => void {
    this.#count++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#count--;
      if (this.#count === 0) {
        const waiters = this.#waiters;
        this.#waiters = [];
        for (const w of waiters) w();
      }
    };
  }

  /** Tracks a promise until it settles. */
  track<T>(promise: Promise<T>): Promise<T> {
    const end = this.begin();
    return promise.finally(end);
  }

  /** Resolves when no work is in progress (at once if none is). */
  idle(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}
