/**
 * The daemon's HTTP server in this process, on the real route table and schemas, with fake parts
 * behind it: for the fast tier's route tests (`app.inject()`), which need no root, no Chromium and
 * no state file. A handler not given answers 501, so a test sees which one it reached.
 */
import type { FastifyInstance } from 'fastify';
import { routes, type OperationId } from '../../src/api/routes.js';
import { ApiError, NotFoundError } from '../../src/errors.js';
import { ConnectionGuard, frontDoorLimits, HostCheck } from '../../daemon/http/front-door.js';
import type { Handlers } from '../../daemon/http/handlers.js';
import { buildServer } from '../../daemon/http/server.js';
import type { Auth } from '../../daemon/org/auth.js';
import type { ApiKeyRecord } from '../../daemon/org/key-record.js';
import type { Scope } from '../../daemon/org/projects.js';
import type { AnsweredRequest } from '../../daemon/org/audit/answered-request.js';

export const ADMIN_TOKEN = 'admin-token-for-tests';
/** Two organizations' keys: what one may see, the other may not. */
export const KEYS = { acme: 'key-acme', globex: 'key-globex' } as const;

export function scopeOf(org: keyof typeof KEYS): Scope {
  return {
    id: `org_${org}`,
    name: org,
    created_at: '2026-01-01T00:00:00.000Z',
    org_id: `org_${org}`,
    project_id: `proj_${org}`,
    key_project_id: null,
  };
}

function keyRecord(org: keyof typeof KEYS): ApiKeyRecord {
  return {
    id: `key_${org}`,
    org_id: `org_${org}`,
    sha256: '',
    created_at: '2026-01-01T00:00:00.000Z',
    name: org,
    masked_key: 'sk_...0000',
    created_by: { id: 'u', email: 'u@example.test', name: null },
    expires_at: null,
    deleted_at: null,
  } as ApiKeyRecord;
}

const fakeAuth = {
  isAdminToken: (token: string) => token === ADMIN_TOKEN,
  keyFor(token: string) {
    const org = (Object.keys(KEYS) as (keyof typeof KEYS)[]).find((o) => KEYS[o] === token);
    return org ? { org: scopeOf(org), key: keyRecord(org) } : undefined;
  },
} as unknown as Auth;

export interface InProcessServer {
  app: FastifyInstance;
  answered: AnsweredRequest[];
  close(): Promise<void>;
}

/** jwts the fake session core knows: jwt -> the session and the organization it belongs to. */
export type FakeJwts = Record<string, { sessionId: string; org: keyof typeof KEYS }>;

export async function inProcessServer(handlers: Partial<Handlers> = {}, jwts: FakeJwts = {}): Promise<InProcessServer> {
  const limits = frontDoorLimits({});
  const answered: AnsweredRequest[] = [];
  const all = Object.fromEntries(
    (Object.keys(routes) as OperationId[]).map((op) => [
      op,
      handlers[op] ??
        (() => {
          throw new ApiError(501, 'not_implemented', `no fake handler for ${op}`);
        }),
    ]),
  ) as unknown as Handlers;
  const app = await buildServer({
    auth: fakeAuth,
    scopeFor: async (org) => scopeOf(org.name as keyof typeof KEYS),
    handlers: all,
    log: () => {},
    answered: (r) => answered.push(r),
    limits,
    connections: new ConnectionGuard(limits),
    hosts: new HostCheck('127.0.0.1', {}),
    mcp: async (_request, reply) => void reply.code(501).send({ code: 'not_implemented', message: 'no MCP here' }),
    jwtScope: async (jwt) => {
      const known = jwt ? jwts[jwt] : undefined;
      if (!known) throw new NotFoundError('browser session not found or ended');
      return { sessionId: known.sessionId, scope: scopeOf(known.org) };
    },
  });
  await app.ready();
  return { app, answered, close: () => app.close() };
}
