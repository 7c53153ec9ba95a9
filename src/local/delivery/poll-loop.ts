import type { Sleeper } from "../../sim/live/sleeper.js";

/**
 * An event source's poll loop: started once, it goes on while `running` (not stopped by its source, nor the runtime's
 * sleeper); `stop` ends it and waits for its last round. Batches it started finish on their own.
 */
export class PollLoop {
  readonly #sleeper: Sleeper;
  #running = false;
  #done: Promise<void> | undefined;

  constructor(sleeper: Sleeper) {
    this.#sleeper = sleeper;
  }

  /** What the loop checks before each round. */
  get running(): boolean {
    return this.#running && !this.#sleeper.stopped;
  }

  /** Runs `loop` (once; a second call does nothing). */
  start(loop: () => Promise<void>): void {
    if (this.#running) return;
    this.#running = true;
    this.#done = loop();
  }

  /** Turns `running` false now; resolves once the loop has returned. */
  async stop(): Promise<void> {
    this.#running = false;
    await this.#done;
  }
}
