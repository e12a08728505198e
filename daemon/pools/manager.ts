import type {
  AcquirePoolBody,
  BrowserPool,
  BrowserPoolConfig,
  CreatePoolBody,
  ListPoolsQuery,
  ReleasePoolBody,
  UpdatePoolBody,
} from '../../src/api/pools.js';
import type { BrowserSession } from '../../src/api/browsers.js';
import { LOCAL_REGION } from '../sessions/machine-size.js';
import { ApiError, ConflictError, NotFoundError } from '../../src/errors.js';
import { newId } from '../../src/ids.js';
import { paginate, type ListPage } from '../lib/paging.js';
import type { SessionManager } from '../sessions/manager.js';
import type { OrgRecord } from '../lib/owned-records.js';
import type { PoolRecord } from './record.js';
import type { SessionRecord } from '../sessions/record.js';
import type { Store } from '../lib/state/store.js';
import {
  configFromCreate,
  configFromUpdate,
  defaultAcquireTimeoutMs,
  launchIntervalMs,
  type ResolveTelemetry,
  sessionBody,
  telemetryRequest,
} from './config.js';
import { Refill } from '../sessions/ready/refill.js';
import { LivePool } from './live-pool.js';

export interface PoolManagerDeps {
  store: Store;
  sessions: SessionManager;
  log: (msg: string, extra?: object) => void;
  /** What a pool's profile and extension selectors resolve to now (the SDK reads these ids). */
  references?: (org: OrgRecord, config: BrowserPoolConfig) => { extension_ids: string[]; profile_id?: string };
  /** Resolves a pool's telemetry request as a session's (the pool shows, and its browsers get, the result). */
  resolveTelemetry?: ResolveTelemetry;
  /** Subscribes to profiles saved: a pool of that profile replaces its idle browsers (refresh_on_profile_update). */
  onProfileSaved?: (listener: (orgId: string, profileId: string) => void) => void;
}

/**
 * Keeps each pool's idle browsers, fills pools in the background at their fill rate, and leases
 * browsers to acquirers. Pool browsers are ordinary sessions of the SessionManager; an idle one
 * has its inactivity timeout suspended, and acquiring resumes it, so the acquirer's countdown
 * (the pool's timeout_seconds, set when the browser was made) starts then.
 */
export class PoolManager {
  private readonly pools = new Map<string, LivePool>();
  private closing = false;
  private readonly changeListeners: (() => void)[] = [];

  constructor(private readonly deps: PoolManagerDeps) {
    for (const record of deps.store.collection('pools')) this.pools.set(record.id, this.livePool(record));
    deps.sessions.onSessionEnd((record) => this.sessionEnded(record));
    deps.onProfileSaved?.((orgId, profileId) => void this.profileSaved(orgId, profileId));
  }

