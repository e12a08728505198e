import type { BrowserSession, CreateBrowserBody, ListBrowsersQuery, LiveView as LiveViewUrls, UpdateBrowserBody } from '../../src/api/browsers.js';
import type { LaunchClaim } from '../lib/launch-claim.js';
import { ApiError, BadRequestError, ConflictError, NotFoundError, ServiceUnavailableError, UnauthorizedError } from '../../src/errors.js';
import { newId } from '../../src/ids.js';
import type { SpareBoxes } from './ready/spare-boxes.js';
import { resolveViewport, SUPPORTED_VIEWPORTS_TEXT, type Viewport } from '../../src/viewport.js';
import { paginate, type ListPage as Page } from '../lib/paging.js';
import type { OrgRecord } from '../lib/owned-records.js';
import type { SessionRecord } from './record.js';
import type { Store } from '../lib/state/store.js';
import type { SessionTokens, TokenScope } from './tokens.js';
import type { FeatureLaunch, SessionFeature } from './features.js';
import { LiveSession, type PrepareFeatures, type RuntimeDeps } from './live-session.js';
import { navigate, warmUp } from '../browser/cdp-page.js';
import { within } from '../lib/procs.js';
import type { Standby, StandbyDeps } from './ready/standby.js';
import type { LaunchDemand } from '../lib/launch-demand.js';
import type { LaunchAdmission } from './admission.js';
import type { History } from '../lib/state/history.js';
import { SessionView } from './session-view.js';
import { InactivityClock } from './inactivity-clock.js';
import { LOCAL_REGION } from './machine-size.js';

export const DEFAULT_TIMEOUT_SECONDS = 60;
/** How long a failed request waits to see whether its session's browser is exiting. */
const ENDED_GRACE_MS = 2000;

export interface SessionManagerDeps {
  store: Store;
  /** Ended sessions once their teardown is done: findable with include_deleted, out of the state document. */
  history: History<SessionRecord>;
  tokens: SessionTokens;
  runtime: RuntimeDeps;
  /** Origin clients reach the daemon at, e.g. http://127.0.0.1:7331. */
  publicUrl: () => string;
  log: (msg: string, extra?: object) => void;
  /** What sessions may carry (profiles, extensions, proxies, stealth, invocations), run in this order. */
  features?: SessionFeature[];
  /**
   * Makes the ready browsers a matching create takes instead of launching one
   * (daemon/sessions/ready/standby.ts), given how this manager launches them.
   */
  standby?: (launcher: Pick<StandbyDeps, 'launch' | 'busy'>) => Standby;
  /** Launches waited on: a create's own browser is one (daemon/lib/launch-demand.ts). */
  demand?: LaunchDemand;
  /** Session boxes started ahead (daemon/sessions/ready/spare-boxes.ts): a cold create starts only its browser in one. */
  spareBoxes?: Pick<SpareBoxes, 'take'>;
  /** Bounds the browser launches running at once (daemon/sessions/admission.ts); every launch takes a turn. */
  admission: Pick<LaunchAdmission, 'acquire'>;
}

/** Whom a standby browser's features see while it launches: it belongs to no organization yet. */
const NO_ORG: OrgRecord = { id: '', name: '', created_at: '' };

export type ListPage = Page<BrowserSession>;

/**
 * A session's jwts: the cdp_ws_url one, the live view's and its read-only view's (a headless
 * session's live view is asked for: its object carries no browser_live_view_url).
 */

/** What a session is made for besides its HTTP body: pools create theirs through this. */
export interface CreateOptions {
  pool?: { id: string; name?: string };
  /** Aborted when the launch is no longer wanted (its pool was deleted): it stops what it started and fails. */
  signal?: AbortSignal;
}

