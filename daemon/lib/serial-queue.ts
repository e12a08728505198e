/** Runs pieces of work one at a time, in order; a failed piece does not stop the next. */
export class SerialQueue {
  private chain: Promise<unknown> = Promise.resolve();

  run<R>(work: () => Promise<R>): Promise<R> {
    const run = this.chain.catch(() => {}).then(work);
    this.chain = run;
    return run;
  }
}

/**
 * One line of work per key (a session's input actions, a credential's updates): work on one key
 * runs one piece at a time, in order, and keys never wait on each other. A failed piece does not
 * stop the next, and the last in line leaves no entry behind.
 */
export class KeyedSerialQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<R>(key: string, work: () => Promise<R>): Promise<R> {
    const run = (this.tails.get(key) ?? Promise.resolve()).catch(() => {}).then(work);
    this.tails.set(key, run);
    try {
      return await run;
    } finally {
      if (this.tails.get(key) === run) this.tails.delete(key);
    }
  }

  /** Keys with work queued or running (for tests: nothing is left behind). */
  get size(): number {
    return this.tails.size;
  }
}