  /** Called after a pool's counts, configuration or last error changed, or a pool came or went. */
  onChange(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  private changed(): void {
    for (const listener of this.changeListeners) listener();
  }

  /** Every pool of the org, as API objects (the watch feed). */
  views(org: OrgRecord): BrowserPool[] {
    return [...this.pools.values()].filter((p) => p.record.org_id === org.id).map((p) => this.view(p));
  }

  /** Fills every pool; after a restart they are all empty, since idle browsers do not survive one. */
  start(): void {
    for (const pool of this.pools.values()) this.fill(pool);
  }

  /** Daemon stop: no more launches, and waiting acquirers get their 204 now. */
  close(): void {
    this.closing = true;
    for (const pool of this.pools.values()) {
      pool.refill.stop();
      pool.waiters.cancelAll();
    }
  }

  /** Browsers the owner's pools reserve: their sizes. */
  reservedBy(owner: string): number {
    let n = 0;
    for (const p of this.pools.values()) if (p.record.org_id === owner) n += p.config.size;
    return n;
  }

  async create(org: OrgRecord, body: CreatePoolBody): Promise<BrowserPool> {
    if (body.name) this.assertNameFree(org, body.name);
    const telemetry = this.deps.resolveTelemetry?.(org, body.telemetry, undefined, 'create');
    const config = this.checked(org, configFromCreate(body, telemetry));
    const record = { id: newId(), org_id: org.id, created_at: new Date().toISOString(), config };
    const pool = this.livePool(record);
    // Registered before the write so a concurrent create of the same name already sees it.
    this.pools.set(pool.id, pool);
    await this.deps.store.update((s) => void s.pools.push(record));
    this.fill(pool);
    this.changed();
    return this.view(pool);
  }

  get(org: OrgRecord, idOrName: string): BrowserPool {
    return this.view(this.find(org, idOrName));
  }

  list(org: OrgRecord, q: ListPoolsQuery): ListPage<BrowserPool> {
    const matches = [...this.pools.values()].filter(
      (p) =>
        p.record.org_id === org.id &&
        (q.name === undefined || p.config.name === q.name) &&
        (q.region === undefined || (p.config.region ?? LOCAL_REGION) === q.region) &&
        (!q.query || p.id === q.query || (p.config.name ?? '').toLowerCase().includes(q.query.toLowerCase())),
    );
    return paginate(matches, q, (p) => this.view(p));
  }

  async update(org: OrgRecord, idOrName: string, body: UpdatePoolBody): Promise<BrowserPool> {
    const pool = this.find(org, idOrName);
    if (body.name && body.name !== pool.config.name) this.assertNameFree(org, body.name);
    const resolve = this.deps.resolveTelemetry;
    const config = this.checked(
      org,
      configFromUpdate(pool.config, body, resolve && ((request, current) => resolve(org, request, current, 'update'))),
    );
    await this.deps.store.update(() => void (pool.record.config = config));
    if (body.discard_all_idle) {
      pool.generation++;
      await this.endIdle(pool, pool.idle.size, 'pool_discard_idle');
    } else {
      // A smaller size gives up idle browsers now; leased ones are ended when released.
      await this.endIdle(pool, pool.total - config.size, 'pool_resized');
    }
    // The rate may have changed: recompute when the next launch is due.
    pool.refill.reschedule();
    this.changed();
    return this.view(pool);
  }

  async delete(org: OrgRecord, idOrName: string, force: boolean): Promise<void> {
    const pool = this.find(org, idOrName);
    const leased = this.alive(pool.leased);
    if (leased && !force) {
      throw new ConflictError(`browser pool ${idOrName} has ${leased} leased browser(s); release them or delete with force`);
    }
    pool.removed = true;
    pool.refill.stop();
    // A browser still launching is not waited for: its launch is cancelled, and ends what it started.
    pool.launches.abort();
    this.pools.delete(pool.id);
    pool.waiters.cancelAll(new NotFoundError(`browser pool ${idOrName} was deleted`));
    await this.deps.store.update((s) => void (s.pools = s.pools.filter((p) => p.id !== pool.id)));
    const ids = [...pool.idle.keys(), ...pool.leased];
    pool.idle.clear();
    pool.leased.clear();
    this.changed();
    await Promise.all(ids.map((id) => this.deps.sessions.end(id, 'pool_deleted')));
  }

  /**
   * A profile was saved: pools that load it and refresh on its updates replace their idle browsers,
   * so the next acquire gets its new data (leased ones keep what they loaded).
   */
  async profileSaved(orgId: string, profileId: string): Promise<void> {
    const refreshing = [...this.pools.values()].filter(
      (p) => p.record.org_id === orgId && p.config.refresh_on_profile_update && this.references(p).profile_id === profileId,
    );
    await Promise.all(
      refreshing.map(async (pool) => {
        pool.generation++;
        await this.endIdle(pool, pool.idle.size, 'pool_profile_updated');
      }),
    );
  }

  async flush(org: OrgRecord, idOrName: string): Promise<void> {
    const pool = this.find(org, idOrName);
    await this.endIdle(pool, pool.idle.size, 'pool_flushed');
  }

  /**
   * A leased browser, or null once the wait is over without one (answered 204). `hungUp` aborts
   * when the caller disconnects: it leaves the queue, or its browser goes back to the pool.
   */
  async acquire(org: OrgRecord, idOrName: string, body: AcquirePoolBody, hungUp: AbortSignal): Promise<BrowserSession | null> {
    const pool = this.find(org, idOrName);
    let id: string | null | undefined = this.takeIdle(pool);
    if (!id) {
      const waitMs = body.acquire_timeout_seconds !== undefined ? body.acquire_timeout_seconds * 1000 : defaultAcquireTimeoutMs(pool.config);
      id = await pool.waiters.wait(waitMs, hungUp);
      if (!id) return null;
    }
    try {
      if (hungUp.aborted) throw new Error('the acquirer left');
      // Per-lease labels and telemetry go through the session's own update: the rules of PATCH /browsers.
      if (body.name !== undefined || body.tags || body.telemetry !== undefined) {
        await this.deps.sessions.update(org, id, {
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.tags ? { tags: body.tags } : {}),
          ...(body.telemetry !== undefined ? { telemetry: body.telemetry } : {}),
        });
        if (body.telemetry !== undefined) pool.ownTelemetry.add(id);
      }
    } catch (err) {
      this.giveBack(pool, id);
      if (err instanceof ApiError) throw err;
      return null;
    }
    // Launched ahead of demand at low priority; the acquirer's now.
    await this.deps.sessions.liveSession(id)?.foreground();
    // Best effort, as the pool's own start_url: a page that fails to load fails no acquire.
    if (body.start_url) await this.deps.sessions.open(id, body.start_url);
    return this.deps.sessions.get(org, id);
  }