/** Creates, finds, ends and times out sessions; the only owner of LiveSession objects. */
export class SessionManager {
  private readonly live = new Map<string, LiveSession>();
  /** Names claimed by creates still launching, so two concurrent creates cannot both take one. */
  private readonly pendingNames = new Set<string>();
  /** Set once the daemon stops: no new session may start after endAll has looked. */
  private closing = false;
  /** Creates under way, cold or handing over a standby browser: endAll waits for them. */
  private readonly launching = new Set<Promise<unknown>>();
  private coldLaunches = 0;
  /** Sessions ended but still stopping their processes (see end()). */
  private readonly teardowns = new Set<Promise<unknown>>();
  /** Aborted at daemon stop: a teardown stops trying again what fails (a profile's save) and leaves it for the next start. */
  private readonly giveUp = new AbortController();
  /** Aborted as the daemon stops: every launch under way (creates, standby, pools) is cancelled. */
  private readonly stopLaunches = new AbortController();
  private readonly runtime: SessionManagerDeps['runtime'];
  private readonly endListeners: ((record: SessionRecord) => void)[] = [];
  private readonly changeListeners: (() => void)[] = [];

  /** The standby set this manager launches for and takes from. */
  readonly standby?: Standby;
  /** Sessions as the API shows them: objects, URLs, jwts. */
  readonly view: SessionView;
  /** Each running session's inactivity countdown. */
  readonly clock: InactivityClock;

  constructor(private readonly deps: SessionManagerDeps) {
    this.runtime = { ...deps.runtime, giveUp: this.giveUp.signal };
    deps.store.collection('sessions');
    this.view = new SessionView({ tokens: deps.tokens, publicUrl: deps.publicUrl, features: this.features });
    this.clock = new InactivityClock({
      running: () => this.live.values(),
      liveSession: (id) => this.liveSession(id),
      end: (id, reason) => this.end(id, reason),
      changed: () => this.changed(),
      log: deps.log,
    });
    this.standby = deps.standby?.({ launch: (kind, claim) => this.startReady(kind, claim), busy: () => this.busy });
    deps.demand?.add(() => this.busy);
  }

  private get features(): SessionFeature[] {
    return this.deps.features ?? [];
  }

  /** Called once for each session that ends, whatever ended it (pools refill from this). */
  onSessionEnd(listener: (record: SessionRecord) => void): void {
    this.endListeners.push(listener);
  }

