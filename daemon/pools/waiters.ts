interface Waiter<T> {
  resolve: (value: T | null) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * Acquirers waiting for a browser, first come first served. An item is handed to exactly one
 * waiter, synchronously, so no browser can reach two of them.
 */
export class WaitQueue<T> {
  private readonly waiters: Waiter<T>[] = [];

  get length(): number {
    return this.waiters.length;
  }

  /** Resolves with the item handed over, or null once timeoutMs pass (or `signal` aborts) without one. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<T | null> {
    return new Promise((resolve, reject) => {
      const giveUp = () => {
        clearTimeout(waiter.timer);
        this.remove(waiter);
        resolve(null);
      };
      const waiter: Waiter<T> = {
        resolve: (value) => {
          signal?.removeEventListener('abort', giveUp);
          resolve(value);
        },
        reject: (err) => {
          signal?.removeEventListener('abort', giveUp);
          reject(err);
        },
        timer: setTimeout(giveUp, timeoutMs),
      };
      if (signal?.aborted) return giveUp();
      signal?.addEventListener('abort', giveUp, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Gives the item to the longest-waiting acquirer; false when nobody waits. */
  serve(item: T): boolean {
    const waiter = this.waiters.shift();
    if (!waiter) return false;
    clearTimeout(waiter.timer);
    waiter.resolve(item);
    return true;
  }

  /** Answers every waiter at once: with null (nothing came), or with an error. */
  cancelAll(err?: Error): void {
    for (const waiter of this.waiters.splice(0)) {
      clearTimeout(waiter.timer);
      if (err) waiter.reject(err);
      else waiter.resolve(null);
    }
  }

  private remove(waiter: Waiter<T>): void {
    const i = this.waiters.indexOf(waiter);
    if (i >= 0) this.waiters.splice(i, 1);
  }
}
