import type { CurlBody, CurlResult } from '../../../src/api/curl.js';
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../../src/errors.js';
import { curlUrl, CURL_BODY_MAX, CURL_DEFAULT_TIMEOUT_MS } from '../../in-session/curl/browser-curl.js';
import type { LiveSession } from '../../sessions/live-session.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { HandlerGroup } from '../handlers.js';
import { curlOf } from '../../in-session/curl/browser-curl.js';

async function curl(session: LiveSession, body: CurlBody): Promise<CurlResult> {
  const release = session.hold('api');
  try {
    const r = await curlOf(session).request({
      url: curlUrl('url', body.url),
      method: body.method ?? 'GET',
      headers: body.headers ?? {},
      ...(body.body !== undefined ? { body: Buffer.from(body.body) } : {}),
      timeoutMs: body.timeout_ms ?? CURL_DEFAULT_TIMEOUT_MS,
    });
    return {
      status: r.status,
      headers: r.headers,
      body: r.body.toString(body.response_encoding === 'base64' ? 'base64' : 'utf8'),
      duration_ms: r.durationMs,
    };
  } finally {
    release();
  }
}

/** Request headers that are the hop's own (or ours), not the target's. */
const NOT_FORWARDED = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'authorization',
  'content-type',
  'x-rbrowse-content-type',
  'keep-alive',
  'te',
  'upgrade',
]);
/**
 * What the SDKs add to every request of their own (x-stainless-* telemetry, X-Kernel-Project, a
 * `Kernel/JS 0.84.0` or `Kernel/Python` user agent): the request goes out as the browser's, with
 * its own user agent, not as the SDK's. A user agent the caller set itself is kept.
 */
function isSdkHeader(name: string, value: string | string[]): boolean {
  if (name.startsWith('x-stainless-') || name.startsWith('x-kernel-')) return true;
  return name === 'user-agent' && /^Kernel\//.test(String(value));
}

/** Response headers that describe Chromium's transfer, not the (decoded) body handed on. */
const NOT_RETURNED = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive']);

/** browser.fetch's raw form: the client's request made by the browser, the target's answer passed through. */
async function rawCurl(
  sessions: SessionManager,
  request: FastifyRequest,
  reply: FastifyReply,
  query: { url: string; jwt?: string; timeout_ms?: number },
) {
  const session = await sessions.sessionForToken(query.jwt, 'cdp');
  const release = session.hold('api');
  try {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (value !== undefined && !NOT_FORWARDED.has(name) && !isSdkHeader(name, value))
        headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const type = request.headers['x-rbrowse-content-type'];
    if (typeof type === 'string') headers['content-type'] = type;
    const body = request.body ? await readAll(request.body as Readable, CURL_BODY_MAX) : undefined;
    const r = await curlOf(session).request({
      url: curlUrl('url', query.url),
      method: request.method,
      headers,
      ...(body?.length ? { body } : {}),
      timeoutMs: query.timeout_ms ?? CURL_DEFAULT_TIMEOUT_MS,
    });
    reply.code(r.status);
    for (const [name, values] of Object.entries(r.headers)) if (!NOT_RETURNED.has(name)) reply.header(name, values.length === 1 ? values[0] : values);
    return r.body;
  } finally {
    release();
  }
}

async function readAll(stream: Readable, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) throw new ApiError(413, 'payload_too_large', `the request body is larger than ${max / 1024 ** 2} MiB`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

type CurlOps =
  | 'browserCurl'
  | 'sessionCurl'
  | 'sessionCurlRawGet'
  | 'sessionCurlRawPost'
  | 'sessionCurlRawPut'
  | 'sessionCurlRawPatch'
  | 'sessionCurlRawDelete';

export function curlHandlers(sessions: SessionManager): HandlerGroup<CurlOps> {
  const raw = ({
    request,
    reply,
    query,
  }: {
    request: FastifyRequest;
    reply: FastifyReply;
    query: { url: string; jwt?: string; timeout_ms?: number };
  }) => rawCurl(sessions, request, reply, query) as never;
  return {
    browserCurl: ({ org, params, body }) => sessions.withSession(org, params.id, (s) => curl(s, body)),
    sessionCurl: async ({ query, body }) => curl(await sessions.sessionForToken(query.jwt, 'cdp'), body),
    sessionCurlRawGet: raw,
    sessionCurlRawPost: raw,
    sessionCurlRawPut: raw,
    sessionCurlRawPatch: raw,
    sessionCurlRawDelete: raw,
  };
}
