import { Type, type Static } from 'typebox';
import { IdParamsSchema, JwtQuerySchema } from './schemas.js';
import type { RouteDef } from './route-def.js';

// Browser curl (Kernel's browsers.curl): an HTTP request made by the session's browser itself.

export const CurlBodySchema = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 16384, description: 'Absolute http(s) URL' }),
    method: Type.Optional(
      Type.Union(
        ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].map((m) => Type.Literal(m)),
        { default: 'GET' },
      ),
    ),
    headers: Type.Optional(
      Type.Record(Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", maxLength: 256 }), Type.String({ maxLength: 16384 }), {
        additionalProperties: false,
        description: "Merged over the browser's own request headers (Cookie, Host and Content-Length stay the browser's)",
      }),
    ),
    body: Type.Optional(Type.String({ maxLength: 16 * 1024 * 1024, description: 'Request body (POST, PUT, PATCH)' })),
    response_encoding: Type.Optional(Type.Union([Type.Literal('utf8'), Type.Literal('base64')], { default: 'utf8' })),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 300_000, default: 30_000 })),
  },
  { additionalProperties: false },
);
export type CurlBody = Static<typeof CurlBodySchema>;

export const CurlResultSchema = Type.Object({
  status: Type.Integer(),
  headers: Type.Record(Type.String(), Type.Array(Type.String()), { description: 'Multi-valued, names lower-case' }),
  body: Type.String({ description: 'UTF-8 text, or base64 with response_encoding: base64' }),
  duration_ms: Type.Integer(),
});
export type CurlResult = Static<typeof CurlResultSchema>;

export const CurlRawQuerySchema = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 16384 }),
  jwt: Type.Optional(Type.String()),
  timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 300_000 })),
});

/** browser.fetch's raw curl, one route per method it sends: the request and the answer pass through as they are. */
const rawCurl = <M extends 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'>(method: M) =>
  ({
    method,
    url: '/browser/curl/raw',
    auth: 'session-jwt',
    summary: `browser.fetch(): ${method} made by the session's browser; the target's status, headers and body pass through`,
    tag: 'browsers',
    querystring: CurlRawQuerySchema,
    success: { status: 200, body: null },
    produces: 'application/octet-stream',
    proxied: true,
    hidden: true,
  }) as const satisfies RouteDef;

export const curlRoutes = {
  sessionCurlRawGet: rawCurl('GET'),
  sessionCurlRawPost: rawCurl('POST'),
  sessionCurlRawPut: rawCurl('PUT'),
  sessionCurlRawPatch: rawCurl('PATCH'),
  sessionCurlRawDelete: rawCurl('DELETE'),
  browserCurl: {
    method: 'POST',
    url: '/browsers/:id/curl',
    auth: 'key',
    summary:
      "An HTTP request made by the session's browser itself: its cookie jar (Set-Cookie lands in it), proxy, TLS stack and default headers; redirects followed; 16 MiB at most (413), timeout_ms (503)",
    tag: 'browsers',
    params: IdParamsSchema,
    body: CurlBodySchema,
    success: { status: 200, body: CurlResultSchema },
  },
  sessionCurl: {
    method: 'POST',
    url: '/browser/curl',
    auth: 'session-jwt',
    summary: 'browserCurl for the session named by the jwt: where the official SDK sends it (base_url + /curl)',
    tag: 'browsers',
    querystring: JwtQuerySchema,
    body: CurlBodySchema,
    success: { status: 200, body: CurlResultSchema },
    hidden: true,
  },
} as const satisfies Record<string, RouteDef>;
