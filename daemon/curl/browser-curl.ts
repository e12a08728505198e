import { ApiError, BadRequestError, ServiceUnavailableError } from '../../src/errors.js';
import { CdpClient } from '../cdp/cdp-client.js';

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

/**
 * An HTTP request made by the session's browser itself (Kernel's browser curl): its cookie jar (a
 * response's Set-Cookie lands in it), proxy, TLS stack and default headers. A hidden page of the
 * default browser context (no client lists or auto-attaches it) navigates to the URL; the Fetch
 * domain rewrites that request into the asked one before it leaves (method, headers, body) and
 * captures the final response (redirects are followed) instead of letting the page load it.
 */
export async function browserCurl(wsUrl: string, req: CurlRequest): Promise<CurlResponse> {
  try {
    return await curlThroughBrowser(wsUrl, req);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    // The browser refusing a command is the session's condition, not a fault of the daemon.
    throw new ServiceUnavailableError(`${req.url}: the browser could not make the request (${err instanceof Error ? err.message : String(err)})`);
  }
}

async function curlThroughBrowser(wsUrl: string, req: CurlRequest): Promise<CurlResponse> {
  const started = Date.now();
  const cdp = await CdpClient.connect(wsUrl);
  try {
    // A page whose navigation never starts is held by a client that was leaving as it was made
    // (its auto-attach paused the page, and nobody will let it run): a new page is made instead.
    for (let attempt = 1; ; attempt++) {
      const response = await throughPage(cdp, req, started, attempt < STALL_ATTEMPTS ? STALL_MS : undefined);
      if (response) return response;
    }
  } finally {
    cdp.close();
  }
}

/** One hidden page's try: the response, or null when its request did not start within stallMs. */
async function throughPage(cdp: CdpClient, req: CurlRequest, started: number, stallMs: number | undefined): Promise<CurlResponse | null> {
  let targetId: string | undefined;
  try {
    ({ targetId } = await cdp.send('Target.createTarget', { url: 'about:blank', background: true, hidden: true }));
    const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true });
    const send = (method: string, params: object = {}) => cdp.send(method, params, sessionId);
    let rewritten = false;
    let requestStarted!: () => void;
    const began = new Promise<void>((r) => (requestStarted = r));
    const outcome = new Promise<CurlResponse>((resolve, reject) => {
      cdp.on('Network.loadingFailed', (p: { errorText: string; canceled?: boolean }, from) => {
        if (from === sessionId) reject(new ServiceUnavailableError(`${req.url}: the browser could not fetch it (${p.errorText})`));
      });
      cdp.on('Fetch.requestPaused', (p: RequestPaused, from) => {
        if (from !== sessionId) return;
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
          resolve({ status: p.responseStatusCode, headers: responseHeaders, body, durationMs: Date.now() - started });
          // The page's own fetch gets nothing: it was only the vehicle.
          await send('Fetch.failRequest', { requestId: p.requestId, errorReason: 'Aborted' }).catch(() => {});
        })().catch(reject);
      });
    });
    // It may still fail after the timeout answered: nobody waits for it then.
    outcome.catch(() => {});
    await send('Network.enable');
    await send('Fetch.enable', { patterns: [{ urlPattern: '*', requestStage: 'Request' }, { urlPattern: '*', requestStage: 'Response' }] });
    // A navigation the browser itself starts (as if typed): first-party, so every cookie of the site
    // goes out (SameSite=Strict ones too) and a Set-Cookie is kept; the Fetch domain turns it into
    // the asked request, and the page never renders the answer.
    void send('Page.navigate', { url: req.url }).catch(() => {});
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
      return await Promise.race([
        outcome,
        after(started + req.timeoutMs - Date.now(), () => {
          throw new ServiceUnavailableError(`${req.url}: no answer within timeout_ms (${req.timeoutMs} ms)`);
        }),
        ...(stallMs === undefined ? [] : [Promise.race([began.then(() => new Promise<never>(() => {})), after(stallMs, () => null)])]),
      ]);
    } finally {
      timers.forEach(clearTimeout);
    }
  } finally {
    if (targetId) await cdp.send('Target.closeTarget', { targetId }).catch(() => {});
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
