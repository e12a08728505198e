import type { EventStream, StreamEvent } from './sse.js';

export interface EventLogLimits {
  /** Events kept (default 5000). */
  maxEvents?: number;
  /** Characters of log messages kept (default 4 MiB). */
  maxChars?: number;
}

/**
 * The events of one deployment, in order, for followers that come and go: each follower gets the
 * history, then the live events, and its stream ends when the deployment reaches a terminal state.
 */
export class EventLog {
  private readonly events: StreamEvent[] = [];
  private readonly followers = new Set<EventStream>();
  private readonly maxEvents: number;
  private readonly maxChars: number;
  private chars = 0;
  private done = false;

  /** The limits bound what a runaway build or action keeps in the daemon; the oldest log lines go first. */
  constructor(limits: EventLogLimits = {}) {
    this.maxEvents = limits.maxEvents ?? 5000;
    this.maxChars = limits.maxChars ?? 4 * 1024 ** 2;
  }

  push(event: StreamEvent): void {
    this.events.push(event);
    this.chars += logChars(event);
    while (this.events.length > this.maxEvents || (this.chars > this.maxChars && this.events.length > 1)) {
      const oldestLog = this.events.findIndex((e) => e.event === 'log');
      const [dropped] = this.events.splice(Math.max(oldestLog, 0), 1);
      this.chars -= logChars(dropped!);
    }
    for (const stream of this.followers) stream.send(event);
  }

  /**
   * A terminal state was pushed: every follower's stream ends, and later ones end after the
   * replay. Events pushed after (a running deployment stopped) are kept for replays.
   */
  finish(): void {
    this.done = true;
    for (const stream of this.followers) stream.end();
    this.followers.clear();
  }

  follow(stream: EventStream, since?: number): void {
    for (const e of this.events) {
      if (since === undefined || e.event !== 'log' || Date.parse(String(e.timestamp)) >= since) stream.send(e);
    }
    if (this.done) return stream.end();
    this.followers.add(stream);
    stream.onClose(() => this.followers.delete(stream));
  }
}

const logChars = (e: StreamEvent): number => (e.event === 'log' ? String(e.message ?? '').length : 0);
