import { randomBytes } from 'node:crypto';
import type {
  CreateAuthConnectionBody,
  ListAuthConnectionsQuery,
  LoginAuthConnectionBody,
  LoginResponse,
  ManagedAuth,
  SubmitAuthConnectionBody,
  TimelineEvent,
  TimelineQuery,
  UpdateAuthConnectionBody,
} from '../../src/api/auth-connections.js';
import type { CreateBrowserBody } from '../../src/api/browsers.js';
import { BadRequestError, ConflictError, NotFoundError } from '../../src/errors.js';
import { newId } from '../../src/ids.js';
import { withActivePage, type PageSend } from '../browser/cdp-page.js';
import type { OrgRecord } from '../lib/owned-records.js';
import { paginate, type ListPage } from '../lib/paging.js';
import type { EventStream } from '../lib/sse.js';
import type { Store } from '../lib/state/store.js';
import type { Credentials } from '../org/credentials/credentials.js';
import type { SessionManager } from '../sessions/manager.js';
import { LoginFlow, type FlowView } from './login-flow.js';
import { scanPage } from './login-page.js';

type Settings = Required<
  Pick<
    CreateAuthConnectionBody,
    'allowed_domains' | 'auto_reauth' | 'health_checks' | 'health_check_interval' | 'record_session' | 'save_credentials'
  >
> &
  Pick<CreateAuthConnectionBody, 'login_url' | 'credential' | 'proxy' | 'browser' | 'browser_telemetry'>;

export interface ConnectionRecord extends Settings {
  id: string;
  org_id: string;
  /** The owner (an organization's project) the connection was made in, for the health checks that run with no request. */
  owner: OrgRecord;
  /** The organization itself, whose /org/limits counts the connection. */
  organization_id: string;
  domain: string;
  profile_name: string;
  status: 'AUTHENTICATED' | 'NEEDS_AUTH';
  /** Whether a login ever succeeded: re-auth needs one. */
  logged_in_once: boolean;
  last_auth_check_at?: string;
  /** The last successful login: health checks count their interval from it too. */
  last_login_at?: string;
  post_login_url?: string;
  created_at: string;
  updated_at: string;
  flow?: FlowView;
  /** Newest last; at most TIMELINE_MAX. */
  timeline: TimelineEvent[];
}

declare module '../lib/state/store.js' {
  interface State {
    auth_connections: ConnectionRecord[];
  }
}

const TIMELINE_MAX = 200;
const FLOW_SECONDS = 600;
const DEFAULT_HEALTH_INTERVAL = 3600;
/** A health check that cannot load the site in this long says nothing about the login. */
const HEALTH_CHECK_MS = 30_000;

/** RBROWSE_AUTH_MIN_HEALTH_CHECK_SECONDS: Kernel's smallest interval (an Enterprise plan's 300 s) unless set. */
export function minHealthCheckSeconds(env = process.env): number {
  const raw = env.RBROWSE_AUTH_MIN_HEALTH_CHECK_SECONDS;
  if (raw === undefined || raw === '') return 300;
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw new Error(`RBROWSE_AUTH_MIN_HEALTH_CHECK_SECONDS must be a whole number of seconds, at least 1 (got ${raw})`);
  return Number(raw);
}

export interface AuthConnectionsDeps {
  store: Store;
  sessions: SessionManager;
  credentials: Credentials;
  /** Makes the profile of this name if the organization has none. */
  ensureProfile: (org: OrgRecord, name: string) => Promise<void>;
  /** Starts recording a replay of the session; its id. */
  record: (org: OrgRecord, sessionId: string) => Promise<string>;
  minHealthCheckSeconds: number;
  log: (msg: string, extra?: object) => void;
}

/**
 * Kernel's managed auth: connections that keep a profile logged into a domain. A login runs as a
 * LoginFlow in a headless browser session of the organization with the profile (saved when the
 * session ends); its live view is where a person completes it. Health checks load the login page
 * with the profile, and a page that shows no login form means the profile is still logged in.
 */
