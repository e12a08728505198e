import { guardedLookup, refusedAddress, type ReachPolicy } from '../../lib/reach.js';
import { X509Certificate } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { CheckProxyBody, CreateProxyBody, ListProxiesQuery, Proxy as ProxyAnswer, UpdateProxyBody } from '../../../src/api/proxies.js';
import type { BrowserProxySelection, BrowserSession, CreateBrowserBody, UpdateBrowserBody } from '../../../src/api/browsers.js';
import { ApiError, BadRequestError, NotFoundError } from '../../../src/errors.js';
import { MANAGED_POLICIES, PROXY_CA_POLICY_FILE } from '../../box/box-spec.js';
import { newId } from '../../../src/ids.js';
import { paginate, type ListPage } from '../../lib/paging.js';
import type { FeatureLaunch, LaunchContext, SessionFeature } from '../../sessions/features.js';
import { findByIdOrName, type OrgRecord } from '../../lib/owned-records.js';
import type { SessionRecord } from '../../sessions/record.js';
import type { Store } from '../../lib/state/store.js';
import { checkUpstream } from './check.js';
import { SessionForwarder } from './forwarder.js';
import { ProxySecrets } from './secrets.js';
import { upstreamFor, type Upstream } from './upstream.js';

/** A custom proxy; its password, when it has one, is kept apart (ProxySecrets). */
export interface ProxyRecord {
  id: string;
  org_id: string;
  type: 'custom';
  name?: string;
  protocol: 'http' | 'https';
  created_at: string;
  config: { host: string; port: number; username?: string; has_password: boolean };
  bypass_hosts?: string[];
  status?: 'available' | 'unavailable';
  last_checked?: string;
  /** config.ca_bundle's certificates, DER in base64 (Chrome's CACertificates policy takes them so). */
  ca_certificates?: string[];
  /** The proxy server's address as its last check resolved it (a host given as a name). */
  ip_address?: string;
}

/** The certificates of a PEM bundle, each checked to be one, as DER in base64; a 400 otherwise. */
function caCertificates(pem: string): string[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (!blocks.length) throw BadRequestError.field('config.ca_bundle', 'holds no PEM certificate (-----BEGIN CERTIFICATE-----)');
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block).raw.toString('base64');
    } catch (err) {
      throw BadRequestError.field('config.ca_bundle', `certificate ${i + 1} cannot be read: ${(err as Error).message}`);
    }
  });
}

declare module '../../lib/state/store.js' {
  interface State {
    proxies: ProxyRecord[];
  }
}

export interface ProxiesDeps {
  store: Store;
  /** The daemon's credentials directory; passwords go to its `proxies/` subdirectory. */
  credentialsDir: string;
  log: (msg: string, extra?: object) => void;
  /**
   * The default proxy of stealth sessions (RBROWSE_STEALTH_PROXY), as Kernel routes them through
   * a managed ISP proxy: used by a stealth session without a proxy of its own unless a PATCH
   * with `disable_default_proxy` says direct.
   */
  stealthProxy?: Upstream;
  /** What sessions may reach: the forwarder's direct connections and an organization's proxies are held to it, as is a proxy check. */
  reach: ReachPolicy;
}

/** RBROWSE_STEALTH_PROXY: `http://` or `https://`, optional user:password, host and port. */
export function parseStealthProxy(value: string | undefined): Upstream | undefined {
  if (!value) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`RBROWSE_STEALTH_PROXY is not a URL (http://[user:password@]host:port)`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.port || url.pathname !== '/') {
    throw new Error(`RBROWSE_STEALTH_PROXY must be http://[user:password@]host:port or https://..., with its port`);
  }
  const protocol = url.protocol === 'https:' ? 'https' : 'http';
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const username = url.username ? decodeURIComponent(url.username) : undefined;
  return {
    ...upstreamFor({ protocol, host, port: Number(url.port), username }, url.password ? decodeURIComponent(url.password) : undefined),
    trusted: true,
  };
}

/**
 * Upstream proxies (Kernel's `custom` type), and the session feature that gives every session a
 * local forwarding proxy (SessionForwarder) routed through the session's proxy, if any.
 * A PATCH swaps or removes the upstream live; a proxy a live session routes through, or a pool is
 * configured with, or a managed-auth connection uses, cannot be deleted (400 resource_in_use, as Kernel answers).
 */
