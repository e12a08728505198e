import avvio, { type Avvio } from 'avvio';

type Log = (msg: string, extra?: object) => void;

export interface PartHooks<T> {
  /** Run by start(), in the order parts were added: once the daemon listens. */
  start?: (part: T) => unknown;
  /**
   * Run when the stop begins, before any part closes, in the order parts were added (Fastify's
   * preClose): refuse what would start new work, end work that leans on parts built later.
   */
  stopping?: (part: T) => unknown;
  /** Run by close(), in the reverse order: a part closes before every part it was built on. */
  close?: (part: T) => unknown;
}

/**
 * The daemon's long-lived parts, each added as it is built: started in that order, closed in the
 * reverse one, so what a part was built on is still there while it closes (`daemon stop`'s order
 * is the reverse of the start's by construction). avvio (Fastify's own
 * boot and close queue) keeps the close order and carries on past a part that fails to close.
 */
export class Lifecycle {
  private readonly boot: Avvio<object>;
  private readonly starts: { name: string; run: () => unknown }[] = [];
  private readonly stoppings: { name: string; run: () => unknown }[] = [];
  private closed?: Promise<void>;

  constructor(private readonly log: Log) {
    this.boot = avvio<object>({}, { autostart: false });
  }

  add<T>(name: string, part: T, hooks: PartHooks<T> = {}): T {
    if (hooks.start) this.starts.push({ name, run: () => hooks.start!(part) });
    if (hooks.stopping) this.stoppings.push({ name, run: () => hooks.stopping!(part) });
    const close = hooks.close;
    if (close) this.boot.onClose(() => this.step(name, () => close(part)));
    return part;
  }

  async start(): Promise<void> {
    for (const s of this.starts) await s.run();
  }

  /** Stops every part, then closes them, the last added first; once, however often it is called. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      for (const s of this.stoppings) await this.step(s.name, s.run);
      await this.boot.ready();
      // Each step catches its own failure, so the queue always runs to its end.
      await new Promise<void>((resolve) => this.boot.close(() => resolve()));
    })();
    return this.closed;
  }

  /** A step that holds the stop up says so in the log. */
  private async step(name: string, done: () => unknown): Promise<void> {
    const started = Date.now();
    const slow = setInterval(() => this.log('daemon stop is waiting', { step: name, waited_ms: Date.now() - started }), 10_000);
    slow.unref();
    try {
      await done();
    } catch (err) {
      this.log('a part failed to close', { step: name, error: String(err) });
    } finally {
      clearInterval(slow);
      const ms = Date.now() - started;
      // What made a stop slow is in the log afterwards.
      if (ms >= 1000) this.log('daemon stop step took long', { step: name, ms });
    }
  }
}