  async release(org: OrgRecord, idOrName: string, body: ReleasePoolBody): Promise<void> {
    const pool = this.find(org, idOrName);
    const id = body.session_id;
    const notLeased = () => new ConflictError(`browser session ${id} is not leased from browser pool ${idOrName}`);
    if (!pool.leased.has(id)) {
      await this.deps.sessions.get(org, id); // 404 for a session the caller does not have
      throw notLeased();
    }
    const record = this.deps.sessions.liveSession(id)?.record;
    if (body.reuse === false || !record || pool.total > pool.config.size) {
      pool.leased.delete(id);
      await this.deps.sessions.end(id, 'released');
      return;
    }
    // Per-lease name, tags and telemetry do not follow the browser to its next lease.
    const ownTelemetry = pool.ownTelemetry.delete(id);
    if (record.name !== undefined || record.tags || ownTelemetry) {
      await this.deps.sessions.update(org, id, {
        name: null,
        tags: null,
        ...(ownTelemetry ? { telemetry: pool.config.telemetry ? telemetryRequest(pool.config.telemetry) : { enabled: false } } : {}),
      });
    }
    // A concurrent release of the same browser got there first.
    if (!pool.leased.has(id)) throw notLeased();
    this.giveBack(pool, id);
  }

  private giveBack(pool: LivePool, id: string): void {
    pool.leased.delete(id);
    this.offer(pool, id);
    this.changed();
  }

  /** Leases the oldest idle browser, or undefined when none is ready. */
  private takeIdle(pool: LivePool): string | undefined {
    for (const [id, resumeTimeout] of pool.idle) {
      pool.idle.delete(id);
      // One that is ending is skipped; its end refills the pool.
      if (!this.deps.sessions.liveSession(id)) continue;
      resumeTimeout();
      pool.leased.add(id);
      this.changed();
      return id;
    }
    return undefined;
  }

  /** A browser is ready (new, or released for reuse): the first waiter gets it, else it idles. */
  private offer(pool: LivePool, id: string): void {
    if (!this.deps.sessions.liveSession(id)) return;
    const resumeTimeout = this.deps.sessions.clock.suspend(id);
    if (pool.waiters.length) {
      pool.leased.add(id);
      pool.waiters.serve(id);
      // The new lessee's inactivity countdown starts now.
      resumeTimeout();
      return;
    }
    pool.idle.set(id, resumeTimeout);
    this.changed();
  }

  private async endIdle(pool: LivePool, count: number, reason: string): Promise<void> {
    const ids = [...pool.idle.keys()].slice(0, Math.max(0, count));
    for (const id of ids) pool.idle.delete(id);
    await Promise.all(ids.map((id) => this.deps.sessions.end(id, reason)));
  }

