import type { SerialQueue } from '../serial-queue.js';

/**
 * Lines for an append-only file, written in batches: lines added while a write waits or runs go
 * out together in the next one, so a burst (the audit log under load) costs one write per batch,
 * never a queued write per line. `write` gets each batch in order, on the file's queue.
 */
export class LineBatches {
  private pending: string[] = [];
  private batch?: Promise<void>;

  constructor(
    private readonly queue: SerialQueue,
    private readonly write: (lines: string[]) => Promise<void>,
  ) {}

  /** Adds a line (ending in a newline); resolves once the batch holding it is written. */
  add(line: string): Promise<void> {
    this.pending.push(line);
    this.batch ??= this.queue.run(() => {
      const lines = this.pending.splice(0);
      this.batch = undefined;
      return this.write(lines);
    });
    return this.batch;
  }

  /** Resolves once what was added so far is written (or failed). */
  async drained(): Promise<void> {
    await this.batch?.catch(() => {});
  }
}
