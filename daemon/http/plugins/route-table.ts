import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import fastJson from 'fast-json-stringify';
import { Type, type TSchema } from 'typebox';
import { routes, type OperationId, type RouteDef } from '../../../src/api/routes.js';
import { ErrorBodySchema } from '../../../src/api/schemas.js';
import { BadRequestError } from '../../../src/errors.js';
import { formDoc } from '../form-doc.js';
import { lazily, lazyValidator } from '../../lib/validators.js';
import type { Handlers } from '../handlers.js';

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

/** Every route of the table (src/api/routes.ts), with its twins under a session's base_url, on its handler. */
export const routeTable = fp<{ handlers: Handlers }>(async (app, deps) => {
  app.setValidatorCompiler(makeValidators());
  app.setSerializerCompiler(({ schema }) => lazily(() => fastJson(schema as object) as (data: unknown) => string));
  // A route with an all-optional body still validates when the client sends none.
  app.addHook('preValidation', async (req) => {
    if (req.body === undefined && req.routeOptions.schema?.body) req.body = {};
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
});
