import { ApiError, BadRequestError, ServiceUnavailableError } from '../../../src/errors.js';
import { within } from '../../lib/procs.js';
import type { DevToolsEndpoint } from '../../browser/chromium.js';
import { CdpClient } from '../../browser/cdp-client.js';
import type { LiveSession, ServiceKind } from '../../sessions/live-session.js';

/** The largest response body a curl answers (413 beyond). */
export const CURL_BODY_MAX = 16 * 1024 * 1024;
export const CURL_DEFAULT_TIMEOUT_MS = 30_000;
/** A hidden page whose request has not started after this is given up for a new one, up to STALL_ATTEMPTS pages. */
const STALL_MS = 1500;
const STALL_ATTEMPTS = 3;

export interface CurlRequest {
  url: string;
  method: string;
  /** Merged over the browser's own request headers. */
  headers: Record<string, string>;
  body?: Buffer;
  timeoutMs: number;
}

export interface CurlResponse {
  status: number;
  /** Multi-valued, names lower-case. */
  headers: Record<string, string[]>;
  body: Buffer;
  durationMs: number;
}

interface RequestPaused {
  requestId: string;
  request: { url: string; method: string; headers: Record<string, string> };
  responseStatusCode?: number;
  responseHeaders?: { name: string; value: string }[];
  networkId?: string;
}

/** Headers the browser's network stack owns: a client's value for them is not sent. */
const BROWSER_OWNED = new Set(['host', 'content-length', 'connection', 'cookie', 'transfer-encoding', 'keep-alive', 'upgrade', 'te', 'trailer']);

/** Hidden pages kept per session: concurrent requests beyond them wait for one. */
const MAX_PAGES = 4;
/** How long an answered request's page may take to end its own load before it is closed instead of reused. */
const REUSE_WAIT_MS = 2000;

/** A hidden page of the default browser context, its CDP session, and the request it carries now. */
interface CurlPage {
  targetId: string;
  sessionId: string;
  job?: {
    paused(p: RequestPaused): void;
    failed(networkId: string, errorText: string): void;
  };
}

/**
 * HTTP requests made by a session's browser itself (Kernel's browser curl): its cookie jar (a
 * response's Set-Cookie lands in it), proxy, TLS stack and default headers. A hidden page of the
 * default browser context (no client lists or auto-attaches it) navigates to the URL; the Fetch
 * domain rewrites that request into the asked one before it leaves (method, headers, body) and
 * captures the final response (redirects are followed) instead of letting the page load it.
 *
 * One per session, owned by it: its CDP connection and hidden pages are kept between requests
 * (a new page, its renderer and its Network and Fetch domains cost about 40 ms of a 55 ms
 * request), up to MAX_PAGES for concurrent ones. A page whose request went wrong is closed, not
 * reused; a restarted browser gets a new connection.
 */
export class BrowserCurl {
  private cdp?: { browser: DevToolsEndpoint; client: Promise<CdpClient> };
  private readonly idle: CurlPage[] = [];
  private readonly pages = new Map<string, CurlPage>();
  /** Requests waiting for a page, woken when one is given back or closed. */
  private readonly waiting: (() => void)[] = [];
  private creating = 0;
  private closed = false;

  /** The browser's own CDP endpoint now (it changes when the browser restarts in place). */
  constructor(private readonly browser: () => DevToolsEndpoint) {}

  async request(req: CurlRequest): Promise<CurlResponse> {
    const started = Date.now();
    try {
      // A page whose navigation never starts is held by a client that was leaving as it was made
      // (its auto-attach paused the page, and nobody will let it run): a new page is made instead.
      for (let attempt = 1; ; attempt++) {
        const response = await this.onPage(req, started, attempt < STALL_ATTEMPTS ? STALL_MS : undefined);
        if (response) return response;
      }
    } catch (err) {
      if (err instanceof ApiError) throw err;
      // The browser refusing a command is the session's condition, not a fault of the daemon.
      throw new ServiceUnavailableError(`${req.url}: the browser could not make the request (${err instanceof Error ? err.message : String(err)})`);
    }
  }

  /** The session ended: the connection goes (its pages go with the browser). */
  stop(): void {
    this.closed = true;
    for (const wake of this.waiting.splice(0)) wake();
    void this.cdp?.client.then(
      (c) => c.close(),
      () => {},
    );
  }