  private sessionEnded(record: SessionRecord): void {
    const pool = record.pool && this.pools.get(record.pool.id);
    if (!pool) return;
    pool.idle.delete(record.id);
    pool.leased.delete(record.id);
    pool.ownTelemetry.delete(record.id);
    this.fill(pool);
  }

  private fill(pool: LivePool): void {
    if (!this.closing && !pool.removed) pool.refill.kick();
  }

  /** A pool's running side, filled by the shared ready-browsers mechanism at the pool's rate. */
  private livePool(record: PoolRecord): LivePool {
    const pool = new LivePool(record);
    let generation = 0;
    pool.refill = new Refill<string>({
      short: () => !this.closing && !pool.removed && pool.config.fill_rate_per_minute > 0 && pool.total < pool.config.size,
      intervalMs: () => launchIntervalMs(pool.config),
      launch: async () => {
        generation = pool.generation;
        const org = this.deps.store.data.orgs.find((o) => o.id === pool.record.org_id);
        if (!org) throw new NotFoundError(`organization ${pool.record.org_id} not found`);
        return (await this.deps.sessions.create(org, sessionBody(pool.config), { pool: pool.ref, signal: pool.launches.signal })).session_id;
      },
      place: async (id) => {
        const unwanted = this.closing || pool.removed || generation !== pool.generation || pool.total >= pool.config.size;
        if (unwanted) await this.deps.sessions.end(id, 'pool_surplus');
        else this.offer(pool, id);
      },
      succeeded: () => {
        if (pool.lastError) this.changed();
        delete pool.lastError;
      },
      failed: (err, failures) => this.launchFailed(pool, err, failures),
    });
    return pool;
  }

  /** Never handed out: the failure is kept on the pool (last_error) and the launch retried later. */
  private launchFailed(pool: LivePool, err: unknown, failures: number): void {
    const inner = err instanceof ApiError ? (err.inner ?? { code: err.code, message: err.message }) : undefined;
    pool.lastError = {
      code: inner?.code ?? 'browser_start_failed',
      message: inner?.message ?? String((err as Error)?.message ?? err),
      occurred_at: new Date().toISOString(),
    };
    this.deps.log('pool launch failed', { pool: pool.id, failures, error: pool.lastError.message });
    this.changed();
  }

  /** Runs the create checks of POST /browsers on the configuration, and resolves its viewport. */
  private checked(org: OrgRecord, config: BrowserPoolConfig): BrowserPoolConfig {
    const viewport = this.deps.sessions.checkConfig(org, sessionBody(config));
    return config.viewport ? { ...config, viewport } : config;
  }

  private find(org: OrgRecord, idOrName: string): LivePool {
    const mine = [...this.pools.values()].filter((p) => p.record.org_id === org.id);
    const pool = mine.find((p) => p.id === idOrName) ?? mine.find((p) => p.config.name === idOrName);
    if (!pool) throw new NotFoundError(`browser pool ${idOrName} not found`);
    return pool;
  }

  private assertNameFree(org: OrgRecord, name: string): void {
    for (const p of this.pools.values()) {
      if (p.record.org_id === org.id && p.config.name === name) {
        throw new ConflictError(`a browser pool named ${name} already exists`);
      }
    }
  }

  /** Sessions of the set that still run (one being ended is no longer counted). */
  private alive(ids: Iterable<string>): number {
    let n = 0;
    for (const id of ids) if (this.deps.sessions.liveSession(id)) n++;
    return n;
  }

  private references(pool: LivePool): { extension_ids: string[]; profile_id?: string } {
    const org = this.deps.store.data.orgs.find((o) => o.id === pool.record.org_id);
    return (org && this.deps.references?.(org, pool.config)) ?? { extension_ids: [] };
  }

  private view(pool: LivePool): BrowserPool {
    return {
      id: pool.id,
      ...(pool.config.name ? { name: pool.config.name } : {}),
      created_at: pool.record.created_at,
      available_count: this.alive(pool.idle.keys()),
      acquired_count: this.alive(pool.leased),
      browser_pool_config: pool.config,
      region: pool.config.region ?? LOCAL_REGION,
      ...this.references(pool),
      ...(pool.lastError ? { last_error: pool.lastError } : {}),
    };
  }
}
