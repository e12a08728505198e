import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { NotFoundError, UnauthorizedError } from '../../../src/errors.js';
import type { Auth } from '../../org/auth.js';
import type { ApiKeyRecord } from '../../org/key-record.js';
import type { OrgRecord } from '../../lib/owned-records.js';
import type { ProjectHeaders, Scope } from '../../org/projects.js';

export interface AuthenticateOptions {
  auth: Pick<Auth, 'isAdminToken' | 'keyFor'>;
  /** The request's scope: its organization's project named by the header, the key or the default. */
  scopeFor: (org: OrgRecord, key: ApiKeyRecord, projectHeaders: ProjectHeaders) => Promise<Scope>;
  /** The session a jwt (a session's cdp jwt) names, and the scope it acts in: its owner's project. */
  jwtScope: (jwt: string | undefined) => Promise<{ sessionId: string; scope: Scope }>;
}

/** The request's Bearer token (an API key, or the admin token). */
export function bearer(req: FastifyRequest): string | undefined {
  const header = req.headers.authorization;
  const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return m?.[1];
}

/** Who calls: by the route's auth, an API key (and its project), the admin token, or a session's jwt. */
export const authenticate = fp<AuthenticateOptions>(async (app, deps) => {
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
});