  /** Called after anything a dashboard shows changed: a session started, ended, was updated, or a client came or left. */
  onChange(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  private changed(): void {
    for (const listener of this.changeListeners) listener();
  }

  /** The org's running sessions, newest first, with their connected clients and inactivity deadline. */
  activity(org: OrgRecord): { session: BrowserSession; cdp_clients: number; viewers: number; timeout_at: number | null }[] {
    return (
      this.listWhere(org, (r) => this.liveSession(r.id) !== undefined)
        .reverse()
        // Without its ever-growing usage, so an idle feed's snapshots stay equal (rbrowse watch shows the age).
        .map(({ usage: _usage, ...session }) => {
          const live = this.liveSession(session.session_id)!;
          return {
            session,
            cdp_clients: live.connected('cdp'),
            viewers: live.connected('viewer'),
            timeout_at: this.clock.timeoutAt(session.session_id),
          };
        })
    );
  }

  /**
   * The checks of a create that need no browser; pools run them when their configuration is set,
   * so a bad one is refused then rather than failing every launch later. Returns the viewport.
   */
  checkConfig(org: OrgRecord, body: CreateBrowserBody): Viewport {
    const viewport = this.checkedViewport(body.viewport);
    if (body.profile && !body.profile.id && !body.profile.name) throw BadRequestError.field('profile', 'provide id or name');
    for (const [i, ext] of (body.extensions ?? []).entries()) {
      if (!ext.id && !ext.name) throw BadRequestError.field(`extensions.${i}`, 'provide id or name');
    }
    for (const feature of this.features) feature.check?.(org, body);
    return viewport;
  }

  async create(org: OrgRecord, body: CreateBrowserBody, opts: CreateOptions = {}): Promise<BrowserSession> {
    const viewport = this.checkConfig(org, body);
    if (body.name !== undefined) this.assertNameFree(org, body.name);
    if (this.closing) throw new ServiceUnavailableError('the daemon is stopping');
    const nameKey = body.name !== undefined ? `${org.id}/${body.name}` : undefined;
    if (nameKey) this.pendingNames.add(nameKey);
    const handsOver = this.canHandOver(body, opts);
    let ready = handsOver ? this.standby?.take(body.headless ?? false, viewport) : undefined;
    // None ready, but one of the kind on its way (a refill): it is this create's, sooner than a
    // launch of its own would be, and no second launch competes with it for the machine.
    const coming = !ready && handsOver ? this.standby?.takeLaunching(body.headless ?? false, viewport) : undefined;
    if (coming) {
      ready = await coming.catch(() => undefined);
      // Its Chromium died as it launched: this create launches one of its own after all.
      if (ready && (ready.isStopping || !ready.chromium.running)) {
        this.track(ready.stop());
        ready = undefined;
      }
      if (this.closing) {
        if (nameKey) this.pendingNames.delete(nameKey);
        if (ready) this.track(ready.stop());
        throw new ServiceUnavailableError('the daemon is stopping');
      }
    }
    const launch = ready ? this.handOver(ready, org, body) : this.launch(org, body, viewport, opts);
    this.launching.add(launch);
    if (!ready) this.coldLaunches++;
    try {
      return await launch;
    } finally {
      this.launching.delete(launch);
      if (!ready) this.coldLaunches--;
      if (nameKey) this.pendingNames.delete(nameKey);
    }
  }

  /** The owner's live sessions that are not a pool's (pools count by their size: PoolManager.reservedBy). */
  onDemandOf(owner: string): number {
    let n = 0;
    for (const s of this.deps.store.data.sessions) if (s.org_id === owner && !s.deleted_at && !s.pool) n++;
    return n;
  }

  /** Sessions of organizations with a running browser (pool browsers included, standby ones not). */
  get running(): number {
    return this.live.size;
  }

  /** Creates are launching browsers of their own now (standby refills wait for them, not for hand-overs). */
  get busy(): boolean {
    return this.coldLaunches > 0;
  }

  /**
   * A browser launched ahead of demand (standby): a session of no organization, not stored, with
   * its page target up and its renderer warm. handOver() makes it a caller's session.
   */
  async startReady(kind: { headless: boolean; viewport: Viewport }, claim?: LaunchClaim): Promise<LiveSession> {
    const record = this.newRecord(newId(), NO_ORG, { headless: kind.headless }, kind.viewport);
    const release = await this.deps.admission.acquire(NO_ORG.id, { background: true });
    const session = await LiveSession.start(record, this.runtime, this.featureLaunches(NO_ORG, { headless: kind.headless }, record), {
      background: true,
      claim,
      signal: this.stopLaunches.signal,
    }).finally(release);
    try {
      await warmUp(session.chromium, undefined, { stopWaiting: () => claim?.claimed === true });
    } catch (err) {
      await session.stop();
      throw err;
    }
    return session;
  }

  /** A create that launch-time settings do not rule out of a ready browser (kiosk, profile, extensions, stealth...). */
  private canHandOver(body: CreateBrowserBody, opts: CreateOptions): boolean {
    return !opts.pool && !body.kiosk_mode && !this.features.some((f) => f.needsLaunch?.(body));
  }

  private newRecord(id: string, org: OrgRecord, body: CreateBrowserBody, viewport: Viewport, opts: CreateOptions = {}): SessionRecord {
    const headless = body.headless ?? false;
    return {
      id,
      org_id: org.id,
      created_at: new Date().toISOString(),
      headless,
      stealth: body.stealth ?? false,
      kiosk_mode: body.kiosk_mode ?? false,
      timeout_seconds: body.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS,
      viewport,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.tags ? { tags: body.tags } : {}),
      ...(body.start_url ? { start_url: body.start_url } : {}),
      ...(body.persistence ? { persistence: body.persistence } : {}),
      ...(opts.pool ? { pool: opts.pool } : {}),
    };
  }

