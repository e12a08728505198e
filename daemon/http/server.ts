import multipart from '@fastify/multipart';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import qs from 'qs';
import fastJson from 'fast-json-stringify';
import { Type, type TSchema } from 'typebox';
import { routes, type OperationId, type RouteDef } from '../../src/api/routes.js';
import { ErrorBodySchema } from '../../src/api/schemas.js';
import type { Duplex } from 'node:stream';
import { ApiError, BadRequestError, NotFoundError, ServiceUnavailableError, UnauthorizedError } from '../../src/errors.js';
import { refuseOnSocket } from './upgrades.js';
import { type ConnectionGuard, createFrontDoorServer, type FrontDoorLimits, type HostCheck } from './front-door.js';
import { VERSION } from '../../src/version.js';
import type { Auth } from '../org/auth.js';
import type { ApiKeyRecord } from '../org/key-record.js';
import type { OrgRecord } from '../lib/owned-records.js';
import type { ProjectHeaders, Scope } from '../org/projects.js';
import { toErrorReply } from './errors.js';
import { formDoc } from './form-doc.js';
import { lazily, lazyValidator } from '../lib/validators.js';
import type { Handlers } from './handlers.js';
import type { AnsweredRequest } from '../org/audit/answered-request.js';

declare module 'fastify' {
  interface FastifyRequest {
    org: Scope | null;
    /** The key the caller authenticated with (on `key` routes). */
    apiKey: ApiKeyRecord | null;
    /** When the request reached the daemon (wall clock, ms): the audit log's timestamp. */
    receivedAt: number;
  }
  interface FastifyContextConfig {
    /** base-url: a session's sub-resource under its base_url, with the session's jwt (see baseUrlTwin). */
    auth?: RouteDef['auth'] | 'base-url';
  }
}

export interface ServerDeps {
  auth: Auth;
  /** The request's scope: its organization's project named by the header, the key or the default. */
  scopeFor: (org: OrgRecord, key: ApiKeyRecord, projectHeaders: ProjectHeaders) => Promise<Scope>;
  handlers: Handlers;
  log: (msg: string, extra?: object) => void;
  /** Called after each answered request an organization made (not admin, jwt or public ones). */
  answered?: (r: AnsweredRequest) => void;
  /** Timeouts of the HTTP server (daemon/http/front-door.ts). */
  limits: FrontDoorLimits;
  /** Caps its open connections. */
  connections: ConnectionGuard;
  /** Which Host names are served (DNS rebinding). */
  hosts: HostCheck;
  /** The MCP endpoint (/mcp, behind the API key): daemon/http/mcp.ts. */
  mcp?: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /** The session a jwt (a session's cdp jwt) names, and the scope it acts in: its owner's project. */
  jwtScope: (jwt: string | undefined) => Promise<{ sessionId: string; scope: Scope }>;
}

/** Where a session's sub-resources are served again under the shared base_url (`/browser`), as on a Kernel VM. */
const BASE_URL_PREFIX = '/browser/';
/**
 * A session's own base_url (`/browser/<session id>`), as Kernel gives each browser an address of
 * its own and its newer SDKs key their routes (and token refreshes) by it. A session id is 24
 * lowercase letters and digits, a letter first: no name the shared prefix serves looks like one.
 */
const SESSION_BASE_PARAM = ':base_session(^[a-z][a-z0-9]{23}$)';

type Twin = { url: string; querystring?: TSchema; auth: RouteDef['auth'] | 'base-url' };

/**
 * A session's sub-resource route (`/browsers/:id/fs/read_file`) as the SDKs reach it under the
 * session's base_url (`/browser/fs/read_file?jwt=`, KERNEL_BROWSER_ROUTING_SUBRESOURCES): the
 * same schema and handler, the session named by the jwt instead of the path and the key.
 */
function baseUrlTwin(route: RouteDef): Twin | undefined {
  const m = /^\/browsers\/:id\/(.+)$/.exec(route.url);
  if (!m || route.auth !== 'key') return undefined;
  const query = route.querystring as (TSchema & { properties?: Record<string, TSchema>; additionalProperties?: unknown }) | undefined;
  const querystring = Type.Object(
    { ...(query?.properties ?? {}), jwt: Type.Optional(Type.String({ maxLength: 4096 })) },
    query && query.additionalProperties === false ? { additionalProperties: false } : {},
  );
  return { url: `${BASE_URL_PREFIX}${m[1]}`, querystring, auth: 'base-url' };
}

