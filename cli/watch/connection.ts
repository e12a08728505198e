import type { WatchSnapshot, WatchTick } from '../../src/api/watch.js';
import { sseEvents } from '../sse.js';

export type FeedEvent = WatchSnapshot | WatchTick;

export interface FeedState {
  status: 'connecting' | 'live' | 'reconnecting';
  /** Why the last connection failed or ended. */
  error?: string;
  /** The server of the current connection (a restarted local daemon may have a new port). */
  baseUrl?: string;
}

export interface Target {
  baseUrl: string;
  authHeaders(): Record<string, string>;
}

/** What the dashboard listens to: the feed's events and its connection state. */
export interface FeedSource {
  subscribe(listener: { event(e: FeedEvent): void; state(s: FeedState): void }): () => void;
}

/** No event for this long (ticks come every second) means a dead connection: reconnect. */
const SILENCE_MS = 5000;
const backoffMs = (attempt: number) => Math.min(250 * 2 ** attempt, 2000);

/**
 * The daemon's /watch feed, reconnecting for as long as it runs: after the daemon restarts (on
 * whatever port it then has: `resolve` is asked again each time), a network blip, or silence.
 */
export class WatchConnection implements FeedSource {
  private readonly listeners = new Set<{ event(e: FeedEvent): void; state(s: FeedState): void }>();
  private readonly stopped = new AbortController();
  private state: FeedState = { status: 'connecting' };
  private running?: Promise<void>;

  constructor(private readonly resolve: () => Promise<Target> | Target) {}

  subscribe(listener: { event(e: FeedEvent): void; state(s: FeedState): void }): () => void {
    this.listeners.add(listener);
    listener.state(this.state);
    this.running ??= this.run();
    return () => this.listeners.delete(listener);
  }

  /** Ends the connection for good; resolves once nothing of it is left. */
  async stop(): Promise<void> {
    this.stopped.abort();
    await this.running;
  }

  private setState(state: FeedState): void {
    this.state = state;
    for (const l of this.listeners) l.state(state);
  }

  private async run(): Promise<void> {
    for (let attempt = 0; !this.stopped.signal.aborted; ) {
      const connection = new AbortController();
      const abort = () => connection.abort();
      this.stopped.signal.addEventListener('abort', abort, { once: true });
      let silence: NodeJS.Timeout | undefined;
      const watchdog = () => {
        clearTimeout(silence);
        silence = setTimeout(() => connection.abort(new Error(`no event for ${SILENCE_MS / 1000} s`)), SILENCE_MS);
      };
      let error = 'the feed ended';
      let target: Target | undefined;
      try {
        target = await this.resolve();
        watchdog();
        for await (const event of sseEvents<FeedEvent>(`${target.baseUrl}/watch`, target.authHeaders(), connection.signal)) {
          watchdog();
          if (event.event !== 'snapshot' && event.event !== 'tick') continue;
          if (this.state.status !== 'live') this.setState({ status: 'live', baseUrl: target.baseUrl });
          attempt = 0;
          for (const l of this.listeners) l.event(event);
        }
        if (connection.signal.aborted && connection.signal.reason instanceof Error) error = connection.signal.reason.message;
      } catch (err) {
        const e = err as Error & { cause?: Error };
        error = connection.signal.reason instanceof Error ? connection.signal.reason.message : (e.cause?.message ?? e.message);
      } finally {
        clearTimeout(silence);
        this.stopped.signal.removeEventListener('abort', abort);
      }
      if (this.stopped.signal.aborted) return;
      this.setState({ status: 'reconnecting', error, baseUrl: target?.baseUrl ?? this.state.baseUrl });
      await new Promise<void>((r) => {
        const t = setTimeout(r, backoffMs(attempt++));
        this.stopped.signal.addEventListener('abort', () => (clearTimeout(t), r()), { once: true });
      });
    }
  }
}