  /** What a session's features set up around its launch, in order; all given back if one fails. */
  private featureLaunches(org: OrgRecord, body: CreateBrowserBody, record: SessionRecord): PrepareFeatures {
    return async (ctx) => {
      const launches: FeatureLaunch[] = [];
      try {
        for (const feature of this.features) {
          const launched = await feature.launch?.({ ...ctx, org, body, record });
          if (launched) launches.push(launched);
        }
      } catch (err) {
        await releaseAll(launches);
        throw err;
      }
      return launches;
    };
  }

  private async launch(org: OrgRecord, body: CreateBrowserBody, viewport: Viewport, opts: CreateOptions): Promise<BrowserSession> {
    // A pool's refill is background work: it never takes a turn a waiting create could have.
    const release = await this.deps.admission.acquire(org.id, { background: Boolean(opts.pool) });
    let session: LiveSession;
    const signal = opts.signal ? AbortSignal.any([opts.signal, this.stopLaunches.signal]) : this.stopLaunches.signal;
    if (signal.aborted) {
      release();
      throw new ServiceUnavailableError('the launch was cancelled');
    }
    // A pool's fill is background work too: a spare box is for a create someone waits on.
    let box = opts.pool || this.closing ? undefined : this.deps.spareBoxes?.take();
    const record = this.newRecord(box?.id ?? newId(), org, body, viewport, opts);
    try {
      if (this.closing) throw new ServiceUnavailableError('the daemon is stopping');
      await this.view.sign(record);
      const started = LiveSession.start(record, this.runtime, this.featureLaunches(org, body, record), {
        background: Boolean(opts.pool),
        box,
        signal,
      });
      // The session's now: a start that fails stops it.
      box = undefined;
      session = await started;
    } catch (err) {
      if (box) this.track(box.stop());
      throw this.startFailed(record, err);
    } finally {
      release();
    }
    return this.register(session);
  }

  /**
   * Makes a standby browser the org's session, as if launched for this body: its own id, jwts,
   * timeout, labels, proxy and start URL; its inactivity countdown starts now. Nothing else of it
   * was ever seen by anyone, so it is as fresh as a cold one.
   */
  private async handOver(session: LiveSession, org: OrgRecord, body: CreateBrowserBody): Promise<BrowserSession> {
    const { record } = session;
    Object.assign(record, this.newRecord(record.id, org, body, record.viewport));
    session.touch();
    try {
      // Independent: the priority given back (a few writes to /proc) while the jwts are signed.
      await Promise.all([session.foreground(), this.view.sign(record)]);
      for (const feature of this.features) {
        const launched = await feature.handOver?.({ org, body, record, dirs: session.dirs, files: session.files, box: session.box });
        if (!launched) continue;
        session.adopt(launched);
        await launched.started?.({ browser: session.chromium });
      }
      if (body.start_url) await navigate(session.chromium, body.start_url);
    } catch (err) {
      this.track(session.stop());
      throw this.startFailed(record, err);
    }
    return this.register(session);
  }

  /** Opens a URL in a running session's browser, best effort (an acquire's start_url): a failure only goes to the log. */
  async open(id: string, url: string): Promise<void> {
    const session = this.liveSession(id);
    if (!session) return;
    await navigate(session.chromium, url).catch((err: unknown) => this.deps.log('start_url not opened', { session: id, error: String(err) }));
  }

  /** What a create that could not start its browser answers. */
  private startFailed(record: SessionRecord, err: unknown): ApiError {
    // Never stored, so never retired: its jwts go now.
    this.view.forget(record.id);
    this.deps.log('session start failed', { session: record.id, error: (err as Error).message });
    // A feature's refusal (a profile already held for writing, a proxy gone) is the caller's answer.
    if (err instanceof ApiError) return err;
    // The machine's condition, not the client's: 503, which the SDK retries.
    return new ServiceUnavailableError('the browser could not be started', {
      code: 'browser_start_failed',
      message: String((err as Error).message).slice(0, 2000),
    });
  }

