import type { CurlBody, CurlResult } from '../../../src/api/curl.js';
import { browserCurl, curlUrl, CURL_DEFAULT_TIMEOUT_MS } from '../../curl/browser-curl.js';
import type { LiveSession } from '../../sessions/live-session.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { HandlerGroup } from '../handlers.js';

async function curl(session: LiveSession, body: CurlBody): Promise<CurlResult> {
  const release = session.hold('api');
  try {
    const r = await browserCurl(session.chromium.wsUrl, {
      url: curlUrl('url', body.url),
      method: body.method ?? 'GET',
      headers: body.headers ?? {},
      ...(body.body !== undefined ? { body: Buffer.from(body.body) } : {}),
      timeoutMs: body.timeout_ms ?? CURL_DEFAULT_TIMEOUT_MS,
    });
    return { status: r.status, headers: r.headers, body: r.body.toString(body.response_encoding === 'base64' ? 'base64' : 'utf8'), duration_ms: r.durationMs };
  } finally {
    release();
  }
}

export function curlHandlers(sessions: SessionManager): HandlerGroup<'browserCurl' | 'sessionCurl'> {
  return {
    browserCurl: ({ org, params, body }) => sessions.withSession(org, params.id, (s) => curl(s, body)),
    sessionCurl: async ({ query, body }) => curl(await sessions.sessionForToken(query.jwt, 'cdp'), body),
  };
}