/** The same call under a session's own base_url: `/browser/<id>/fs/read_file?jwt=`, the jwt's session only. */
function sessionBaseTwin(route: RouteDef, shared: Twin | undefined): Twin | undefined {
  const url = shared?.url ?? route.url;
  if (!url.startsWith(BASE_URL_PREFIX) || (!shared && route.auth !== 'session-jwt')) return undefined;
  return { ...(shared ?? { auth: route.auth }), url: `${BASE_URL_PREFIX}${SESSION_BASE_PARAM}/${url.slice(BASE_URL_PREFIX.length)}` };
}

/**
 * Bodies are validated without type coercion (a string "60" for an integer is a 400); query
 * strings and path parameters arrive as text, so they are coerced.
 */
function makeValidators() {
  const base = { useDefaults: true, removeAdditional: false, withFormats: true } as const;
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) =>
    lazyValidator(schema, { ...base, coerceTypes: httpPart === 'body' ? false : 'array' });
}

/** The request's Bearer token (an API key, or the admin token). */
export function bearer(req: FastifyRequest): string | undefined {
  const header = req.headers.authorization;
  const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return m?.[1];
}

/**
 * Refuses (400, naming the media type wanted, as the form routes always have) a body that is not
 * of the route's one media type; no body and no type pass.
 */
function requireMediaType(request: FastifyRequest, consumes: string): void {
  const type = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  const hasBody = request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
  if (type === consumes || (!type && !hasBody)) return;
  throw new BadRequestError(`the body must be ${consumes}; the request sent ${type ?? 'a body without a content type'}`);
}

/** A refused body up to this size is read and dropped, so its sender gets the answer. */
const DRAIN_REFUSED_BODY_MAX = 64 * 1024 * 1024;

