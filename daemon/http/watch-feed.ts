import type { FastifyReply } from 'fastify';
import type { Readable } from 'node:stream';
import type { WatchInvocation, WatchSnapshot } from '../../src/api/watch.js';
import { ServiceUnavailableError } from '../../src/errors.js';
import { EventStream } from '../lib/sse.js';
import type { PoolManager } from '../pools/manager.js';
import type { SessionManager } from '../sessions/manager.js';
import type { OrgRecord } from '../lib/owned-records.js';

export interface WatchSources {
  sessions: SessionManager;
  pools: PoolManager;
  /** The org's running invocations; none until the invocations module provides them. */
  invocations?: (org: OrgRecord) => WatchInvocation[];
}

export interface WatchTiming {
  /** A burst of changes (a pool filling, a batch of deletes) becomes one snapshot. */
  debounceMs: number;
  /** Ticks carry the server's time for countdowns; each also catches a change nobody announced. */
  tickMs: number;
}

interface Subscriber {
  org: OrgRecord;
  stream: EventStream;
  /** The last snapshot sent, without its time, so an unchanged one is not sent again. */
  last: string;
}

/**
 * The daemon's live feed (GET /watch): each subscriber gets a snapshot of its org's running
 * sessions, pools and invocations when it connects and after every change, and a tick each second.
 */
export class WatchFeed {
  private readonly subscribers = new Set<Subscriber>();
  private debounce?: NodeJS.Timeout;
  private ticker?: NodeJS.Timeout;
  private closed = false;
  private readonly timing: WatchTiming;

  constructor(
    private readonly sources: WatchSources,
    timing: Partial<WatchTiming> = {},
  ) {
    this.timing = { debounceMs: 100, tickMs: 1000, ...timing };
    sources.sessions.onChange(() => this.changed());
    sources.pools.onChange(() => this.changed());
  }

  /** Something a dashboard shows changed (the invocations module calls this too). */
  changed(): void {
    if (this.debounce || this.subscribers.size === 0) return;
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.publish();
    }, this.timing.debounceMs);
  }

  /** A new subscriber's event stream, its first snapshot already queued. */
  open(org: OrgRecord, reply: FastifyReply): Readable {
    if (this.closed) throw new ServiceUnavailableError('the daemon is stopping');
    const sub: Subscriber = { org, stream: new EventStream(), last: '' };
    this.subscribers.add(sub);
    sub.stream.onClose(() => {
      this.subscribers.delete(sub);
      if (this.subscribers.size === 0) this.stopTimers();
    });
    if (!this.ticker) {
      this.ticker = setInterval(() => this.tick(), this.timing.tickMs);
      this.ticker.unref();
    }
    const body = sub.stream.open(reply);
    this.publish([sub]);
    return body;
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Daemon stop: every stream ends, so the server can close. */
  close(): void {
    this.closed = true;
    this.stopTimers();
    for (const sub of [...this.subscribers]) sub.stream.end();
  }

  private tick(): void {
    const tick = { event: 'tick', server_time: new Date().toISOString() };
    for (const sub of this.subscribers) sub.stream.send(tick);
    this.publish();
  }

  /** Sends each subscriber its org's snapshot when it differs from the last one it got. */
  private publish(to: Iterable<Subscriber> = this.subscribers): void {
    const byOrg = new Map<string, { snapshot: WatchSnapshot; key: string }>();
    for (const sub of to) {
      let built = byOrg.get(sub.org.id);
      if (!built) {
        const snapshot = this.snapshot(sub.org);
        built = { snapshot, key: JSON.stringify({ ...snapshot, server_time: undefined }) };
        byOrg.set(sub.org.id, built);
      }
      if (built.key === sub.last) continue;
      sub.last = built.key;
      sub.stream.send(built.snapshot);
    }
  }

  /** What the org has running now, as a snapshot event carries it (GET /watch/snapshot too). */
  snapshot(org: OrgRecord): WatchSnapshot {
    return {
      event: 'snapshot',
      server_time: new Date().toISOString(),
      sessions: this.sources.sessions.activity(org).map((a) => ({
        ...a,
        timeout_at: a.timeout_at === null ? null : new Date(a.timeout_at).toISOString(),
      })),
      pools: this.sources.pools.views(org),
      invocations: this.sources.invocations?.(org) ?? [],
    };
  }

  private stopTimers(): void {
    clearTimeout(this.debounce);
    clearInterval(this.ticker);
    this.debounce = undefined;
    this.ticker = undefined;
  }
}
