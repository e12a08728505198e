import type { TSchema } from 'typebox';

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
  /** The handler may answer null, sent as 204 with no body (an acquire that timed out). */
  noContentOnNull?: true;
  /** A second success status with the same body, chosen by the handler with reply.code() (202 for an async invocation). */
  alsoStatus?: number;
  /** A success body that is not JSON (a file, a PNG): its media type; the handler returns bytes or a stream. */
  produces?: string;
  /** A request body that is not JSON (a file's bytes): its media type; the handler gets the raw stream. */
  consumes?: string;
  /**
   * A multipart/form-data body's parts: its file fields and the schema of its text fields (nested
   * objects sent as `key[sub]`, as the Node SDK does). /openapi.json documents it and the typed
   * client encodes it; the handler reads and validates the parts itself.
   */
  form?: { files: readonly string[]; fields: TSchema };
  /**
   * A proxied exchange (browser.fetch's raw curl): the request body reaches the handler as bytes
   * whatever its content type (kept in `x-rbrowse-content-type`), and the status, headers and body
   * of the answer are the handler's own.
   */
  proxied?: true;
}

export const NoContent = { status: 204, body: null } as const;
