import type { BrowserPool } from '../../src/api/schemas.js';
import type { PoolRecord } from '../store.js';
import { WaitQueue } from './waiters.js';

/** The running side of one pool: which browsers it has, who waits, and when it may launch next. */
export class LivePool {
  /** Idle browsers, oldest first; each value resumes its session's suspended inactivity timeout. */
  readonly idle = new Map<string, () => void>();
  readonly leased = new Set<string>();
  /** Acquirers waiting for a browser; they get session ids. */
  readonly waiters = new WaitQueue<string>();
  launching = 0;
  /** The launch under way, so a delete can wait for it rather than leave its browser behind. */
  inflight?: Promise<void>;
  /** Bumped by discard_all_idle: a launch that started before it is ended rather than kept. */
  generation = 0;
  /** Launch pacing: the last launch's start, and the earliest retry after a failure. */
  lastLaunchAt = Number.NEGATIVE_INFINITY;
  retryAt = 0;
  failures = 0;
  lastError?: NonNullable<BrowserPool['last_error']>;
  timer?: NodeJS.Timeout;
  /** Set once deleted: launches still running end their browser instead of adding it. */
  removed = false;

  constructor(readonly record: PoolRecord) {}

  get id(): string {
    return this.record.id;
  }

  get config() {
    return this.record.config;
  }

  /** What each of its sessions carries as `pool`. */
  get ref(): { id: string; name?: string } {
    return { id: this.id, ...(this.config.name ? { name: this.config.name } : {}) };
  }

  /** Browsers held or being made; the pool fills up to its size. */
  get total(): number {
    return this.idle.size + this.leased.size + this.launching;
  }

  stopTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
