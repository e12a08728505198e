/**
 * The "ready browsers" mechanism shared by browser pools and the standby set: keeps launching one
 * browser at a time while its owner is short, spacing launch starts by an interval and backing
 * off after failures. What a launched browser is for (an idle pool browser, a standby browser)
 * is the owner's business, in place().
 */
export interface RefillOwner<T> {
  /** Whether one more launch is wanted now (launches under way are counted by the owner via `launching`). */
  short(): boolean;
  /** Launches one browser; a throw counts as a failure. */
  launch(): Promise<T>;
  /** Puts a launched browser where it belongs (or ends it), once it no longer counts as launching. */
  place(launched: T): Promise<void> | void;
  /** The least time between the starts of two launches. */
  intervalMs?(): number;
  /** False while launching now would compete with more urgent work; asked again after HOLD_MS. */
  mayLaunch?(): boolean;
  /** A launch failed; the next one waits backoffMs(failures). */
  failed?(err: unknown, failures: number): void;
  /** A launch succeeded after failures (or at all): the owner clears what it said of them. */
  succeeded?(): void;
}

const MAX_BACKOFF_MS = 60_000;
/** How long a launch held back by mayLaunch() waits before it asks again. */
const HOLD_MS = 250;

const backoffMs = (failures: number) => Math.min(1000 * 2 ** (failures - 1), MAX_BACKOFF_MS);

export class Refill<T> {
  launching = 0;
  /** The launch under way, so an owner going away can wait for it rather than leave its browser behind. */
  inflight?: Promise<void>;
  private failures = 0;
  private lastLaunchAt = Number.NEGATIVE_INFINITY;
  private retryAt = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly owner: RefillOwner<T>) {}

  /** Starts the next launch when the owner is short and pacing allows, else schedules it. */
  kick(): void {
    if (this.stopped || this.launching > 0 || this.timer || !this.owner.short()) return;
    const due = Math.max(this.lastLaunchAt + (this.owner.intervalMs?.() ?? 0), this.retryAt);
    const wait = this.owner.mayLaunch?.() === false ? HOLD_MS : due - Date.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.kick();
      }, wait);
      this.timer.unref();
      return;
    }
    this.lastLaunchAt = Date.now();
    this.inflight = this.run();
  }

  /** Forgets a scheduled launch, so the next kick() recomputes when it is due (a changed rate). */
  reschedule(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.kick();
  }

  /** No more launches; the one under way (inflight) finishes. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async run(): Promise<void> {
    this.launching++;
    let launched: { value: T } | undefined;
    try {
      launched = { value: await this.owner.launch() };
      this.failures = 0;
      this.retryAt = 0;
      this.owner.succeeded?.();
    } catch (err) {
      if (!this.stopped) {
        this.failures++;
        this.retryAt = Date.now() + backoffMs(this.failures);
        this.owner.failed?.(err, this.failures);
      }
    } finally {
      this.launching--;
    }
    // A browser that cannot be placed is the owner's to end; the refill goes on regardless.
    if (launched) await Promise.resolve(this.owner.place(launched.value)).catch((err: unknown) => this.owner.failed?.(err, this.failures));
    this.kick();
  }
}
