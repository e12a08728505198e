import { Type, type Static, type TSchema } from 'typebox';
import * as S from './schemas.js';

/**
 * The one definition of every route: the daemon registers these (validation, handler types),
 * @fastify/swagger turns them into /openapi.json, and src/client.ts derives its calls from them.
 */
export interface RouteDef {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** Fastify path syntax (`:id`); the OpenAPI document shows `{id}`. */
  url: string;
  /** key: an org's API key; admin: the local admin token; session-jwt: a session's jwt query parameter. */
  auth: 'none' | 'key' | 'admin' | 'session-jwt';
  summary: string;
  tag: string;
  /** The success status and its body schema; null means no body (204). */
  success: { status: number; body: TSchema | null };
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  /** Kept out of /openapi.json: protocol plumbing rather than API. */
  hidden?: boolean;
}

const NoContent = { status: 204, body: null } as const;

export const routes = {
  health: {
    method: 'GET',
    url: '/health',
    auth: 'none',
    summary: 'Liveness check; needs no credentials',
    tag: 'daemon',
    success: { status: 200, body: S.HealthSchema },
  },
  createBrowser: {
    method: 'POST',
    url: '/browsers',
    auth: 'key',
    summary: 'Create a browser session',
    tag: 'browsers',
    body: S.CreateBrowserSchema,
    success: { status: 200, body: S.BrowserSessionSchema },
  },
  listBrowsers: {
    method: 'GET',
    url: '/browsers',
    auth: 'key',
    summary: 'List browser sessions (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'browsers',
    querystring: S.ListBrowsersQuerySchema,
    success: { status: 200, body: Type.Array(S.BrowserSessionSchema) },
  },
  getBrowser: {
    method: 'GET',
    url: '/browsers/:id',
    auth: 'key',
    summary: 'Get a browser session by id or name',
    tag: 'browsers',
    params: S.IdParamsSchema,
    querystring: S.GetBrowserQuerySchema,
    success: { status: 200, body: S.BrowserSessionSchema },
  },
  updateBrowser: {
    method: 'PATCH',
    url: '/browsers/:id',
    auth: 'key',
    summary: 'Update a browser session (proxy_id: omitted unchanged, "" removes)',
    tag: 'browsers',
    params: S.IdParamsSchema,
    body: S.UpdateBrowserSchema,
    success: { status: 200, body: S.BrowserSessionSchema },
  },
  deleteBrowser: {
    method: 'DELETE',
    url: '/browsers/:id',
    auth: 'key',
    summary: 'Delete (soft-delete) a browser session by id or name',
    tag: 'browsers',
    params: S.IdParamsSchema,
    success: NoContent,
  },
  cdpVersion: {
    method: 'GET',
    url: '/browser/cdp/json/version',
    auth: 'session-jwt',
    summary: "Chrome's /json/version for the session named by the jwt",
    tag: 'cdp',
    querystring: S.JwtQuerySchema,
    success: { status: 200, body: S.CdpVersionSchema },
    hidden: true,
  },
  adminCreateKey: {
    method: 'POST',
    url: '/admin/keys',
    auth: 'admin',
    summary: 'Create an API key for an organization (created when missing); local admin token only',
    tag: 'admin',
    body: S.CreateKeySchema,
    success: { status: 200, body: S.CreatedKeySchema },
  },
} as const satisfies Record<string, RouteDef>;

export type Routes = typeof routes;
export type OperationId = keyof Routes;

type StaticOf<T> = T extends TSchema ? Static<T> : undefined;
export type ParamsOf<K extends OperationId> = StaticOf<Routes[K] extends { params: infer P } ? P : undefined>;
export type QueryOf<K extends OperationId> = StaticOf<Routes[K] extends { querystring: infer Q } ? Q : undefined>;
export type BodyOf<K extends OperationId> = StaticOf<Routes[K] extends { body: infer B } ? B : undefined>;
export type ResponseOf<K extends OperationId> = Routes[K]['success']['body'] extends TSchema
  ? Static<Routes[K]['success']['body']>
  : void;