export class Proxies implements SessionFeature {
  private readonly secrets: ProxySecrets;
  /** Session id -> the proxy its forwarder routes through now (launching sessions included). */
  private readonly routes = new Map<string, string>();
  /** Session id -> its forwarder, from launch to release (a standby hand-over routes it). */
  private readonly forwarders = new Map<string, SessionForwarder>();

  constructor(private readonly deps: ProxiesDeps) {
    deps.store.collection('proxies');
    this.secrets = new ProxySecrets(join(deps.credentialsDir, 'proxies'));
  }

  async create(org: OrgRecord, body: CreateProxyBody): Promise<ProxyAnswer> {
    const { type, name, protocol = 'http', bypass_hosts, config = {} } = body;
    if (type !== 'custom') {
      throw BadRequestError.field('type', `${type} proxies need Kernel's managed network; only custom proxies (your own proxy server) work here`);
    }
    const { host, port, username, password, ca_bundle, ...managedOnly } = config;
    const foreign = Object.keys(managedOnly)[0];
    if (foreign) throw BadRequestError.field(`config.${foreign}`, "applies to Kernel's managed proxy types, not to custom");
    if (host === undefined) throw BadRequestError.field('config.host', 'is required for a custom proxy');
    if (port === undefined) throw BadRequestError.field('config.port', 'is required for a custom proxy');
    const record: ProxyRecord = {
      id: newId(),
      org_id: org.id,
      type,
      ...(name !== undefined ? { name: name.trim() } : {}),
      protocol,
      created_at: new Date().toISOString(),
      config: { host, port, ...(username !== undefined ? { username } : {}), has_password: password !== undefined },
      ...(bypass_hosts ? { bypass_hosts } : {}),
      ...(ca_bundle !== undefined ? { ca_certificates: caCertificates(ca_bundle) } : {}),
    };
    if (password !== undefined) await this.secrets.write(record.id, password);
    await this.deps.store.update((s) => void s.proxies.push(record));
    return this.toApi(record);
  }

  list(org: OrgRecord, q: ListProxiesQuery): ListPage<ProxyAnswer> {
    const name = q.name?.trim();
    const text = q.query?.toLowerCase();
    const matches = this.deps.store.data.proxies.filter(
      (p) =>
        p.org_id === org.id &&
        (!name || (p.name !== undefined && p.name.localeCompare(name, undefined, { sensitivity: 'base' }) === 0)) &&
        (!text || p.id === q.query || [p.name ?? '', p.config.host].some((v) => v.toLowerCase().includes(text))),
    );
    return paginate(matches, q, (p) => this.toApi(p));
  }

  get(org: OrgRecord, id: string): ProxyAnswer {
    return this.toApi(this.find(org, id));
  }

  async update(org: OrgRecord, id: string, body: UpdateProxyBody): Promise<ProxyAnswer> {
    const record = this.find(org, id);
    await this.deps.store.update(() => void (record.name = body.name.trim()));
    return this.toApi(record);
  }

  async delete(org: OrgRecord, id: string): Promise<void> {
    const record = this.find(org, id);
    const sessions = [...this.routes].filter(([, proxy]) => proxy === record.id).map(([session]) => session);
    const pools = this.deps.store.data.pools.filter((p) => p.org_id === org.id && p.config.proxy_id === record.id);
    const names = (p: { id?: string; name?: string; mode?: string } | undefined) =>
      p !== undefined && (p.id === record.id || (p.id === undefined && p.name !== undefined && p.name === record.name));
    const connections = this.deps.store.data.auth_connections.filter((c) => c.org_id === org.id && (names(c.proxy) || names(c.browser?.proxy)));
    const users = [
      ...(sessions.length ? [`live session(s) ${sessions.join(', ')}`] : []),
      ...(pools.length ? [`browser pool(s) ${pools.map((p) => p.config.name ?? p.id).join(', ')}`] : []),
      ...(connections.length ? [`auth connection(s) ${connections.map((c) => c.id).join(', ')}`] : []),
    ];
    // Kernel's answer to deleting a proxy in use: 400 resource_in_use.
    if (users.length) {
      throw new ApiError(
        400,
        'resource_in_use',
        `proxy ${id} is in use by ${users.join(' and ')}; remove it from them first ` +
          '(PATCH /browsers/{id}, /browser_pools/{id} or /auth/connections/{id}) or end them',
      );
    }
    await this.deps.store.update((s) => void (s.proxies = s.proxies.filter((p) => p !== record)));
    await this.secrets.remove(record.id);
  }