  private async connection(): Promise<CdpClient> {
    const browser = this.browser();
    const current = this.cdp && this.cdp.browser === browser ? await this.cdp.client.catch(() => undefined) : undefined;
    if (current && !current.closed) return current;
    if (this.closed) throw new ServiceUnavailableError('the session is ending');
    // A new browser (or a lost connection): its pages are gone with the old one.
    this.idle.length = 0;
    this.pages.clear();
    const client = CdpClient.connect(browser).then((c) => {
      c.on('Fetch.requestPaused', (p: RequestPaused, sessionId) => sessionId && this.pages.get(sessionId)?.job?.paused(p));
      c.on(
        'Network.loadingFailed',
        (p: { requestId: string; errorText: string }, sessionId) => sessionId && this.pages.get(sessionId)?.job?.failed(p.requestId, p.errorText),
      );
      return c;
    });
    this.cdp = { browser, client };
    return client;
  }

  /** An idle page, a new one while fewer than MAX_PAGES exist, or the next one given back. */
  private async acquire(cdp: CdpClient): Promise<CurlPage> {
    for (;;) {
      if (this.closed) throw new ServiceUnavailableError('the session is ending');
      const page = this.idle.pop();
      if (page) return page;
      if (this.pages.size + this.creating < MAX_PAGES) return this.create(cdp);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  private async create(cdp: CdpClient): Promise<CurlPage> {
    this.creating++;
    const page: CurlPage = { targetId: '', sessionId: '' };
    try {
      ({ targetId: page.targetId } = await cdp.send('Target.createTarget', { url: 'about:blank', background: true, hidden: true }));
      ({ sessionId: page.sessionId } = await cdp.send('Target.attachToTarget', { targetId: page.targetId, flatten: true }));
      this.pages.set(page.sessionId, page);
      await cdp.send('Network.enable', {}, page.sessionId);
      await cdp.send(
        'Fetch.enable',
        {
          patterns: [
            { urlPattern: '*', requestStage: 'Request' },
            { urlPattern: '*', requestStage: 'Response' },
          ],
        },
        page.sessionId,
      );
      return page;
    } catch (err) {
      if (page.targetId) await this.discard(cdp, page);
      throw err;
    } finally {
      this.creating--;
    }
  }

  private release(page: CurlPage): void {
    page.job = undefined;
    this.idle.push(page);
    this.waiting.shift()?.();
  }

  private async discard(cdp: CdpClient, page: CurlPage): Promise<void> {
    page.job = undefined;
    this.pages.delete(page.sessionId);
    await cdp.send('Target.closeTarget', { targetId: page.targetId }).catch(() => {});
    // Someone waiting for a page may now make one.
    this.waiting.shift()?.();
  }

  /** One page's try: the response, or null when its request did not start within stallMs. */
  private async onPage(req: CurlRequest, started: number, stallMs: number | undefined): Promise<CurlResponse | null> {
    const cdp = await this.connection();
    const page = await this.acquire(cdp);
    const send = (method: string, params: object = {}) => cdp.send(method, params, page.sessionId);
    let rewritten = false;
    let settled = false;
    // This request's network ids: a page's earlier request (aborted once answered) may still report its end.
    const ours = new Set<string>();
    let answered = false;
    // The abort of the page's own load once the answer is in: the page is reused after it.
    let aborted: Promise<unknown> = Promise.resolve();
    let navigated: Promise<unknown> = Promise.resolve();
    let requestStarted!: () => void;
    const began = new Promise<void>((r) => (requestStarted = r));
    const outcome = new Promise<CurlResponse>((resolve, reject) => {
      page.job = {
        failed: (networkId, errorText) => {
          if (ours.has(networkId) && !answered) reject(new ServiceUnavailableError(`${req.url}: the browser could not fetch it (${errorText})`));
        },
        paused: (p) => {
          if (p.networkId) ours.add(p.networkId);
          requestStarted();
          void (async () => {
            if (p.responseStatusCode === undefined) {
              // The first request becomes the one asked for; a redirect's follow-up stays the browser's.
              if (rewritten) return void (await send('Fetch.continueRequest', { requestId: p.requestId }));
              rewritten = true;
              const headers = { ...p.request.headers };
              for (const [name, value] of Object.entries(req.headers)) {
                for (const k of Object.keys(headers)) if (k.toLowerCase() === name.toLowerCase()) delete headers[k];
                if (!BROWSER_OWNED.has(name.toLowerCase())) headers[name] = value;
              }
              return void (await send('Fetch.continueRequest', {
                requestId: p.requestId,
                method: req.method,
                headers: Object.entries(headers).map(([name, value]) => ({ name, value })),
                ...(req.body ? { postData: req.body.toString('base64') } : {}),
              }));
            }
            const responseHeaders: Record<string, string[]> = {};
            for (const { name, value } of p.responseHeaders ?? []) (responseHeaders[name.toLowerCase()] ??= []).push(value);
            const redirect = p.responseStatusCode >= 300 && p.responseStatusCode < 400 && responseHeaders.location;
            if (redirect) return void (await send('Fetch.continueRequest', { requestId: p.requestId }));
            const length = Number(responseHeaders['content-length']?.[0] ?? 0);
            if (length > CURL_BODY_MAX) throw tooLarge();
            const bodiless = req.method === 'HEAD' || [204, 205, 304].includes(p.responseStatusCode);
            const body = bodiless ? Buffer.alloc(0) : await responseBody(send, p.requestId);
            if (body.length > CURL_BODY_MAX) throw tooLarge();
            // The page's own fetch gets nothing: it was only the vehicle (its load fails, which is
            // no failure of the answer).
            answered = true;
            aborted = send('Fetch.failRequest', { requestId: p.requestId, errorReason: 'Aborted' }).catch(() => {});
            resolve({ status: p.responseStatusCode, headers: responseHeaders, body, durationMs: Date.now() - started });
          })().catch(reject);
        },
      };
    });
    // It may still fail after the timeout answered: nobody waits for it then.
    outcome.catch(() => {});
    const timers: NodeJS.Timeout[] = [];
    const after = <T>(ms: number, value: () => T) =>
      new Promise<T>((resolve, reject) =>
        timers.push(
          setTimeout(() => {
            try {
              resolve(value());
            } catch (err) {
              reject(err);
            }
          }, ms),
        ),
      );
    try {
      // A navigation the browser itself starts (as if typed): first-party, so every cookie of the
      // site goes out (SameSite=Strict ones too) and a Set-Cookie is kept; the Fetch domain turns
      // it into the asked request, and the page never renders the answer.
      // Its answer comes once the load is over (aborted, below): the page is reused only after it,
      // or the next navigation may never start.
      navigated = send('Page.navigate', { url: req.url }).catch(() => {});
      const result = await Promise.race([
        outcome,
        after(started + req.timeoutMs - Date.now(), () => {
          throw new ServiceUnavailableError(`${req.url}: no answer within timeout_ms (${req.timeoutMs} ms)`);
        }),
        ...(stallMs === undefined ? [] : [Promise.race([began.then(() => new Promise<never>(() => {})), after(stallMs, () => null)])]),
      ]);
      settled = result !== null;
      return result;
    } finally {
      timers.forEach(clearTimeout);
      // Only a page whose request ended as asked is reused; one that stalled, failed or timed out
      // may still be busy.
      if (settled && (await within(REUSE_WAIT_MS, Promise.all([aborted, navigated])))) this.release(page);
      else await this.discard(cdp, page);
    }
  }
}

async function responseBody(send: (method: string, params?: object) => Promise<any>, requestId: string): Promise<Buffer> {
  const { body, base64Encoded } = (await send('Fetch.getResponseBody', { requestId })) as { body: string; base64Encoded: boolean };
  return Buffer.from(body, base64Encoded ? 'base64' : 'utf8');
}

const tooLarge = () => new ApiError(413, 'payload_too_large', `the response is larger than ${CURL_BODY_MAX / 1024 ** 2} MiB`);

/** A URL curl may fetch: absolute http(s). */
export function curlUrl(field: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw BadRequestError.field(field, 'must be an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw BadRequestError.field(field, 'must be an http or https URL');
  return url.href;
}

const newCurl: ServiceKind<BrowserCurl> = (session) => new BrowserCurl(() => session.chromium);

/** HTTP requests made by this session's browser (its hidden pages are kept between them). */
export const curlOf = (session: LiveSession): BrowserCurl => {
  session.requireHiddenPages('browser curl');
  return session.service(newCurl);
};
