import type { BrowserPool } from '../../src/api/pools.js';
import type { PoolRecord } from './record.js';
import type { Refill } from '../sessions/ready/refill.js';
import { WaitQueue } from './waiters.js';

/** The running side of one pool: which browsers it has, who waits, and when it may launch next. */
export class LivePool {
  /** Idle browsers, oldest first; each value resumes its session's suspended inactivity timeout. */
  readonly idle = new Map<string, () => void>();
  readonly leased = new Set<string>();
  /** Acquirers waiting for a browser; they get session ids. */
  readonly waiters = new WaitQueue<string>();
  /** Bumped by discard_all_idle: a launch that started before it is ended rather than kept. */
  generation = 0;
  lastError?: NonNullable<BrowserPool['last_error']>;
  /** Set once deleted: launches still running end their browser instead of adding it. */
  removed = false;
  /** Keeps the pool filled at its rate; set by the pool manager. */
  refill!: Refill<string>;
  /** Cancels the launch under way (a delete does not wait for it). */
  readonly launches = new AbortController();
  /** Leased browsers whose acquire set telemetry of their own: the pool's is put back at release. */
  readonly ownTelemetry = new Set<string>();

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
    return this.idle.size + this.leased.size + this.refill.launching;
  }
}
