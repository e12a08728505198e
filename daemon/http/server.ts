import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import qs from 'qs';
import type { RouteDef } from '../../src/api/routes.js';
import { type ConnectionGuard, createFrontDoorServer, type FrontDoorLimits, type HostCheck } from './front-door.js';
import type { ApiKeyRecord } from '../org/key-record.js';
import type { Scope } from '../org/projects.js';
import type { Handlers } from './handlers.js';
import type { AnsweredRequest } from '../org/audit/answered-request.js';
import { requestGuards } from './plugins/request-guards.js';
import { bodyParsers } from './plugins/body-parsers.js';
import { openapiDocument } from './plugins/openapi-document.js';
import { type AuthenticateOptions, authenticate } from './plugins/authenticate.js';
import { answeredRequests } from './plugins/answered-requests.js';
import { answerClientError, errorReplies } from './plugins/error-replies.js';
import { routeTable } from './plugins/route-table.js';

export { bearer } from './plugins/authenticate.js';

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

export interface ServerDeps extends AuthenticateOptions {
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
}

/**
 * The HTTP server: the front door (daemon/http/front-door.ts) and a few plugins, in the order a
 * request meets them.
 */
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
    // Fastify's own 503 and 400 bodies are not kernel-wire's: both are answered by the plugins instead.
    return503OnClosing: false,
    clientErrorHandler: answerClientError,
    routerOptions: {
      ignoreTrailingSlash: true,
      ignoreDuplicateSlashes: true,
      // OpenAPI's deepObject style, as the SDKs send it (`?tags[team]=backend`): one level of nesting.
      querystringParser: (query) => qs.parse(query, { depth: 1, parameterLimit: 1000 }),
    },
  });
  await app.register(requestGuards, { hosts: deps.hosts });
  await app.register(bodyParsers);
  // Before any route: a route keeps the error handler of the moment it is registered.
  await app.register(errorReplies, { log: deps.log });
  await app.register(authenticate, { auth: deps.auth, scopeFor: deps.scopeFor, jwtScope: deps.jwtScope });
  if (deps.answered) await app.register(answeredRequests, { answered: deps.answered });
  // Before the table: the document is made of the routes registered after it.
  await app.register(openapiDocument);
  await app.register(routeTable, { handlers: deps.handlers });
  // MCP's own protocol (JSON-RPC over streamable HTTP), not a REST route of the table.
  if (deps.mcp) app.route({ method: ['GET', 'POST', 'DELETE'], url: '/mcp', config: { auth: 'key' }, schema: { hide: true }, handler: deps.mcp });
  return app;
}