  /** POST /proxies/{id}/check: the proxy's health; stored only for a check without a URL, as Kernel does. */
  async healthCheck(org: OrgRecord, id: string, body: CheckProxyBody): Promise<ProxyAnswer> {
    const record = this.find(org, id);
    const { protocol, config } = record;
    const password = config.has_password ? await this.secrets.read(record.id) : undefined;
    // The daemon connects to the proxy alone (the target is the proxy's to reach), and only where a session could.
    const result = await checkUpstream({ protocol, ...config, password }, body.url, {
      lookup: guardedLookup(this.deps.reach),
      refused: (address) => refusedAddress(address, this.deps.reach),
    });
    const health = { status: result.available ? 'available' : 'unavailable', last_checked: new Date().toISOString() } as const;
    this.deps.log('proxy checked', { proxy: record.id, url: body.url, status: health.status, reason: result.reason });
    const resolved = isIP(config.host)
      ? undefined
      : await lookup(config.host).then(
          (r) => r.address,
          () => undefined,
        );
    if (!body.url) await this.deps.store.update(() => void Object.assign(record, health, resolved ? { ip_address: resolved } : {}));
    return { ...this.toApi(record), ...health };
  }

  // --- SessionFeature: the proxy of POST /browsers, pools and PATCH /browsers/{id} ---

  check(org: OrgRecord, body: CreateBrowserBody): void {
    const selected = body.proxy && this.selected(org, body.proxy, body.proxy_id);
    if (selected?.id) body.proxy_id = selected.id;
    if (body.proxy_id) this.find(org, body.proxy_id);
  }

  checkUpdate(org: OrgRecord, _record: SessionRecord, body: UpdateBrowserBody): void {
    const selected = body.proxy && this.selected(org, body.proxy, body.proxy_id);
    if (selected) {
      // A mode leaves the selected proxy; direct also leaves a stealth session's default.
      body.proxy_id = selected.id ?? '';
      if (selected.mode) body.disable_default_proxy = selected.mode === 'direct';
    }
    if (body.proxy_id) this.find(org, body.proxy_id);
  }

  /** Kernel's `proxy` object: a proxy by id or by name (its id), or a mode; with proxy_id too, both must agree. */
  private selected(org: OrgRecord, proxy: BrowserProxySelection, proxyId: string | null | undefined): { id?: string; mode?: 'direct' | 'default' } {
    const id = proxy.id ?? (proxy.name !== undefined ? findByIdOrName(this.deps.store.data.proxies, org, proxy.name, 'proxy').id : undefined);
    if (proxyId && proxyId !== id) throw BadRequestError.field('proxy', 'names another proxy than proxy_id (send one of them)');
    return id ? { id } : { mode: proxy.mode };
  }

  /** The resolved proxy of a session, as Kernel answers it: the selected one, else its egress mode. */
  view(record: SessionRecord): Partial<BrowserSession> {
    const proxy = record.proxy_id ? this.deps.store.data.proxies.find((p) => p.id === record.proxy_id) : undefined;
    if (proxy) return { proxy: { id: proxy.id, ...(proxy.name ? { name: proxy.name } : {}) } };
    return { proxy: { mode: record.disable_default_proxy ? 'direct' : 'default' } };
  }

  /** A session created with a proxy that has a CA bundle: its browser reads the CA from a policy at launch. */
  needsLaunch(body: CreateBrowserBody): boolean {
    return this.caOf(body) !== undefined;
  }

  private caOf(body: CreateBrowserBody): string[] | undefined {
    const proxy = body.proxy_id ? this.deps.store.data.proxies.find((p) => p.id === body.proxy_id) : undefined;
    return proxy?.ca_certificates;
  }

