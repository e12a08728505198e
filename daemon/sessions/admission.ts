import { availableParallelism, freemem, totalmem } from 'node:os';
import { RateLimitError, ServiceUnavailableError } from '../../src/errors.js';

/** What the machine can start at once, and how long a launch may wait for its turn. */
export interface AdmissionLimits {
  /** Browser launches running at once. */
  launches: number;
  /** Launches waiting for a turn; a create beyond them is refused at once. */
  queue: number;
  /** How long a create waits for its turn before it is refused. */
  waitMs: number;
  /** Memory a launch needs free (MemAvailable) to start; below it, launches wait. */
  reserveBytes: number;
}

const MiB = 1024 * 1024;

/**
 * Measured at start: one launch per core (a Chromium start is CPU-bound for ~150 ms; more at once
 * only makes each slower until DevTools waits time out), no more than memory can hold. Each value
 * can be set: RBROWSE_MAX_LAUNCHES, RBROWSE_LAUNCH_QUEUE, RBROWSE_LAUNCH_WAIT_MS, RBROWSE_LAUNCH_RESERVE_MB.
 */
export function admissionLimits(env: NodeJS.ProcessEnv = process.env): AdmissionLimits {
  const num = (name: string, fallback: number, min: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer of at least ${min}: ${raw}`);
    return n;
  };
  const reserveBytes = num('RBROWSE_LAUNCH_RESERVE_MB', 256, 0) * MiB;
  const byMemory = Math.max(1, Math.floor(freemem() / Math.max(reserveBytes, 1)));
  const launches = num('RBROWSE_MAX_LAUNCHES', Math.max(1, Math.min(availableParallelism(), byMemory)), 1);
  return {
    launches,
    queue: num('RBROWSE_LAUNCH_QUEUE', launches * 8, 0),
    waitMs: num('RBROWSE_LAUNCH_WAIT_MS', 30_000, 0),
    reserveBytes,
  };
}

/**
 * Browsers this machine can hold at once: its memory over what a launch reserves, unless
 * RBROWSE_ORG_MAX_SESSIONS says otherwise. An organization's concurrency limit (GET /org/limits).
 */
export function sessionCapacity(limits: AdmissionLimits, env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.RBROWSE_ORG_MAX_SESSIONS;
  if (raw !== undefined && raw !== '') {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new Error(`RBROWSE_ORG_MAX_SESSIONS must be an integer of at least 1: ${raw}`);
    return n;
  }
  return Math.max(1, Math.floor(totalmem() / Math.max(limits.reserveBytes, MiB)));
}

interface Waiter {
  org: string;
  background: boolean;
  admit: (release: () => void) => void;
  refuse: (err: Error) => void;
  timer?: NodeJS.Timeout;
}

/**
 * Admission control for browser launches. At most `launches` run at once; creates beyond them wait
 * in a queue that is fair between organizations (each turn goes to the next organization with a
 * waiting create, round robin), and are refused with 429 and a Retry-After when the queue is full
 * or their wait runs out. Background launches (standby and pool refills) never take a turn a
 * waiting create could have, and are never refused. A launch's own timeouts start only once it
 * is admitted, so a busy machine delays launches rather than failing them.
 */
export class LaunchAdmission {
  private running = 0;
  /** Waiting creates by organization, in arrival order; the Map's order is the round robin. */
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly background: Waiter[] = [];
  /** Recent launch durations (ms), for Retry-After. */
  private readonly durations: number[] = [];
  private memoryPoll?: NodeJS.Timeout;

  constructor(
    readonly limits: AdmissionLimits,
    private readonly available: () => number = freemem,
  ) {}

  get queued(): number {
    let n = 0;
    for (const q of this.waiting.values()) n += q.length;
    return n;
  }

  /** What /health shows. */
  stats(): { launching: number; queued: number; limit: number } {
    return { launching: this.running, queued: this.queued, limit: this.limits.launches };
  }

  /**
   * Waits for a turn; resolves with the function that gives it back (call it once the browser is
   * up or failed). Rejects with RateLimitError when the queue is full or the wait runs out.
   */
  acquire(org: string, opts: { background?: boolean } = {}): Promise<() => void> {
    const background = opts.background ?? false;
    if (!background && this.queued >= this.limits.queue && !this.canStart()) {
      return Promise.reject(this.refusal('too many browser launches are waiting'));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { org, background, admit: resolve, refuse: reject };
      if (background) this.background.push(waiter);
      else {
        const q = this.waiting.get(org) ?? [];
        q.push(waiter);
        this.waiting.set(org, q);
        waiter.timer = setTimeout(() => {
          if (this.remove(waiter)) reject(this.refusal(`no browser launch slot freed within ${this.limits.waitMs} ms`));
        }, this.limits.waitMs);
        waiter.timer.unref();
      }
      this.pump();
    });
  }

  /** The daemon is stopping: creates still waiting get 503 at once rather than hold the stop up. */
  close(): void {
    const waiting = [...this.waiting.values()].flat();
    this.waiting.clear();
    for (const w of [...waiting, ...this.background.splice(0)]) {
      clearTimeout(w.timer);
      w.refuse(new ServiceUnavailableError('the daemon is stopping'));
    }
  }

  private canStart(): boolean {
    return this.running < this.limits.launches && this.available() >= this.limits.reserveBytes;
  }

  /** Gives free turns to the next waiters: creates round robin by organization, then background. */
  private pump(): void {
    while (this.canStart()) {
      const next = this.nextCreate() ?? this.background.shift();
      if (!next) break;
      clearTimeout(next.timer);
      this.running++;
      const started = performance.now();
      let released = false;
      next.admit(() => {
        if (released) return;
        released = true;
        this.running--;
        this.durations.push(performance.now() - started);
        if (this.durations.length > 20) this.durations.shift();
        this.pump();
      });
    }
    // Memory, not slots, holds the queue: look again shortly (a browser ending frees it without telling us).
    const blocked = this.running < this.limits.launches && (this.queued > 0 || this.background.length > 0);
    if (blocked && !this.memoryPoll) {
      this.memoryPoll = setTimeout(() => {
        this.memoryPoll = undefined;
        this.pump();
      }, 250);
      this.memoryPoll.unref();
    }
  }

  private nextCreate(): Waiter | undefined {
    for (const [org, q] of this.waiting) {
      const waiter = q.shift();
      this.waiting.delete(org);
      // The organization goes to the back of the round robin if it still waits.
      if (q.length) this.waiting.set(org, q);
      if (waiter) return waiter;
    }
    return undefined;
  }

  private remove(waiter: Waiter): boolean {
    clearTimeout(waiter.timer);
    const list = waiter.background ? this.background : this.waiting.get(waiter.org);
    const i = list?.indexOf(waiter) ?? -1;
    if (i < 0) return false;
    list!.splice(i, 1);
    if (!waiter.background && list!.length === 0) this.waiting.delete(waiter.org);
    return true;
  }

  /** 429 with how long until a turn is likely: the queue ahead, launched `launches` at a time. */
  private refusal(message: string): RateLimitError {
    const sorted = [...this.durations].sort((a, b) => a - b);
    const typical = sorted.length ? sorted[Math.floor(sorted.length / 2)]! : 1000;
    const seconds = Math.ceil(((this.queued / this.limits.launches + 1) * typical) / 1000);
    return new RateLimitError(`${message}; this machine starts ${this.limits.launches} browser(s) at a time`, Math.min(60, Math.max(1, seconds)));
  }
}