  /** A started session becomes live: findable, watched for its browser's exit, stored. */
  private async register(session: LiveSession): Promise<BrowserSession> {
    const { record } = session;
    record.runtime = {
      chromium_pid: session.chromium.pid,
      xvfb_pid: session.display?.pid,
      display: session.display?.number,
      ...(session.box.uidSlot !== undefined ? { uid_slot: session.box.uidSlot } : {}),
    };
    try {
      await this.deps.store.update((s) => void s.sessions.push(record));
    } catch (err) {
      // Not stored (a full disk; the store has taken the record out again): it must not run unrecorded.
      this.view.forget(record.id);
      this.track(session.stop());
      throw err;
    }
    this.live.set(record.id, session);
    session.onClientsChange(() => this.changed());
    session.onBrowserExit(() => void this.end(record.id, 'browser_exited'));
    this.changed();
    return this.view.of(record);
  }

  get(org: OrgRecord, idOrName: string, includeDeleted = false): Promise<BrowserSession> {
    return this.view.present(this.find(org, idOrName, includeDeleted));
  }

  async list(org: OrgRecord, q: ListBrowsersQuery): Promise<ListPage> {
    const status = q.include_deleted ? 'all' : (q.status ?? 'active');
    const sources = status === 'active' ? this.deps.store.data.sessions : this.deps.history.allWith(this.deps.store.data.sessions);
    const query = q.query?.toLowerCase();
    const matches = sources.filter(
      (s) =>
        s.org_id === org.id &&
        (status === 'all' || (status === 'active') === !s.deleted_at) &&
        (q.region === undefined || (s.region ?? LOCAL_REGION) === q.region) &&
        (!query || this.searchTerms(s).some((t) => t.toLowerCase().includes(query))) &&
        Object.entries(q.tags ?? {}).every(([k, v]) => s.tags?.[k] === v),
    );
    // Newest first, as an operator looking for the session they just made expects.
    matches.sort((a, b) => b.created_at.localeCompare(a.created_at));
    const page = paginate(matches, q);
    return { ...page, items: await Promise.all(page.items.map((r) => this.view.present(r))) };
  }

  /** What a list's query matches a session by, as Kernel's: its id and name, its profile's id and name, its proxy id and its pool's name. */
  private searchTerms(s: SessionRecord): string[] {
    const own = [s.id, s.name, s.proxy_id, s.pool?.name].filter((t): t is string => t !== undefined);
    return [...own, ...this.features.flatMap((f) => f.searchTerms?.(s) ?? [])];
  }

  async update(org: OrgRecord, idOrName: string, body: UpdateBrowserBody): Promise<BrowserSession> {
    const record = this.find(org, idOrName, false);
    for (const feature of this.features) feature.checkUpdate?.(org, record, body);
    if (typeof body.name === 'string' && body.name !== record.name) this.assertNameFree(org, body.name);
    const viewport = body.viewport && this.checkedViewport(body.viewport);
    const resizing = viewport && body.viewport ? this.live.get(record.id) : undefined;
    if (viewport && body.viewport) {
      if (!resizing || resizing.isStopping) throw new NotFoundError(`browser session ${idOrName} has ended`);
      if (resizing.connected('viewer') > 0 && !body.viewport.force) {
        throw new ConflictError('live-view viewers are connected; pass viewport.force: true to resize anyway');
      }
    }
    // The restart first: it is what may still fail (a profile held by another session's writer),
    // and then nothing else of the PATCH is applied.
    const restarting = this.features.filter((f) => f.needsRestart?.(body));
    if (restarting.length) {
      const session = this.liveSession(record.id);
      if (!session) throw new NotFoundError(`browser session ${idOrName} has ended`);
      const ctx = { org, record, dirs: session.dirs, files: session.files, box: session.box };
      await this.restart(session, async () => {
        const launches: FeatureLaunch[] = [];
        try {
          for (const f of restarting) {
            const launched = await f.restart?.(ctx, body);
            if (launched) launches.push(launched);
          }
        } catch (err) {
          await releaseAll(launches);
          throw err;
        }
        return launches;
      });
    }
    if (resizing && viewport) await resizing.resize(viewport);
    await this.liveSession(record.id)?.update(body);
    await this.deps.store.update(() => {
      if (viewport) record.viewport = viewport;
      // proxy_id: omitted or null leaves it unchanged, "" removes it.
      if (body.proxy_id === '') delete record.proxy_id;
      else if (body.proxy_id) record.proxy_id = body.proxy_id;
      if (body.name === null) delete record.name;
      else if (body.name !== undefined) record.name = body.name;
      if (body.tags === null) delete record.tags;
      else if (body.tags !== undefined) record.tags = body.tags;
    });
    this.changed();
    return this.view.of(record);
  }

