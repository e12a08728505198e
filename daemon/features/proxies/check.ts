import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';

export interface CheckTarget {
  protocol: 'http' | 'https';
  host: string;
  port: number;
  username?: string;
  password?: string;
}

export interface CheckResult {
  available: boolean;
  /** Why, for the daemon's log: never shown with credentials. */
  reason: string;
}

/**
 * What a check without a URL asks for: only whether the proxy answers (anything but 407) matters,
 * not whether it reaches the target. A proxied GET gets an HTTP answer even where the proxy cannot
 * reach it (a 502, 503 or 404 page), where a refused CONNECT often just hangs up.
 */
const DEFAULT_URL = 'http://example.com/';
/** Statuses a proxy answers when it could not reach the target. */
const UNREACHED = new Set([502, 503, 504]);

/**
 * Asks the proxy for `url` (plain http: a proxied GET; https: a CONNECT tunnel), or without a URL
 * for a page whose answer only shows that the proxy answers and accepts the credentials.
 */
export function checkUpstream(
  proxy: CheckTarget,
  url: string | undefined,
  opts: { timeoutMs?: number; lookup?: LookupFunction; refused?: (address: string) => string | undefined } = {},
): Promise<CheckResult> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  // An address is connected to without a lookup: checked here, as a name is in the lookup.
  const refused = isIP(proxy.host) ? opts.refused?.(proxy.host) : undefined;
  if (refused) return Promise.resolve({ available: false, reason: refused });
  const target = new URL(url ?? DEFAULT_URL);
  const tunnel = target.protocol === 'https:';
  const headers: Record<string, string> = {};
  if (proxy.username !== undefined || proxy.password !== undefined) {
    headers['proxy-authorization'] = `Basic ${Buffer.from(`${proxy.username ?? ''}:${proxy.password ?? ''}`).toString('base64')}`;
  }
  const authority = `${target.hostname}:${target.port || (tunnel ? 443 : 80)}`;
  const request = (proxy.protocol === 'https' ? https : http).request({
    host: proxy.host,
    port: proxy.port,
    // The certificate is the proxy's, not the target's (Node would take the name from the Host header).
    servername: isIP(proxy.host) ? '' : proxy.host,
    method: tunnel ? 'CONNECT' : 'GET',
    path: tunnel ? authority : target.href,
    headers: { ...headers, host: authority },
    timeout: timeoutMs,
    agent: false,
    ...(opts.lookup ? { lookup: opts.lookup } : {}),
  });
  return new Promise((resolve) => {
    const judge = (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (status === 407) return { available: false, reason: 'the proxy refused the credentials (407)' };
      if (!url) return { available: true, reason: `the proxy answered ${status}` };
      const reached = tunnel ? status === 200 : !UNREACHED.has(status);
      return { available: reached, reason: `the proxy answered ${status} for ${target.origin}` };
    };
    const done = (result: CheckResult) => {
      request.destroy();
      resolve(result);
    };
    request.once('connect', (res, socket) => {
      socket.destroy();
      done(judge(res));
    });
    request.once('response', (res) => {
      res.resume();
      done(judge(res));
    });
    request.once('timeout', () => done({ available: false, reason: `no answer within ${timeoutMs} ms` }));
    request.on('error', (err) => done({ available: false, reason: err.message }));
    request.end();
  });
}
