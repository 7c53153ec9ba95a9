/**
 * Sleeps the runtime can cut short: on stop every pending sleep resolves at once and its timer is
 * cleared, so no timer outlives the runtime.
 */
export class Sleeper {
  readonly #pending = new Map<NodeJS.Timeout, () => void>();
  #stopped = false;

  sleep(ms: number): Promise<void> {
    if (this.#stopped || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(timer);
        resolve();
      }, ms);
      this.#pending.set(timer, resolve);
    });
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  stop(): void {
    this.#stopped = true;
    for (const [timer, resolve] of this.#pending) {
      clearTimeout(timer);
      resolve();
    }
    this.#pending.clear();
  }
}