export async function buildServer(deps: ServerDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    serverFactory: (handler) => {
      const server = createFrontDoorServer(deps.limits, deps.connections.serving(handler));
      deps.connections.attach(server);
      return server;
    },
    bodyLimit: 1024 * 1024,
    forceCloseConnections: true,
    // Fastify's own 503 and 400 bodies are not kernel-wire's: both are answered below instead.
    return503OnClosing: false,
    clientErrorHandler: answerClientError,
    routerOptions: {
      ignoreTrailingSlash: true,
      ignoreDuplicateSlashes: true,
      // OpenAPI's deepObject style, as the SDKs send it (`?tags[team]=backend`): one level of nesting.
      querystringParser: (query) => qs.parse(query, { depth: 1, parameterLimit: 1000 }),
    },
  });
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (req) => {
    // Read now, not worked out at the answer from Date.now() less the elapsed time: onResponse
    // hooks may run long after the response's end on a busy loop, and the audit entry of a
    // request that made an export destination then fell after the destination's start, which
    // exports it (test/audit-export.test.ts saw its cursor move 227 ms).
    req.receivedAt = Date.now();
    if (closing) throw new ServiceUnavailableError('the daemon is stopping');
    if (!deps.hosts.allows(req.headers.host)) throw deps.hosts.refusal(req.headers.host);
  });
  app.setValidatorCompiler(makeValidators());
  app.setSerializerCompiler(({ schema }) => lazily(() => fastJson(schema as object) as (data: unknown) => string));
  app.decorateRequest('org', null);
  app.decorateRequest('apiKey', null);
  app.decorateRequest('receivedAt', 0);

  // Uploads stream part by part into the session; the limits bound what one request may carry.
  await app.register(multipart, { limits: { fileSize: 4 * 1024 ** 3, files: 100, fields: 200, parts: 300 } });
  // File bytes reach their handler as the raw stream (routes with `consumes`); elsewhere they fail validation.
  app.addContentTypeParser('application/octet-stream', (_req, payload, done) => done(null, payload));
  // A JSON API: a text/plain body is refused with 415 instead of failing validation as a string.
  app.removeContentTypeParser('text/plain');
  // An empty body with a JSON content type (some clients send it on DELETE) is no body, not an error.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, text, done) => {
    if (text === '' || text === undefined) return done(null, undefined);
    try {
      done(null, JSON.parse(text as string));
    } catch (err) {
      const e = err as Error & { statusCode?: number };
      e.statusCode = 400;
      done(e, undefined);
    }
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'rbrowse',
        version: VERSION,
        description: 'Local, Kernel-compatible remote-browser service',
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
        schemas: {},
      },
      security: [{ bearer: [] }],
    },
  });

  app.addHook('onRequest', async (req) => {
    const auth = req.routeOptions.config?.auth ?? 'key';
    const params = req.params as Record<string, string>;
    const named = params.base_session !== undefined || auth === 'base-url' ? await deps.jwtScope((req.query as { jwt?: string }).jwt) : undefined;
    // A session's own base_url serves that session's calls only: another's jwt finds nothing there.
    if (named && params.base_session !== undefined && named.sessionId !== params.base_session) {
      throw new NotFoundError(`no route ${req.method} ${req.url.split('?')[0]} for this jwt`);
    }
    if (auth === 'none' || auth === 'session-jwt') return;
    if (named && auth === 'base-url') {
      params.id = named.sessionId;
      req.org = named.scope;
      return;
    }
    const token = bearer(req);
    if (auth === 'admin') {
      if (!token || !deps.auth.isAdminToken(token)) throw new UnauthorizedError('admin token required');
      return;
    }
    const found = token ? deps.auth.keyFor(token) : undefined;
    if (!found) throw new UnauthorizedError();
    const one = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h) || undefined;
    req.org = await deps.scopeFor(found.org, found.key, { id: one(req.headers['x-kernel-project-id']), ref: one(req.headers['x-kernel-project']) });
    req.apiKey = found.key;
  });

  if (deps.answered) {
    const answered = deps.answered;
    app.addHook('onResponse', async (req, reply) => {
      const operationId = (req.routeOptions.schema as { operationId?: OperationId } | undefined)?.operationId;
      if (!req.org || !req.apiKey || !operationId) return;
      answered({
        operationId,
        url: req.routeOptions.url ?? '',
        params: (req.params ?? {}) as Record<string, string>,
        org: req.org,
        key: req.apiKey,
        method: req.method,
        path: req.url.split('?')[0]!,
        receivedAt: req.receivedAt,
        clientIp: req.ip,
        userAgent: req.headers['user-agent'] ?? '',
        host: req.headers.host ?? '',
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime),
        requestId: String(req.id),
      });
    });
  }

  // A route with an all-optional body still validates when the client sends none.
  app.addHook('preValidation', async (req) => {
    if (req.body === undefined && req.routeOptions.schema?.body) req.body = {};
  });

  app.setErrorHandler((err, req, reply) => {
    const { status, body, retry, headers } = toErrorReply(err);
    if (status >= 500) deps.log('request failed', { method: req.method, url: req.url, error: String(err), stack: (err as Error).stack });
    if (!retry) reply.header('x-should-retry', 'false');
    if (headers) reply.headers(headers);
    // Fastify refuses a body too large by its length before reading it, and closes the connection:
    // the client, still sending, would see a broken pipe instead of the 413. A body of a size worth
    // reading is read to its end and dropped instead, and the connection kept.
    if (status === 413 && Number(req.headers['content-length']) <= DRAIN_REFUSED_BODY_MAX) reply.removeHeader('connection');
    void reply.code(status).type('application/json').send(body);
  });
  app.setNotFoundHandler(async (req) => {
    throw new NotFoundError(`no route ${req.method} ${req.url.split('?')[0]}`);
  });

  // Twins are skipped where the table already serves the same path itself (curl, telemetry/stream, a replay's mp4).
  const served = new Set(Object.values(routes as Record<string, RouteDef>).map((r) => `${r.method} ${r.url}`));
  for (const [op, route] of Object.entries(routes) as [OperationId, RouteDef][]) {
    const shared = baseUrlTwin(route);
    const sharedServed = shared !== undefined && served.has(`${route.method} ${shared.url}`);
    register(op, route);
    if (shared && !sharedServed) register(op, route, shared);
    const own = sessionBaseTwin(route, sharedServed ? undefined : shared);
    if (own) register(op, route, own);
  }

  function register(op: OperationId, route: RouteDef, twin?: Twin): void {
    const handler = deps.handlers[op] as (ctx: object) => unknown;
    const response: Record<string, TSchema | object> = {
      [route.success.status]: route.produces
        ? { description: route.produces, content: { [route.produces]: { schema: { type: 'string', format: 'binary' } } } }
        : (route.success.body ?? { type: 'null', description: 'No Content' }),
      ...(route.noContentOnNull ? { 204: { type: 'null', description: 'No Content' } } : {}),
      ...(route.alsoStatus && route.success.body ? { [route.alsoStatus]: route.success.body } : {}),
      '4xx': ErrorBodySchema,
      '5xx': ErrorBodySchema,
    };
    app.route({
      method: route.method,
      url: twin ? twin.url : route.url,
      // A multipart route's form is documented by a swagger transform (daemon/http/form-doc.ts).
      config: { auth: twin ? twin.auth : route.auth, ...(route.form && !twin ? { swaggerTransform: formDoc(route) } : {}) },
      schema: {
        // One operation in the document: the twin is the same call by another way in.
        ...(twin ? { hide: true } : { operationId: op }),
        summary: route.summary,
        tags: [route.tag],
        ...(route.hidden ? { hide: true } : {}),
        ...(route.auth === 'none' || route.auth === 'session-jwt' ? { security: [] } : {}),
        ...(route.params ? { params: route.params } : {}),
        ...(twin?.querystring ? { querystring: twin.querystring } : route.querystring ? { querystring: route.querystring } : {}),
        ...(route.body ? { body: route.body } : {}),
        response,
      },
      // A route that takes one kind of body (a file's bytes, a form) refuses any other: another
      // parser would hand its handler something else, or nothing.
      ...(route.consumes ? { preValidation: async (request: FastifyRequest) => requireMediaType(request, route.consumes!) } : {}),
      // Before the body is parsed: any content type arrives as bytes (the parser of octet-stream).
      ...(route.proxied
        ? {
            onRequest: async (request: FastifyRequest) => {
              const type = request.headers['content-type'];
              if (type) request.headers['x-rbrowse-content-type'] = type;
              if (request.headers['transfer-encoding'] || Number(request.headers['content-length'] ?? 0) > 0) {
                request.headers['content-type'] = 'application/octet-stream';
              } else delete request.headers['content-type'];
            },
          }
        : {}),
      handler: async (request, reply) => {
        const result = await handler({
          params: request.params,
          query: request.query,
          body: request.body,
          org: request.org,
          key: request.apiKey,
          request,
          reply,
        });
        if (route.proxied) return reply.send(result);
        if (result === null && route.noContentOnNull) return reply.code(204).send();
        if (!route.alsoStatus || reply.statusCode !== route.alsoStatus) reply.code(route.success.status);
        // A handler may name a more precise type (a compressed download) itself.
        if (route.produces) return (reply.hasHeader('content-type') ? reply : reply.type(route.produces)).send(result);
        return route.success.body ? result : reply.send();
      },
    });
  }

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  // MCP's own protocol (JSON-RPC over streamable HTTP), not a REST route of the table.
  if (deps.mcp) app.route({ method: ['GET', 'POST', 'DELETE'], url: '/mcp', config: { auth: 'key' }, schema: { hide: true }, handler: deps.mcp });
  return app;
}

/**
 * A request Node's HTTP parser refused before any route saw it (headers too large, a malformed
 * request line): answered with kernel-wire's error body, then the connection closes.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable) return void socket.destroy();
  const refusal =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new ApiError(431, 'request_header_fields_too_large', 'the request line and headers exceed 16 KiB')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new ApiError(408, 'request_timeout', 'the request did not arrive in time')
        : new BadRequestError(`malformed HTTP request (${err.code ?? 'parse error'})`);
  refuseOnSocket(socket, refusal);
}