  /**
   * Restarts a running session's Chromium in place with more loaded (LiveSession.restartWith):
   * extensions sent to POST /browsers/{id}/extensions, a profile given by PATCH. The new
   * browser's pid is recorded for the reaper.
   */
  async restart(session: LiveSession, add: () => Promise<FeatureLaunch[]>): Promise<void> {
    try {
      await session.restartWith(add);
    } finally {
      if (!session.isStopping) {
        await this.deps.store.update(() => void (session.record.runtime = { ...session.record.runtime, chromium_pid: session.chromium.pid }));
      }
      this.changed();
    }
  }

  async delete(org: OrgRecord, idOrName: string): Promise<void> {
    const record = this.find(org, idOrName, false);
    const live = this.liveSession(record.id);
    // A refusal here keeps the session as it was: nothing of its end has begun.
    if (live && !live.isStopping) for (const feature of this.features) await feature.checkDelete?.(org, record, live.files);
    await this.end(record.id, 'deleted');
  }

  /**
   * Runs an operation inside one of the org's running sessions (computer control, filesystem),
   * holding the session active while it runs: 404 for another org's or an ended session.
   */
  async withSession<T>(org: OrgRecord, idOrName: string, run: (session: LiveSession) => Promise<T>): Promise<T> {
    const record = this.find(org, idOrName, false);
    const session = this.liveSession(record.id);
    if (!session) throw new NotFoundError(`browser session ${idOrName} not found or ended`);
    const release = session.hold('api');
    try {
      // During a restart in place (loadExtensions, a profile attached) the browser is briefly not there.
      await session.restarted;
      if (session.isStopping) throw new NotFoundError(`browser session ${idOrName} not found or ended`);
      return await run(session);
    } catch (err) {
      // A tool in a box torn down under it fails with what looks like bad input (a 400 for
      // list_files while the session's Xvfb dies); the session ending is the answer.
      if (err instanceof ApiError && err.status === 400 && session.isStopping) {
        throw new NotFoundError(`browser session ${idOrName} ended while the request ran`);
      }
      if (err instanceof ApiError) throw err;
      // A browser (or display) that died under the request fails it some unforeseen way; that is
      // the session ending, not a daemon fault. Its exit is noticed within moments.
      const ended =
        session.isStopping ||
        (await within(ENDED_GRACE_MS, Promise.race([session.chromium.exited, session.display?.exited ?? new Promise(() => {})])));
      if (ended) throw new NotFoundError(`browser session ${idOrName} ended while the request ran (its browser exited)`);
      throw err;
    } finally {
      release();
    }
  }

  /**
   * The running session a CDP or live-view jwt opens: 401 for anything forged or of another
   * scope, 404 once the session ended (the token must still be the one its record holds, so a
   * token of an ended session never revives).
   */
  async sessionForToken(jwt: string | undefined | null, scope: TokenScope): Promise<LiveSession> {
    // The very jwt this daemon issued to a session it holds is proof enough: the signature is
    // checked only for the others, to tell a forged one (401) from an ended session's (404). The
    // check is a thread-pool job of jose's, which took 0.5-17 ms of a websocket's connect on a
    // busy machine.
    const id = jwt ? this.deps.tokens.claimedSession(jwt) : undefined;
    const session = id === undefined ? undefined : this.liveSession(id);
    if (!session || !this.view.issued(session.id, scope, jwt)) {
      if (!(await this.deps.tokens.verify(jwt, scope))) throw new UnauthorizedError('missing or invalid jwt');
      throw new NotFoundError('browser session not found or ended');
    }
    await session.restarted;
    if (session.isStopping) throw new NotFoundError('browser session not found or ended');
    return session;
  }

