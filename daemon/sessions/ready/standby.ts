import { READY_BROWSER_MB, standbyKey, type StandbyEntry, type StandbySet } from '../../../src/standby.js';
import type { Viewport } from '../../../src/viewport.js';
import type { LiveSession } from '../live-session.js';
import { LaunchClaim } from '../../lib/launch-claim.js';
import { Refill } from './refill.js';

export interface StandbyDeps {
  set: StandbySet;
  /** How long a learned kind is kept with no create of it (src/standby.ts forgetAfterMs). */
  forgetMs: number;
  /** Browsers kept beyond the set's counts while creates come in a burst (src/standby.ts burstBudgetMb, burstHoldMs). */
  burst: { budgetMb: number; holdMs: number };
  /** Launches and warms one browser of the kind; it belongs to no one until take() hands it over (or a create claims it). */
  launch(kind: { headless: boolean; viewport: Viewport }, claim: LaunchClaim): Promise<LiveSession>;
  /** True while creates are launching browsers of their own: a refill then waits, so it never competes with them. */
  busy(): boolean;
  log: (msg: string, extra?: object) => void;
}

/** One kind's line in GET /health. */
export interface StandbyCount {
  ready: number;
  wanted: number;
  launching?: true;
  learned?: true;
  learned_until?: string;
  burst?: number;
  burst_until?: string;
}

/** A standby launch under way, and (once a create claimed it) where its browser goes. */
interface InFlight {
  claim: LaunchClaim;
  claimer?: (session: LiveSession | undefined) => void;
}

/** How long a refill waits after a hand-over: the new owner connects and loads its first page meanwhile. */
const REFILL_DELAY_MS = 200;
/** A kind outside the set is learned once creates ask for it this many times within LEARN_WINDOW_MS. */
const LEARN_AFTER = 2;
const LEARN_WINDOW_MS = 10 * 60_000;
/**
 * A kind's demand: its creates within this window, about the time one refill takes on a busy
 * machine. Creates beyond the kind's count and one more (a refill covers one) are kept ready
 * extra, within the burst budget.
 */
const DEMAND_WINDOW_MS = 10_000;

/**
 * Warm standby: browsers of the kinds people create most, launched and warmed ahead of demand,
 * so a matching `POST /browsers` takes one in milliseconds. Refilled in the background by the
 * same ready-browsers mechanism as pools, one launch at a time, after the create that took one
 * has answered. Every standby browser is a LiveSession with an explicit stop; close() stops them.
 *
 * Besides the kinds it is set to keep, it learns (up to `set.learn` kinds): `rbrowse create
 * --viewport 1024x768` run again and again should not launch cold every time. A kind that
 * creates asked for twice within ten minutes gets one browser kept ready, and is forgotten (its
 * browser stopped) once no create has asked for it for `forgetMs`.
 */
export class Standby {
  /** Ready browsers by kind (standbyKey), oldest first. */
  private readonly ready = new Map<string, LiveSession[]>();
  private readonly refill: Refill<{ key: string; session: LiveSession; claimer?: InFlight['claimer'] }>;
  private closed = false;
  private delay?: NodeJS.Timeout;
  /** Standby browsers being stopped outside close() (their Chromium died): close() waits for them too. */
  private readonly retiring = new Set<Promise<unknown>>();
  /**
   * Kinds learned from creates: when a create last asked for each, and when its first browser was
   * ready. A kind is forgotten forgetMs after the later of the two, and never while a browser of
   * it launches: one whose first launch takes longer than forgetMs (a loaded machine) would
   * otherwise be forgotten before it ever served a create.
   */
  private readonly learned = new Map<string, { entry: StandbyEntry; asked: number; readyAt?: number }>();
  /** Kinds with a launch under way, each with its claim and, once claimed, where its browser goes. */
  private readonly launching = new Map<string, InFlight>();
  private readonly tally = { creates: 0, from_ready: 0, from_launch: 0 };
  /** When creates asked for kinds outside the set, by kind (within LEARN_WINDOW_MS). */
  private readonly misses = new Map<string, number[]>();
  private forgetTimer?: NodeJS.Timeout;
  /** Recent creates of each kind kept (within DEMAND_WINDOW_MS). */
  private readonly demand = new Map<string, number[]>();
  /**
   * Browsers kept beyond a kind's count for a burst of its creates, when the burst last asked,
   * and when the kind last had all it wants ready: the burst's hold counts from the later one, so
   * extra browsers still launching on a busy machine are not given up before they ever served.
   */
  private readonly extra = new Map<string, { n: number; asked: number; filledAt?: number }>();
  private shrinkTimer?: NodeJS.Timeout;