  /** Every session gets a forwarder, so a PATCH can add a proxy to a session created without one. */
  async launch(ctx: LaunchContext): Promise<FeatureLaunch> {
    const { record } = ctx;
    const ca = this.caOf(ctx.body);
    if (ca) {
      // Chrome's CACertificates policy: the proxy's CA is trusted for this browser alone. A
      // chrome_policy of the session's own that sets it too keeps its certificates.
      const own = ctx.body.chrome_policy?.CACertificates;
      const certificates = [...(Array.isArray(own) ? own : []), ...ca];
      await ctx.files.write(`${MANAGED_POLICIES}/${PROXY_CA_POLICY_FILE}`, Readable.from([JSON.stringify({ CACertificates: certificates })]));
    }
    const forwarder = await SessionForwarder.start(ctx.box, this.deps.reach);
    const session = record.id;
    this.forwarders.set(session, forwarder);
    try {
      await this.handOver(ctx);
    } catch (err) {
      this.routes.delete(session);
      this.forwarders.delete(session);
      await forwarder.close();
      throw err;
    }
    return {
      args: [`--proxy-server=${forwarder.proxyServer}`],
      // The headless shell reads few policies, the CA's not among them.
      ...(ca ? { fullBrowser: true } : {}),
      update: async (patch) => {
        if (typeof patch.disable_default_proxy === 'boolean') record.disable_default_proxy = patch.disable_default_proxy;
        // null or omitted: unchanged; "": no proxy of its own from now on (a stealth session's
        // default, or direct). The record's org, not the launch's: a standby browser is launched
        // before it belongs to anyone.
        if (typeof patch.proxy_id === 'string') {
          const proxy = patch.proxy_id === '' ? undefined : this.find({ id: record.org_id }, patch.proxy_id);
          await this.routeSession(forwarder, session, proxy, this.defaultFor(record));
        } else if (typeof patch.disable_default_proxy === 'boolean' && !record.proxy_id) {
          forwarder.route(this.defaultFor(record));
        }
      },
      // An ended session no longer holds its proxy, though its forwarder runs until Chromium is gone.
      stopping: () => void this.routes.delete(session),
      release: async () => {
        this.routes.delete(session);
        this.forwarders.delete(session);
        await forwarder.close();
      },
    };
  }

  /** Routes the session's forwarder through the body's proxy, if it names one, else a stealth session's default. */
  async handOver({ org, body, record }: LaunchContext): Promise<undefined> {
    const forwarder = this.forwarders.get(record.id);
    if (!forwarder) return undefined;
    if (!body.proxy_id) {
      if (body.proxy?.mode === 'direct') record.disable_default_proxy = true;
      forwarder.route(this.defaultFor(record));
      return undefined;
    }
    await this.routeSession(forwarder, record.id, this.find(org, body.proxy_id));
    record.proxy_id = body.proxy_id;
    return undefined;
  }

  /** The upstream of a session without a proxy of its own: the stealth default, unless it was disabled. */
  private defaultFor(record: SessionRecord): Upstream | undefined {
    return record.stealth && !record.disable_default_proxy ? this.deps.stealthProxy : undefined;
  }

  private async routeSession(forwarder: SessionForwarder, session: string, proxy: ProxyRecord | undefined, fallback?: Upstream): Promise<void> {
    // Claimed before the password is read, so a concurrent delete sees the proxy in use.
    const previous = this.routes.get(session);
    if (proxy) this.routes.set(session, proxy.id);
    else this.routes.delete(session);
    let upstream: Upstream | undefined;
    try {
      upstream = proxy && (await this.upstreamOf(proxy));
    } catch (err) {
      if (previous) this.routes.set(session, previous);
      else this.routes.delete(session);
      throw err;
    }
    forwarder.route(upstream ?? fallback);
  }

  private async upstreamOf(proxy: ProxyRecord): Promise<Upstream> {
    const password = proxy.config.has_password ? await this.secrets.read(proxy.id) : undefined;
    return upstreamFor({ protocol: proxy.protocol, ...proxy.config, bypass_hosts: proxy.bypass_hosts }, password);
  }

  private find(org: Pick<OrgRecord, 'id'>, id: string): ProxyRecord {
    const record = this.deps.store.data.proxies.find((p) => p.id === id && p.org_id === org.id);
    if (!record) throw new NotFoundError(`proxy ${id} not found`);
    return record;
  }

  private toApi(record: ProxyRecord): ProxyAnswer {
    const { org_id: _org, ca_certificates, ip_address, ...proxy } = record;
    const address = isIP(record.config.host) ? record.config.host : ip_address;
    return {
      ...proxy,
      config: { ...proxy.config, has_ca_bundle: ca_certificates !== undefined },
      ...(address ? { ip_address: address } : {}),
    };
  }
}