  /**
   * The live view of the org's running session, headless ones included: noVNC for a headful
   * session (its browser_live_view_url), CDP screencast frames for a headless one.
   */
  async liveView(org: OrgRecord, idOrName: string): Promise<LiveViewUrls> {
    const id = this.liveIdOf(org, idOrName);
    const urls = id && this.view.liveView(id, this.liveSession(id)!.display === undefined);
    if (!urls) throw new NotFoundError(`browser session ${JSON.stringify(idOrName)} not found or ended`);
    return urls;
  }

  /** The id of the org's running session of this id or name, if there is one. */
  liveIdOf(org: OrgRecord, idOrName: string): string | undefined {
    const record = this.deps.store.data.sessions.find((s) => s.org_id === org.id && !s.deleted_at && (s.id === idOrName || s.name === idOrName));
    return record && this.liveSession(record.id) ? record.id : undefined;
  }

  /** The live session for a CDP or live-view connection, if it still runs. */
  liveSession(id: string): LiveSession | undefined {
    const s = this.live.get(id);
    return s && !s.isStopping ? s : undefined;
  }

  /** The org's active sessions that match, as API objects (an invocation's browsers). */
  listWhere(org: OrgRecord, match: (r: SessionRecord) => boolean): BrowserSession[] {
    return this.deps.store.data.sessions.filter((s) => s.org_id === org.id && !s.deleted_at && match(s)).map((r) => this.view.of(r));
  }

  /** Ends the active sessions that match (an invocation's browsers when it ends); how many. */
  async endWhere(match: (r: SessionRecord) => boolean, reason: string): Promise<number> {
    const ids = this.deps.store.data.sessions.filter((s) => !s.deleted_at && match(s)).map((s) => s.id);
    await Promise.all(ids.map((id) => this.end(id, reason)));
    return ids.length;
  }

  /**
   * The daemon is stopping: no create starts, launches under way are cancelled (their boxes
   * stop) and the clock stops, so nothing waits on a browser that would only be ended.
   */
  stopping(): void {
    this.closing = true;
    this.giveUp.abort();
    this.stopLaunches.abort();
    this.clock.stop();
  }

  /** Ends every live session (daemon stop); each is soft-deleted with the given reason. */
  async endAll(reason: string): Promise<void> {
    this.stopping();
    // Creates already launching finish first, so their browsers are ended too, not orphaned.
    await Promise.allSettled([...this.launching]);
    await Promise.all([...this.live.keys()].map((id) => this.end(id, reason)));
    await this.settled();
  }

  /**
   * Ends a session: it reads as deleted, its jwts stop working and its clients are cut off before
   * this resolves (the CDP relay closes its connections on the daemon's word, within moments, as
   * the answer goes out); closing Chromium (Browser.close first, so cookies and profiles are
   * flushed), saving a profile and removing directories go on in the background (`settled()`
   * waits for them). Idempotent; concurrent callers share one end.
   */
  async end(id: string, reason: string): Promise<void> {
    const session = this.live.get(id);
    if (session) {
      this.live.delete(id);
      this.clock.forget(id);
      this.track(this.teardown(session, reason));
    }
    const record = this.deps.store.data.sessions.find((s) => s.id === id);
    if (record && !record.deleted_at) {
      await this.deps.store.update(() => {
        record.deleted_at = new Date().toISOString();
        record.end_reason = reason;
      });
      for (const listener of this.endListeners) listener(record);
      this.changed();
    }
  }

  /** Resolves once every teardown begun so far (and those they start) has finished. */
  async settled(): Promise<void> {
    while (this.teardowns.size) await Promise.allSettled([...this.teardowns]);
  }

  private track(work: Promise<unknown>): void {
    const tracked = work.finally(() => this.teardowns.delete(tracked));
    this.teardowns.add(tracked);
  }