  constructor(private readonly deps: StandbyDeps) {
    for (const e of deps.set.entries) this.ready.set(standbyKey(e.headless, e.viewport), []);
    this.refill = new Refill({
      short: () => !this.closed && this.shortest() !== undefined,
      mayLaunch: () => !deps.busy(),
      launch: async () => {
        const entry = this.shortest()!;
        const key = standbyKey(entry.headless, entry.viewport);
        const launch: InFlight = { claim: new LaunchClaim() };
        this.launching.set(key, launch);
        try {
          return { key, session: await deps.launch({ headless: entry.headless, viewport: entry.viewport }, launch.claim), claimer: launch.claimer };
        } catch (err) {
          launch.claimer?.(undefined);
          throw err;
        } finally {
          this.launching.delete(key);
          this.armForget();
        }
      },
      place: async ({ key, session, claimer }) => {
        // Claimed while it launched: the waiting create's, unless standby closed meanwhile.
        if (claimer) {
          if (this.closed) {
            claimer(undefined);
            return void (await session.stop());
          }
          deps.log('standby browser taken as it launched', { kind: key, session: session.id });
          return claimer(session);
        }
        // Closed, or a learned kind forgotten while its browser launched.
        const list = this.ready.get(key);
        // A burst that ended while this browser launched leaves the kind with enough.
        if (this.closed || !list || list.length >= this.wantedOf(key)) return void (await session.stop());
        list.push(session);
        const burst = this.extra.get(key);
        if (burst && !this.filling(key)) {
          burst.filledAt = Date.now();
          this.armShrink();
        }
        const learned = this.learned.get(key);
        if (learned && learned.readyAt === undefined) {
          learned.readyAt = Date.now();
          this.armForget();
        }
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

  /**
   * How many are ready of each kind, and why each is kept and until when (GET /health; the
   * benchmark waits on it): a learned kind until no create has asked for it for forgetMs, a
   * burst's extra browsers until its creates have stopped for the burst hold.
   */
  counts(): Record<string, StandbyCount> {
    const at = (ms: number) => new Date(ms).toISOString();
    return Object.fromEntries(
      this.entries().map((e) => {
        const key = standbyKey(e.headless, e.viewport);
        const burst = this.extra.get(key);
        const learned = this.learned.get(key);
        return [
          key,
          {
            ready: this.ready.get(key)?.length ?? 0,
            wanted: e.count,
            ...(this.launching.has(key) ? { launching: true as const } : {}),
            ...(learned ? { learned: true as const } : {}),
            // A kind launching now is not forgotten, nor a burst given up before it filled (forget(), shrink()).
            ...(learned && !this.launching.has(key) ? { learned_until: at(this.since(learned) + this.deps.forgetMs) } : {}),
            ...(burst?.n ? { burst: burst.n } : {}),
            ...(burst?.n && !this.filling(key) ? { burst_until: at(this.burstSince(burst) + this.deps.burst.holdMs) } : {}),
          },
        ];
      }),
    );
  }

  /** Since the daemon started: creates a standby browser could serve, and how many one did. */
  served(): { creates: number; from_ready: number; from_launch: number } {
    return { ...this.tally };
  }

  /** The burst budget and what of it the kinds kept for bursts now take (GET /health). */
  budget(): { burst_budget_mb: number; burst_used_mb: number; burst_hold_seconds: number } {
    return { burst_budget_mb: this.deps.burst.budgetMb, burst_used_mb: this.burstUsedMb(), burst_hold_seconds: this.deps.burst.holdMs / 1000 };
  }

  /**
   * A ready browser of the kind, now the caller's, or undefined (the caller launches one cold).
   * Called for every create a standby browser could serve, so it also learns what is asked for.
   */
  take(headless: boolean, viewport: Viewport): LiveSession | undefined {
    const key = standbyKey(headless, viewport);
    this.tally.creates++;
    const learnedNow = this.asked(key, headless, viewport);
    this.followDemand(key, headless);
    const list = this.ready.get(key);
    let session: LiveSession | undefined;
    while (list?.length && !session) {
      const next = list.shift()!;
      // One whose Chromium died a moment ago (its exit not yet seen) is not handed out; its own
      // exit watcher is no longer looking once it left the list, so it is stopped here.
      if (!next.isStopping && next.chromium.running) session = next;
      else this.retire(next);
    }
    if (session) this.tally.from_ready++;
    if (session || learnedNow) this.refillSoon();
    return session;
  }

  /**
   * When none is ready (take() said so), the browser of the kind that is launching now, claimed:
   * it resolves when its launch ends (undefined if that failed), or undefined at once when no
   * launch of the kind is under way or another create claimed it already.
   */
  takeLaunching(headless: boolean, viewport: Viewport): Promise<LiveSession | undefined> | undefined {
    const launch = this.launching.get(standbyKey(headless, viewport));
    if (!launch || launch.claim.claimed || this.closed) return undefined;
    launch.claim.claim();
    return new Promise<LiveSession | undefined>((resolve) => (launch.claimer = resolve)).then((session) => {
      if (session) this.tally.from_launch++;
      return session;
    });
  }

  /** Stops every standby browser, and waits for the launch under way. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.delay);
    clearTimeout(this.forgetTimer);
    clearTimeout(this.shrinkTimer);
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

  /** The kinds kept now: the set's, then the learned ones, each with what a burst of its creates added. */
  private entries(): StandbyEntry[] {
    return this.baseEntries().map((e) => {
      const burst = this.extra.get(standbyKey(e.headless, e.viewport))?.n ?? 0;
      return burst ? { ...e, count: e.count + burst } : e;
    });
  }

  /** The kinds kept and their counts, before bursts. */
  private baseEntries(): StandbyEntry[] {
    return [...this.deps.set.entries, ...[...this.learned.values()].map((l) => l.entry)];
  }

  private wantedOf(key: string): number {
    return this.entries().find((e) => standbyKey(e.headless, e.viewport) === key)?.count ?? 0;
  }

  private burstUsedMb(except?: string): number {
    let mb = 0;
    for (const [key, x] of this.extra) if (key !== except) mb += x.n * READY_BROWSER_MB[key.startsWith('headless') ? 'headless' : 'headful'];
    return mb;
  }

  /**
   * Notes a create of a kept kind and keeps more of it ready while its creates come faster than
   * refills replace them: the creates of the last DEMAND_WINDOW_MS beyond the kind's count and
   * one more, as many as the burst budget's memory allows. They stay until the kind's creates
   * stop for burst.holdMs (shrink()).
   */
  private followDemand(key: string, headless: boolean): void {
    if (!this.ready.has(key) || this.closed || this.deps.burst.budgetMb <= 0) return;
    const now = Date.now();
    const recent = [...(this.demand.get(key) ?? []).filter((t) => now - t < DEMAND_WINDOW_MS), now];
    this.demand.set(key, recent);
    const base = this.baseEntries().find((e) => standbyKey(e.headless, e.viewport) === key)?.count ?? 0;
    const room = Math.floor((this.deps.burst.budgetMb - this.burstUsedMb(key)) / READY_BROWSER_MB[headless ? 'headless' : 'headful']);
    const wanted = Math.min(Math.max(0, recent.length - base - 1), Math.max(0, room));
    const current = this.extra.get(key);
    if (current) current.asked = now;
    if (wanted > (current?.n ?? 0)) {
      this.extra.set(key, { n: wanted, asked: now });
      this.deps.log('standby follows a burst', { kind: key, extra: wanted });
    }
    if (this.extra.has(key)) this.armShrink();
  }

  /** Ends the bursts whose creates stopped burst.holdMs ago: their extra browsers are stopped. */
  private shrink(): void {
    const now = Date.now();
    for (const [key, x] of this.extra) {
      if (this.filling(key) || now - this.burstSince(x) < this.deps.burst.holdMs) continue;
      this.extra.delete(key);
      this.demand.delete(key);
      const wanted = this.wantedOf(key);
      const list = this.ready.get(key) ?? [];
      while (list.length > wanted) this.retire(list.pop()!);
      this.deps.log('standby burst over', { kind: key });
    }
    this.armShrink();
  }

  /** A kind still short of what it wants: its hold starts once it is full (place() arms it then). */
  private filling(key: string): boolean {
    return (this.ready.get(key)?.length ?? 0) < this.wantedOf(key);
  }

  private burstSince(x: { asked: number; filledAt?: number }): number {
    return Math.max(x.asked, x.filledAt ?? 0);
  }

  private armShrink(): void {
    clearTimeout(this.shrinkTimer);
    const due = [...this.extra].filter(([key]) => !this.filling(key)).map(([, x]) => this.burstSince(x) + this.deps.burst.holdMs);
    if (this.closed || !due.length) return;
    const first = Math.min(...due);
    this.shrinkTimer = setTimeout(() => this.shrink(), Math.max(0, first - Date.now()));
    this.shrinkTimer.unref();
  }

  /** Notes a create of the kind; true when that made it a learned kind. */
  private asked(key: string, headless: boolean, viewport: Viewport): boolean {
    const now = Date.now();
    const learned = this.learned.get(key);
    if (learned) {
      learned.asked = now;
      return false;
    }
    if (this.ready.has(key) || !this.deps.set.learn || this.closed) return false;
    const recent = [...(this.misses.get(key) ?? []).filter((t) => now - t < LEARN_WINDOW_MS), now];
    if (recent.length < LEARN_AFTER || this.learned.size >= this.deps.set.learn) {
      this.misses.set(key, recent.slice(-LEARN_AFTER));
      return false;
    }
    this.misses.delete(key);
    this.learned.set(key, { entry: { headless, viewport, count: 1 }, asked: now });
    this.ready.set(key, []);
    this.deps.log('standby kind learned', { kind: key });
    this.armForget();
    return true;
  }

  /** Forgets the learned kinds no create asked for in forgetMs, and stops their browsers. */
  private forget(): void {
    const now = Date.now();
    for (const [key, l] of this.learned) {
      if (this.launching.has(key) || now - this.since(l) < this.deps.forgetMs) continue;
      this.learned.delete(key);
      const list = this.ready.get(key) ?? [];
      this.ready.delete(key);
      for (const session of list) this.retire(session);
      this.deps.log('standby kind forgotten', { kind: key });
    }
    this.armForget();
  }

  /** What a learned kind's forgetting counts from. */
  private since(l: { asked: number; readyAt?: number }): number {
    return Math.max(l.asked, l.readyAt ?? l.asked);
  }

  /** Arms the next forget() for the learned kind due first; a kind launching now is armed again when its launch ends. */
  private armForget(): void {
    clearTimeout(this.forgetTimer);
    const due = [...this.learned].filter(([key]) => !this.launching.has(key)).map(([, l]) => l);
    if (this.closed || !due.length) return;
    const oldest = Math.min(...due.map((l) => this.since(l)));
    this.forgetTimer = setTimeout(() => this.forget(), Math.max(0, oldest + this.deps.forgetMs - Date.now()));
    this.forgetTimer.unref();
  }

  /** The kind furthest below its count, if any. */
  private shortest(): StandbyEntry | undefined {
    let best: StandbyEntry | undefined;
    let bestGap = 0;
    for (const e of this.entries()) {
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