export class AuthConnections {
  private readonly flows = new Map<string, { flow: LoginFlow; org: OrgRecord; followers: Set<EventStream> }>();
  /** Handoff codes of logins (Kernel's handoff_code): each leads to its hosted URL once. */
  private readonly handoffs = new Map<string, { url: string; expires: number }>();
  private readonly healthTimers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly deps: AuthConnectionsDeps) {
    deps.store.collection('auth_connections');
    deps.sessions.onSessionEnd((session) => {
      for (const { flow } of this.flows.values())
        if (flow.view.browser_session_id === session.id) flow.end('FAILED', 'browser_session_ended', "the login's browser session ended");
    });
  }

  /** After a restart: a flow that was in progress has lost its browser; health checks resume. */
  async start(): Promise<void> {
    await this.deps.store.update((s) => {
      for (const c of s.auth_connections) {
        if (c.flow?.status === 'IN_PROGRESS') {
          Object.assign(c.flow, {
            status: 'FAILED',
            step: 'COMPLETED',
            error_code: 'daemon_restarted',
            error_message: 'the daemon stopped during the login',
          });
          this.timelineOf(c, c.flow);
        }
      }
    });
    for (const c of this.deps.store.data.auth_connections) this.scheduleHealthCheck(c);
  }

  async create(org: OrgRecord, body: CreateAuthConnectionBody): Promise<ManagedAuth> {
    const domain = normalizeDomain(body.domain);
    this.checkSettings(org, body);
    const exists = () =>
      this.deps.store.data.auth_connections.some((c) => c.org_id === org.id && c.domain === domain && c.profile_name === body.profile_name);
    if (exists()) throw new ConflictError(`an auth connection for profile ${JSON.stringify(body.profile_name)} and ${domain} already exists`);
    await this.deps.ensureProfile(org, body.profile_name);
    const now = new Date().toISOString();
    const record: ConnectionRecord = {
      id: newId(),
      org_id: org.id,
      owner: { id: org.id, name: org.name, created_at: org.created_at },
      // A request's scope is its project's owner; the organization is behind it.
      organization_id: (org as OrgRecord & { org_id?: string }).org_id ?? org.id,
      domain,
      profile_name: body.profile_name,
      allowed_domains: (body.allowed_domains ?? []).map(normalizeDomain),
      auto_reauth: body.auto_reauth ?? true,
      health_checks: body.health_checks ?? true,
      health_check_interval: body.health_check_interval ?? DEFAULT_HEALTH_INTERVAL,
      record_session: body.record_session ?? false,
      save_credentials: body.save_credentials ?? true,
      ...(body.login_url ? { login_url: body.login_url } : {}),
      ...(body.credential ? { credential: body.credential } : {}),
      ...(body.proxy ? { proxy: body.proxy } : {}),
      ...(body.browser ? { browser: body.browser } : {}),
      ...(body.browser_telemetry !== undefined ? { browser_telemetry: body.browser_telemetry } : {}),
      status: 'NEEDS_AUTH',
      logged_in_once: false,
      created_at: now,
      updated_at: now,
      timeline: [],
    };
    await this.deps.store.update((s) => {
      if (exists()) throw new ConflictError(`an auth connection for profile ${JSON.stringify(body.profile_name)} and ${domain} already exists`);
      s.auth_connections.push(record);
    });
    return this.view(record);
  }

  /** How many connections the organization has (its /org/limits). */
  countOf(orgId: string): number {
    return this.deps.store.data.auth_connections.filter((c) => c.organization_id === orgId).length;
  }

  list(org: OrgRecord, q: ListAuthConnectionsQuery): ListPage<ManagedAuth> {
    const query = q.query?.toLowerCase();
    const mine = this.deps.store.data.auth_connections.filter(
      (c) =>
        c.org_id === org.id &&
        (q.domain === undefined || c.domain === normalizeDomain(q.domain)) &&
        (q.profile_name === undefined || c.profile_name === q.profile_name) &&
        (query === undefined || c.id === q.query || c.domain.includes(query) || c.profile_name.toLowerCase().includes(query)),
    );
    return paginate(mine, q, (c) => this.view(c));
  }

  get(org: OrgRecord, id: string): ManagedAuth {
    return this.view(this.find(org, id));
  }

  async update(org: OrgRecord, id: string, body: UpdateAuthConnectionBody): Promise<ManagedAuth> {
    const record = this.find(org, id);
    this.checkSettings(org, body);
    const { login_url, allowed_domains, ...rest } = body;
    // Checked before the change: a bad domain must not leave the other settings half applied.
    const domains = allowed_domains?.map(normalizeDomain);
    await this.deps.store.update(() => {
      Object.assign(record, rest, { updated_at: new Date().toISOString() });
      if (domains) record.allowed_domains = domains;
      if (login_url !== undefined) {
        if (login_url) record.login_url = login_url;
        else delete record.login_url;
      }
    });
    this.scheduleHealthCheck(record);
    return this.view(record);
  }

  async delete(org: OrgRecord, id: string): Promise<void> {
    const record = this.find(org, id);
    this.flows.get(record.id)?.flow.end('CANCELED', 'connection_deleted', 'the auth connection was deleted');
    clearTimeout(this.healthTimers.get(record.id));
    this.healthTimers.delete(record.id);
    await this.deps.store.update((s) => void (s.auth_connections = s.auth_connections.filter((c) => c !== record)));
  }

  /** Starts a login (ending one in progress): in a browser with the profile, filled from the stored credential where it can be. */
  async login(org: OrgRecord, id: string, body: LoginAuthConnectionBody, type: 'LOGIN' | 'REAUTH' = 'LOGIN'): Promise<LoginResponse> {
    const record = this.find(org, id);
    this.flows.get(record.id)?.flow.end('CANCELED', 'superseded', 'a new login flow was started');
    const expiresAt = new Date(Date.now() + FLOW_SECONDS * 1000).toISOString();
    const browser = body.browser ?? record.browser;
    const proxy = this.proxySelection(org, body.proxy ?? browser?.proxy ?? record.proxy);
    const telemetry = body.browser_telemetry !== undefined ? body.browser_telemetry : (browser?.telemetry ?? record.browser_telemetry);
    const create: CreateBrowserBody = {
      headless: true,
      profile: { name: record.profile_name, save_changes: true },
      start_url: this.loginUrl(record),
      timeout_seconds: FLOW_SECONDS,
      ...(browser?.stealth !== undefined ? { stealth: browser.stealth } : {}),
      ...(proxy ? { proxy } : {}),
      ...(telemetry !== undefined ? { telemetry } : {}),
    };
    const session = await this.deps.sessions.create(org, create);
    const urls = await this.deps.sessions.liveView(org, session.session_id);
    const flow = new LoginFlow(
      {
        page: (run) => this.onPage(org, session.session_id, run),
        allowedHost: (host) => this.allowedHost(record, host),
        stored: () => this.storedCredential(org, record),
        changed: (view) => this.flowChanged(record, view),
        succeeded: (postLoginUrl, typed) => this.succeeded(org, record, session.session_id, postLoginUrl, typed),
      },
      { id: newId(), type, expires_at: expiresAt, browser_session_id: session.session_id, hosted_url: urls.url, live_view_url: urls.url },
    );
    const entry = { flow, org, followers: new Set<EventStream>() };
    // A login started while this one's browser launched: the later one wins, this one's loop ends its browser.
    this.flows.get(record.id)?.flow.end('CANCELED', 'superseded', 'a new login flow was started');
    this.flows.set(record.id, entry);
    const replayId =
      (body.record_session ?? record.record_session) ? await this.deps.record(org, session.session_id).catch(() => undefined) : undefined;
    this.flowChanged(record, flow.view, replayId);
    this.track(this.runFlow(org, record, entry, replayId));
    return {
      id: record.id,
      flow_type: type,
      flow_expires_at: expiresAt,
      hosted_url: urls.url,
      live_view_url: urls.url,
      handoff_code: this.handoff(urls.url, expiresAt),
    };
  }

  /** A one-time code for the hosted URL (Kernel's handoff_code), good until the flow would expire. */
  private handoff(url: string, expiresAt: string): string {
    const now = Date.now();
    for (const [code, h] of this.handoffs) if (h.expires <= now) this.handoffs.delete(code);
    const code = randomBytes(18).toString('base64url');
    this.handoffs.set(code, { url, expires: Date.parse(expiresAt) });
    return code;
  }

  /** Where a handoff code leads (its hosted URL), once. */
  redeemHandoff(code: string): string {
    const h = this.handoffs.get(code);
    this.handoffs.delete(code);
    if (!h || h.expires <= Date.now()) throw new NotFoundError('handoff code not found: unknown, used already or expired');
    return h.url;
  }

  /**
   * The session's proxy selection from a connection's: by id or by name, or by both when they name
   * the same proxy of the organization (Kernel's SDKs send both), then by its id.
   */
  private proxySelection<P extends { id?: string; name?: string; mode?: string }>(org: OrgRecord, p: P | undefined): P | { id: string } | undefined {
    if (p?.id === undefined || p.name === undefined) return p;
    const found = this.deps.store.data.proxies.find((x) => x.org_id === org.id && x.id === p.id);
    if (found && found.name !== p.name) {
      throw BadRequestError.field('proxy', `proxy ${p.id} is named ${JSON.stringify(found.name ?? '')}, not ${JSON.stringify(p.name)}`);
    }
    return { id: p.id };
  }

  submit(org: OrgRecord, id: string, body: SubmitAuthConnectionBody): { accepted: boolean } {
    const record = this.find(org, id);
    const entry = this.flows.get(record.id);
    if (!entry) throw new ConflictError('no login flow is in progress: start one with POST /auth/connections/{id}/login');
    entry.flow.submit(body);
    return { accepted: true };
  }

  /** The flow's state now and at each change; the stream ends when the flow does. */
  follow(org: OrgRecord, id: string, stream: EventStream): void {
    const record = this.find(org, id);
    const entry = this.flows.get(record.id);
    const view = entry?.flow.view ?? record.flow;
    if (!view) {
      stream.send({
        event: 'error',
        error: { code: 'not_found', message: 'no login flow has been started for this connection' },
        timestamp: new Date().toISOString(),
      });
      return stream.end();
    }
    stream.send(stateEvent(view));
    if (!entry || entry.flow.done) return stream.end();
    entry.followers.add(stream);
    stream.onClose(() => entry.followers.delete(stream));
  }

  timeline(org: OrgRecord, id: string, q: TimelineQuery): ListPage<TimelineEvent> {
    const events = this.find(org, id)
      .timeline.filter((e) => q.type === undefined || e.type === q.type)
      .slice()
      .reverse();
    return paginate(events, q);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.healthTimers.values()) clearTimeout(timer);
    this.healthTimers.clear();
    for (const { flow } of this.flows.values()) flow.end('CANCELED', 'daemon_stop', 'the daemon stopped');
    await Promise.allSettled([...this.running]);
  }

  private async runFlow(org: OrgRecord, record: ConnectionRecord, entry: { flow: LoginFlow }, replayId?: string): Promise<void> {
    const view = await entry.flow.run();
    // Ending the session saves the profile as far as the login got (a successful one ended it already).
    if (view.browser_session_id) await this.deps.sessions.delete(org, view.browser_session_id).catch(() => {});
    if (this.flows.get(record.id) === entry) this.flows.delete(record.id);
    this.flowChanged(record, view, replayId);
    this.scheduleHealthCheck(record);
  }

  /** The credential saved, the profile saved (its session ended) and the connection authenticated, in that order. */
  private async succeeded(
    org: OrgRecord,
    record: ConnectionRecord,
    sessionId: string,
    postLoginUrl: string,
    typed: Record<string, string>,
  ): Promise<void> {
    const saved = record.save_credentials && Object.keys(typed).length > 0 ? await this.saveCredential(org, record, typed) : false;
    await this.deps.sessions.delete(org, sessionId).catch(() => {});
    await this.deps.store.update(() => {
      record.status = 'AUTHENTICATED';
      record.logged_in_once = true;
      record.post_login_url = postLoginUrl;
      record.last_login_at = new Date().toISOString();
      if (saved && !record.credential) record.credential = { name: credentialNameOf(record) };
    });
  }

  private async saveCredential(org: OrgRecord, record: ConnectionRecord, typed: Record<string, string>): Promise<boolean> {
    try {
      await this.deps.credentials.saveValues(org, record.credential?.name ?? credentialNameOf(record), record.domain, typed);
      return true;
    } catch (err) {
      this.deps.log('managed auth could not save the credential', { connection: record.id, error: (err as Error).message });
      return false;
    }
  }

  private flowChanged(record: ConnectionRecord, view: FlowView, replayId?: string): void {
    if (!this.deps.store.data.auth_connections.includes(record)) return;
    void this.deps.store.update(() => {
      record.flow = { ...view };
      this.timelineOf(record, view, replayId);
    });
    const entry = this.flows.get(record.id);
    if (entry?.flow.view !== view) return;
    for (const stream of entry.followers) {
      stream.send(stateEvent(view));
      if (entry.flow.done) stream.end();
    }
  }

  /** The flow's event in the timeline, made on its first change and updated after. */
  private timelineOf(record: ConnectionRecord, view: FlowView, replayId?: string): void {
    let event = record.timeline.find((e) => e.id === view.id);
    if (!event) {
      event = { id: view.id, type: view.type === 'REAUTH' ? 'reauth' : 'login', status: view.status, timestamp: view.started_at };
      record.timeline.push(event);
      if (record.timeline.length > TIMELINE_MAX) record.timeline.splice(0, record.timeline.length - TIMELINE_MAX);
    }
    Object.assign(event, {
      status: view.status,
      step: view.step,
      updated_at: view.updated_at,
      ...(view.browser_session_id ? { browser_session_id: view.browser_session_id } : {}),
      ...(view.error_code ? { error_code: view.error_code, error_message: view.error_message ?? '' } : {}),
      ...(view.website_error ? { website_error: view.website_error } : {}),
      ...(replayId ? { replay_id: replayId } : {}),
    });
  }

  private scheduleHealthCheck(record: ConnectionRecord): void {
    clearTimeout(this.healthTimers.get(record.id));
    this.healthTimers.delete(record.id);
    if (this.closed || !record.health_checks || !record.logged_in_once) return;
    const last = Math.max(...[record.last_auth_check_at, record.last_login_at, record.updated_at].map((t) => (t ? Date.parse(t) : 0)));
    const due = Math.max(1000, last + record.health_check_interval * 1000 - Date.now());
    const timer = setTimeout(() => {
      this.healthTimers.delete(record.id);
      this.track(this.healthCheck(record));
    }, due);
    timer.unref();
    this.healthTimers.set(record.id, timer);
  }

  /**
   * Loads the login page with the profile (read only) in a headless browser: a page on the domain
   * with no login form is a profile still logged in. One that needs a login again is logged in
   * again with the stored credential when auto_reauth allows and one is there.
   */
  private async healthCheck(record: ConnectionRecord): Promise<void> {
    if (this.closed || this.flows.has(record.id) || !this.deps.store.data.auth_connections.includes(record)) return this.scheduleHealthCheck(record);
    const org = record.owner;
    const id = newId();
    const previous = record.status;
    let status: 'AUTHENTICATED' | 'NEEDS_AUTH' | undefined;
    let sessionId: string | undefined;
    try {
      const session = await this.deps.sessions.create(org, {
        headless: true,
        profile: { name: record.profile_name },
        start_url: this.loginUrl(record),
        timeout_seconds: 60,
        ...(record.browser?.stealth !== undefined ? { stealth: record.browser.stealth } : {}),
        ...((record.browser?.proxy ?? record.proxy) ? { proxy: this.proxySelection(org, record.browser?.proxy ?? record.proxy) } : {}),
      });
      sessionId = session.session_id;
      status = await this.loggedIn(org, sessionId, record);
    } catch (err) {
      this.deps.log('managed auth health check failed', { connection: record.id, error: (err as Error).message });
    } finally {
      if (sessionId) await this.deps.sessions.delete(org, sessionId).catch(() => {});
    }
    if (!status || !this.deps.store.data.auth_connections.includes(record)) return this.scheduleHealthCheck(record);
    const now = new Date().toISOString();
    await this.deps.store.update(() => {
      record.status = status;
      record.last_auth_check_at = now;
      record.timeline.push({
        id,
        type: 'health_check',
        status,
        timestamp: now,
        previous_status: previous,
        ...(sessionId ? { browser_session_id: sessionId } : {}),
      });
      if (record.timeline.length > TIMELINE_MAX) record.timeline.shift();
    });
    if (status === 'NEEDS_AUTH' && record.auto_reauth && this.canReauth(record).can) {
      await this.login(org, record.id, {}, 'REAUTH').catch((err) =>
        this.deps.log('managed auth re-auth did not start', { connection: record.id, error: (err as Error).message }),
      );
      return;
    }
    this.scheduleHealthCheck(record);
  }

  /** Looks until the page has loaded and shows the same verdict twice. */
  private async loggedIn(org: OrgRecord, sessionId: string, record: ConnectionRecord): Promise<'AUTHENTICATED' | 'NEEDS_AUTH' | undefined> {
    const until = Date.now() + HEALTH_CHECK_MS;
    let last: boolean | undefined;
    while (Date.now() < until) {
      const scan = await this.onPage(org, sessionId, scanPage).catch(() => undefined);
      if (scan?.ready) {
        const host = new URL(scan.url).hostname;
        const ok = scan.fields.length === 0 && this.allowedHost(record, host);
        if (ok === last) return ok ? 'AUTHENTICATED' : 'NEEDS_AUTH';
        last = ok;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    return undefined;
  }

  /** Runs on the active page of one of the organization's sessions (holding it active meanwhile). */
  private onPage<T>(org: OrgRecord, sessionId: string, run: (send: PageSend) => Promise<T>): Promise<T> {
    return this.deps.sessions.withSession(org, sessionId, (s) => withActivePage(s.chromium, run));
  }

  private track(p: Promise<unknown>): void {
    const tracked = p
      .catch((err) => this.deps.log('managed auth task failed', { error: (err as Error).message }))
      .finally(() => this.running.delete(tracked));
    this.running.add(tracked);
  }

  private async storedCredential(
    org: OrgRecord,
    record: ConnectionRecord,
  ): Promise<{ values: Record<string, string>; totpCode?: string } | undefined> {
    const name = record.credential?.name;
    if (!name) return undefined;
    return this.deps.credentials.secretsFor(org, name).catch(() => undefined);
  }

  private canReauth(record: ConnectionRecord): { can: boolean; reason: string } {
    if (!record.logged_in_once) return { can: false, reason: 'no_prior_successful_login' };
    const name = record.credential?.name;
    const exists = name && this.deps.store.data.credentials.some((c) => c.org_id === record.org_id && (c.name === name || c.id === name));
    return exists ? { can: true, reason: 'has_credential' } : { can: false, reason: 'no_credential' };
  }

  private checkSettings(org: OrgRecord, body: UpdateAuthConnectionBody): void {
    const c = body.credential;
    if (c && (c.provider !== undefined || c.path !== undefined || c.auto !== undefined)) {
      throw BadRequestError.field('credential', 'external credential providers are not supported here: give { name } of a stored credential');
    }
    if (c && !c.name) throw BadRequestError.field('credential', 'must give name');
    // An id and a name that name two proxies are refused now, not at the first login.
    this.proxySelection(org, body.proxy);
    if (c?.name && !this.deps.store.data.credentials.some((r) => r.org_id === org.id && (r.name === c.name || r.id === c.name))) {
      throw new NotFoundError(`credential ${JSON.stringify(c.name)} not found`);
    }
    if (body.health_check_interval !== undefined && body.health_check_interval < this.deps.minHealthCheckSeconds) {
      throw BadRequestError.field('health_check_interval', `must be at least ${this.deps.minHealthCheckSeconds} seconds`);
    }
    if (body.login_url) {
      let url: URL;
      try {
        url = new URL(body.login_url);
      } catch {
        throw BadRequestError.field('login_url', 'is not a URL');
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw BadRequestError.field('login_url', 'must be an http or https URL');
    }
  }

  private loginUrl(record: ConnectionRecord): string {
    return record.login_url ?? `https://${record.domain}/`;
  }

  private allowedHost(record: ConnectionRecord, host: string): boolean {
    const h = host.toLowerCase();
    const loginHost = record.login_url ? new URL(record.login_url).hostname : undefined;
    return [record.domain, ...record.allowed_domains, ...(loginHost ? [loginHost] : [])].some((d) => h === d || h.endsWith(`.${d}`));
  }

  private find(org: OrgRecord, id: string): ConnectionRecord {
    const record = this.deps.store.data.auth_connections.find((c) => c.org_id === org.id && c.id === id);
    if (!record) throw new NotFoundError(`auth connection ${JSON.stringify(id)} not found`);
    return record;
  }

  private view(c: ConnectionRecord): ManagedAuth {
    const live = this.flows.get(c.id)?.flow.view;
    const f = live ?? c.flow;
    const { can, reason } = this.canReauth(c);
    const inProgress = f?.status === 'IN_PROGRESS';
    return {
      id: c.id,
      domain: c.domain,
      profile_name: c.profile_name,
      record_session: c.record_session,
      save_credentials: c.save_credentials,
      status: c.status,
      allowed_domains: c.allowed_domains,
      auto_reauth: c.auto_reauth,
      health_checks: c.health_checks,
      health_check_interval: c.health_check_interval,
      ...(c.login_url ? { login_url: c.login_url } : {}),
      ...(c.credential ? { credential: c.credential } : {}),
      ...(c.proxy?.id ? { proxy_id: c.proxy.id } : {}),
      ...(c.browser ? { browser: c.browser } : {}),
      ...(c.browser_telemetry !== undefined ? { browser_telemetry: c.browser_telemetry } : {}),
      can_reauth: can,
      can_reauth_reason: reason,
      ...(c.last_auth_check_at ? { last_auth_check_at: c.last_auth_check_at, last_auth_at: c.last_auth_check_at } : {}),
      ...(c.post_login_url ? { post_login_url: c.post_login_url } : {}),
      flow_status: f?.status ?? null,
      flow_step: f?.step ?? null,
      flow_type: f?.type ?? null,
      flow_expires_at: inProgress ? f.expires_at : null,
      browser_session_id: inProgress ? f.browser_session_id : null,
      hosted_url: inProgress ? f.hosted_url : null,
      live_view_url: inProgress ? f.live_view_url : null,
      discovered_fields: f?.step === 'AWAITING_INPUT' ? f.discovered_fields : null,
      fields: f?.step === 'AWAITING_INPUT' ? f.fields : null,
      mfa_options: null,
      pending_sso_buttons: null,
      sign_in_options: null,
      choices: null,
      external_action_message: null,
      sso_provider: null,
      website_error: f?.website_error ?? null,
      error_code: f?.error_code ?? null,
      error_message: f?.error_message ?? null,
      interaction_id: f?.step === 'AWAITING_INPUT' ? (f.interaction_id ?? null) : null,
    };
  }
}

/** The credential a connection's successful logins are saved to when it names none. */
const credentialNameOf = (c: ConnectionRecord) => `managed-auth-${c.domain}-${c.profile_name}`.slice(0, 255);

/** Domains as Kernel takes them: host names, any case, perhaps with a scheme or path pasted in. */
function normalizeDomain(raw: string): string {
  const trimmed = raw.trim().toLowerCase();
  const host = /^[a-z][a-z0-9+.-]*:\/\//.test(trimmed) ? new URL(trimmed).hostname : trimmed.split('/')[0]!;
  if (!/^[a-z0-9.-]+$/.test(host) || host.startsWith('.') || host.endsWith('.'))
    throw BadRequestError.field('domain', 'must be a host name, such as github.com');
  return host;
}

function stateEvent(v: FlowView): { event: string } & Record<string, unknown> {
  return {
    event: 'managed_auth_state',
    timestamp: v.updated_at,
    flow_status: v.status,
    flow_step: v.step,
    flow_type: v.type,
    ...(v.status === 'IN_PROGRESS' && v.hosted_url ? { hosted_url: v.hosted_url, live_view_url: v.live_view_url } : {}),
    ...(v.step === 'AWAITING_INPUT' && v.discovered_fields
      ? { discovered_fields: v.discovered_fields, fields: v.fields, ...(v.interaction_id ? { interaction_id: v.interaction_id } : {}) }
      : {}),
    ...(v.website_error ? { website_error: v.website_error } : {}),
    ...(v.error_code ? { error_code: v.error_code, error_message: v.error_message } : {}),
    ...(v.post_login_url ? { post_login_url: v.post_login_url } : {}),
  };
}