  /** The background half of end(): the processes stop, then the record forgets where they ran. */
  private async teardown(session: LiveSession, reason: string): Promise<void> {
    try {
      const { graceful, keptDisk } = await session.stop();
      if (keptDisk) {
        // Its runtime stays on the record: the next start finishes what the disk still holds.
        this.view.forget(session.record.id);
        this.deps.log('session ended; its disk is kept for the next start', { session: session.id, reason, graceful });
        return;
      }
      await this.retire(session.record);
      this.deps.log('session ended', { session: session.id, reason, graceful });
    } catch (err) {
      this.deps.log('session teardown failed', { session: session.id, reason, error: String(err), stack: (err as Error).stack });
    }
  }

  /**
   * Ended sessions whose processes are gone leave the state document for the history. Until then
   * a record keeps its runtime, so a daemon that crashes mid-teardown finds what it left.
   */
  private async retire(record: SessionRecord): Promise<void> {
    delete record.runtime;
    this.view.forget(record.id);
    await this.deps.store.retire('sessions', [record], this.deps.history);
  }

  private find(org: OrgRecord, idOrName: string, includeDeleted: boolean): SessionRecord {
    const all = includeDeleted ? this.deps.history.allWith(this.deps.store.data.sessions) : this.deps.store.data.sessions;
    const mine = all.filter((s) => s.org_id === org.id && (includeDeleted || !s.deleted_at));
    // A live session wins over deleted ones of the same name.
    const record =
      mine.find((s) => s.id === idOrName) ?? mine.find((s) => s.name === idOrName && !s.deleted_at) ?? mine.findLast((s) => s.name === idOrName);
    if (record) return record;
    // An ended session is still told apart from a typo, for as long as its record is kept.
    const ended = includeDeleted ? undefined : this.endedRecord(org, idOrName);
    throw new NotFoundError(ended ? `browser session ${idOrName} ${howEnded(ended)}` : `browser session ${idOrName} not found`);
  }

  /** The org's ended session of that id (or the newest of that name), from the history. */
  private endedRecord(org: OrgRecord, idOrName: string): SessionRecord | undefined {
    const ended = this.deps.history.allWith(this.deps.store.data.sessions).filter((s) => s.org_id === org.id && s.deleted_at);
    return ended.find((s) => s.id === idOrName) ?? ended.findLast((s) => s.name === idOrName);
  }

  /** The spec's viewport rules; anything unsupported is a 400 listing what is. */
  private checkedViewport(input?: { width: number; height: number; refresh_rate?: number }): Viewport {
    const viewport = resolveViewport(input && { width: input.width, height: input.height, refresh_rate: input.refresh_rate });
    if (!viewport) {
      throw BadRequestError.field('viewport', `unsupported viewport; supported: ${SUPPORTED_VIEWPORTS_TEXT}`);
    }
    return viewport;
  }

  private assertNameFree(org: OrgRecord, name: string): void {
    const taken =
      this.pendingNames.has(`${org.id}/${name}`) ||
      this.deps.store.data.sessions.some((s) => s.org_id === org.id && !s.deleted_at && s.name === name);
    if (taken) {
      throw new ConflictError(`an active browser session named ${name} already exists`);
    }
  }
}

async function releaseAll(launches: FeatureLaunch[]): Promise<void> {
  await Promise.allSettled(launches.map(async (l) => l.release?.()));
}

/** How and when a session ended, in words for its 404 (its end_reason, as the manager and its wings set it). */
export function howEnded(record: Pick<SessionRecord, 'end_reason' | 'deleted_at' | 'timeout_seconds'>): string {
  const at = record.deleted_at ? ` at ${record.deleted_at}` : '';
  switch (record.end_reason) {
    case 'timeout':
      return `ended after ${record.timeout_seconds} s without a client${at}`;
    case 'deleted':
      return `was deleted${at}`;
    case 'browser_exited':
      return `ended${at}: its browser exited`;
    case 'daemon_stop':
      return `ended${at}: the daemon stopped`;
    case 'agent_ended':
      return `ended${at}: the MCP connection that held it ended`;
    case 'released':
      return `ended${at}: it was released to its pool`;
    case undefined:
      return `ended${at}`;
    default:
      return `ended${at} (${record.end_reason.replace(/_/g, ' ')})`;
  }
}
