import { standbyKey, type StandbyEntry } from '../../src/standby.js';
import type { Viewport } from '../../src/viewport.js';
import type { LiveSession } from '../sessions/live-session.js';
import { signal } from '../browser/procs.js';
import { Refill } from './refill.js';

export interface StandbyDeps {
  entries: StandbyEntry[];
  /** Launches and warms one browser of the kind; it belongs to no one until take() hands it over. */
  launch(kind: { headless: boolean; viewport: Viewport }): Promise<LiveSession>;
  /** True while creates are launching browsers of their own: a refill then waits, so it never competes with them. */
  busy(): boolean;
  log: (msg: string, extra?: object) => void;
}

/** How long a refill waits after a hand-over: the new owner connects and loads its first page meanwhile. */
const REFILL_DELAY_MS = 200;

/**
 * Warm standby: browsers of the kinds people create most, launched and warmed ahead of demand,
 * so a matching `POST /browsers` takes one in milliseconds. Refilled in the background by the
 * same ready-browsers mechanism as pools, one launch at a time, after the create that took one
 * has answered. Every standby browser is a LiveSession with an explicit stop; close() stops them.
 */
export class Standby {
  /** Ready browsers by kind (standbyKey), oldest first. */
  private readonly ready = new Map<string, LiveSession[]>();
  private readonly refill: Refill<{ key: string; session: LiveSession }>;
  private closed = false;
  private delay?: NodeJS.Timeout;
  /** Standby browsers being stopped outside close() (their Chromium died): close() waits for them too. */
  private readonly retiring = new Set<Promise<unknown>>();

  constructor(private readonly deps: StandbyDeps) {
    for (const e of deps.entries) this.ready.set(standbyKey(e.headless, e.viewport), []);
    this.refill = new Refill({
      short: () => !this.closed && this.shortest() !== undefined,
      mayLaunch: () => !deps.busy(),
      launch: async () => {
        const entry = this.shortest()!;
        const key = standbyKey(entry.headless, entry.viewport);
        return { key, session: await deps.launch({ headless: entry.headless, viewport: entry.viewport }) };
      },
      place: async ({ key, session }) => {
        if (this.closed) return void (await session.stop());
        this.ready.get(key)!.push(session);
        deps.log('standby browser ready', { kind: key, session: session.id });
        // One that dies while waiting is dropped and replaced.
        void session.chromium.exited.then(() => {
          if (this.drop(key, session)) this.retire(session);
        });
      },
      failed: (err, failures) => deps.log('standby launch failed', { failures, error: String((err as Error)?.message ?? err) }),
    });
  }

  /** Starts filling (after the daemon listens). */
  start(): void {
    this.refill.kick();
  }

  /** How many are ready of each kind: GET /health shows it (the benchmark waits on it). */
  counts(): Record<string, { ready: number; wanted: number }> {
    return Object.fromEntries(
      this.deps.entries.map((e) => {
        const key = standbyKey(e.headless, e.viewport);
        return [key, { ready: this.ready.get(key)?.length ?? 0, wanted: e.count }];
      }),
    );
  }

  /** A ready browser of the kind, now the caller's, or undefined (the caller launches one cold). */
  take(headless: boolean, viewport: Viewport): LiveSession | undefined {
    const list = this.ready.get(standbyKey(headless, viewport));
    let session: LiveSession | undefined;
    while (list?.length && !session) {
      const next = list.shift()!;
      // One whose Chromium died a moment ago (its exit not yet seen) is not handed out; its own
      // exit watcher is no longer looking once it left the list, so it is stopped here.
      if (!next.isStopping && signal(next.chromium.pid, 0)) session = next;
      else this.retire(next);
    }
    if (session) this.refillSoon();
    return session;
  }

  /** Stops every standby browser, and waits for the launch under way. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.delay);
    this.refill.stop();
    await this.refill.inflight;
    const all = [...this.ready.values()].flat();
    this.ready.clear();
    await Promise.all([...all.map((s) => s.stop()), ...this.retiring]);
  }

  /** Stops a standby browser that can no longer be handed out, and has it replaced. */
  private retire(session: LiveSession): void {
    const stopped = session.stop().finally(() => {
      this.retiring.delete(stopped);
      this.refill.kick();
    });
    this.retiring.add(stopped);
  }

  private refillSoon(): void {
    clearTimeout(this.delay);
    this.delay = setTimeout(() => this.refill.kick(), REFILL_DELAY_MS);
    this.delay.unref();
  }

  /** The kind furthest below its count, if any. */
  private shortest(): StandbyEntry | undefined {
    let best: StandbyEntry | undefined;
    let bestGap = 0;
    for (const e of this.deps.entries) {
      const gap = e.count - (this.ready.get(standbyKey(e.headless, e.viewport))?.length ?? 0);
      if (gap > bestGap) [best, bestGap] = [e, gap];
    }
    return best;
  }

  private drop(key: string, session: LiveSession): boolean {
    const list = this.ready.get(key);
    const i = list?.indexOf(session) ?? -1;
    if (i >= 0) list!.splice(i, 1);
    return i >= 0;
  }
}
