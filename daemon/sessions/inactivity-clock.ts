import type { LiveSession } from './live-session.js';

/** The spec's inactivity check period. */
export const INACTIVITY_CHECK_MS = 5000;

export interface InactivityClockDeps {
  /** The running sessions (a stopping one is not). */
  running: () => Iterable<LiveSession>;
  liveSession: (id: string) => LiveSession | undefined;
  /** Ends a session whose countdown ran out. */
  end: (id: string, reason: 'timeout') => Promise<void>;
  /** Something a dashboard shows changed (a countdown started again). */
  changed: () => void;
  log: (msg: string, extra?: object) => void;
}

/**
 * Each running session's inactivity countdown (its timeout_seconds without a client), checked
 * every few seconds; a pool's idle browser has its countdown suspended until it is acquired.
 */
export class InactivityClock {
  /** Where a session's countdown starts again (a pool browser's acquisition); +Infinity: suspended. */
  private readonly countdownFrom = new Map<string, number>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly deps: InactivityClockDeps) {}

  start(): void {
    this.timer = setInterval(() => void this.endIdle(), INACTIVITY_CHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * When a running session ends by the inactivity timeout unless a client connects (ms epoch), or
   * null while one is connected or its countdown is suspended (a pool's idle browser).
   */
  timeoutAt(id: string): number | null {
    const session = this.deps.liveSession(id);
    const idleSince = session?.idleSince;
    if (!session || idleSince === null || idleSince === undefined) return null;
    const from = Math.max(idleSince, this.countdownFrom.get(id) ?? Number.NEGATIVE_INFINITY);
    return from === Number.POSITIVE_INFINITY ? null : from + session.record.timeout_seconds * 1000;
  }

  /**
   * Keeps a session from timing out (a pool's idle browser) until the returned function is
   * called; its inactivity countdown then starts afresh, whatever its clients did before.
   */
  suspend(id: string): () => void {
    this.countdownFrom.set(id, Number.POSITIVE_INFINITY);
    return () => {
      if (this.deps.liveSession(id)) this.countdownFrom.set(id, Date.now());
      this.deps.changed();
    };
  }

  /** The session ended: its countdown goes with it. */
  forget(id: string): void {
    this.countdownFrom.delete(id);
  }

  private async endIdle(): Promise<void> {
    const now = Date.now();
    for (const session of [...this.deps.running()]) {
      const at = this.timeoutAt(session.id);
      if (!session.isStopping && at !== null && now >= at) {
        await this.deps.end(session.id, 'timeout').catch((err) => this.deps.log('timeout end failed', { error: String(err) }));
      }
    }
  }
}
