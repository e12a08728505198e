import type { BrowserSession, LiveView as LiveViewUrls } from '../../src/api/browsers.js';
import type { SessionFeature } from './features.js';
import { CDP_PATH, WEBDRIVER_PATH } from './gateway-paths.js';
import type { SessionRecord } from './record.js';
import type { SessionTokens, TokenScope } from './tokens.js';

interface Jwts {
  cdp: string;
  live: string;
  view: string;
}

export interface SessionViewDeps {
  tokens: Pick<SessionTokens, 'sign'>;
  /** Origin clients reach the daemon at, e.g. http://127.0.0.1:7331. */
  publicUrl: () => string;
  /** What the features add to a session's object (its profile, proxy, telemetry...). */
  features: readonly SessionFeature[];
}

/**
 * A session as the API shows it: its object, its URLs and the jwts in them. The jwts of a session
 * that is an organization's are made once and held until it ends; an ended one's are made again
 * from its record when it is shown (they no longer open anything).
 */
export class SessionView {
  private readonly jwts = new Map<string, Jwts>();

  constructor(private readonly deps: SessionViewDeps) {}

  /** Issues the jwts of a session that is now an organization's (a standby browser has none). */
  async sign(record: SessionRecord): Promise<void> {
    this.jwts.set(record.id, await this.derive(record));
  }

  /** The session ended (or was never stored): its jwts stop being the ones it holds. */
  forget(id: string): void {
    this.jwts.delete(id);
  }

  /** Whether this is the very jwt of that scope the session was issued. */
  issued(id: string, scope: TokenScope, jwt: string | undefined | null): boolean {
    return jwt !== undefined && jwt !== null && this.jwts.get(id)?.[scope as keyof Jwts] === jwt;
  }

  /** The read-only live view's jwt of a running session. */
  viewToken(id: string): string | undefined {
    return this.jwts.get(id)?.view;
  }

  /** A running session's live view URLs, or undefined when it holds no jwts (not an organization's, or ended). */
  liveView(id: string, headless: boolean): LiveViewUrls | undefined {
    const jwts = this.jwts.get(id);
    if (!jwts) return undefined;
    return { url: this.liveUrl(jwts.live), read_only_url: this.liveUrl(jwts.view, true), kind: headless ? 'screencast' : 'vnc' };
  }

  /** The gateway URL of a running session's browser (its cdp_ws_url), for the daemon's own clients that must go through it. */
  cdpUrl(record: SessionRecord): string {
    return this.of(record).cdp_ws_url;
  }

  /**
   * The same gateway URL as programs inside the session's box reach it (the Playwright runner,
   * the BiDi mapper): the daemon's port on the box's loopback, which its agent forwards here.
   */
  cdpUrlInBox(record: SessionRecord): string {
    const url = new URL(this.cdpUrl(record));
    url.hostname = '127.0.0.1';
    return url.toString();
  }

  /** A session as the API shows it, its jwts derived again if it has left memory (ended). */
  async present(r: SessionRecord): Promise<BrowserSession> {
    return this.of(r, this.jwts.get(r.id) ?? (await this.derive(r)));
  }

  /** A session as the API shows it; one not yet retired (every running one) has its jwts at hand. */
  of(r: SessionRecord, jwts = this.jwts.get(r.id)!): BrowserSession {
    const ws = this.deps.publicUrl().replace(/^http/, 'ws');
    return {
      session_id: r.id,
      created_at: r.created_at,
      cdp_ws_url: `${ws}${CDP_PATH}?jwt=${jwts.cdp}`,
      webdriver_ws_url: `${ws}${WEBDRIVER_PATH}?jwt=${jwts.cdp}`,
      // The SDK routes curl (and browser.fetch) to base_url + /curl with the jwt, as to a Kernel VM.
      base_url: `${this.deps.publicUrl()}/browser/${r.id}`,
      ...(r.headless ? {} : { browser_live_view_url: this.liveUrl(jwts.live) }),
      headless: r.headless,
      stealth: r.stealth,
      timeout_seconds: r.timeout_seconds,
      kiosk_mode: r.kiosk_mode,
      viewport: r.viewport,
      ...(r.persistence ? { persistence: r.persistence } : {}),
      ...(r.proxy_id ? { proxy_id: r.proxy_id } : {}),
      ...(r.deleted_at ? { deleted_at: r.deleted_at } : {}),
      ...(r.name !== undefined ? { name: r.name } : {}),
      ...(r.tags ? { tags: r.tags } : {}),
      ...(r.start_url ? { start_url: r.start_url } : {}),
      ...(r.invocation_id ? { invocation_id: r.invocation_id } : {}),
      ...(r.pool ? { pool: r.pool } : {}),
      // Kernel's session usage: the time it has run (until it ended).
      usage: { uptime_ms: Math.max(0, (r.deleted_at ? Date.parse(r.deleted_at) : Date.now()) - Date.parse(r.created_at)) },
      ...Object.assign({}, ...this.deps.features.map((f) => f.view?.(r) ?? {})),
    };
  }

  private liveUrl(jwt: string, readOnly = false): string {
    return `${this.deps.publicUrl()}/browser/live?jwt=${jwt}${readOnly ? '&readOnly=true' : ''}`;
  }

  private async derive(record: SessionRecord): Promise<Jwts> {
    const at = new Date(record.created_at);
    const [cdp, live, view] = await Promise.all([
      this.deps.tokens.sign(record.id, record.org_id, 'cdp', at),
      this.deps.tokens.sign(record.id, record.org_id, 'live', at),
      this.deps.tokens.sign(record.id, record.org_id, 'view', at),
    ]);
    return { cdp, live, view };
  }
}
