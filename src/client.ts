import { request } from 'undici';
import type { ErrorBody } from './errors.js';
import type { Readable } from 'node:stream';
import { routes, type RouteDef, type BodyOf, type OperationId, type ParamsOf, type QueryOf, type ResponseOf } from './api/routes.js';

type Maybe<K extends string, T> = T extends undefined ? { [P in K]?: undefined } : { [P in K]: T };
export type CallArgs<K extends OperationId> = Maybe<'params', ParamsOf<K>> &
  Partial<Maybe<'query', QueryOf<K>>> &
  Maybe<'body', BodyOf<K>>;

/** An error answer of the server, carrying its kernel-wire body. */
export class ApiCallError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(`${body.code}: ${body.message}`);
  }
}

export interface CallResult<T> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  data: T;
}

/** Typed HTTP client for the daemon (or any Kernel-compatible server), derived from the route table. */
export class RbrowseClient {
  constructor(
    readonly baseUrl: string,
    readonly apiKey?: string,
  ) {}

  async call<K extends OperationId>(op: K, args: CallArgs<K>): Promise<ResponseOf<K>> {
    return (await this.request(op, args)).data;
  }

  async request<K extends OperationId>(op: K, args: CallArgs<K>): Promise<CallResult<ResponseOf<K>>> {
    const route = routes[op];
    const params = (args as { params?: Record<string, string> }).params ?? {};
    const path = route.url.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(String(params[name])));
    const url = new URL(path, this.baseUrl);
    const query = (args as { query?: Record<string, unknown> }).query ?? {};
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    const body = (args as { body?: unknown }).body;
    const def: RouteDef = route;
    const headers: Record<string, string> = { accept: def.produces ?? 'application/json' };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    if (body !== undefined) headers['content-type'] = def.consumes ?? 'application/json';
    const res = await request(url, {
      method: route.method,
      headers,
      body: body === undefined ? undefined : def.consumes ? (body as Buffer | string | Readable) : JSON.stringify(body),
    });
    if (def.produces && res.statusCode < 400) {
      const bytes = Buffer.from(await res.body.arrayBuffer());
      return { status: res.statusCode, headers: res.headers, data: bytes as ResponseOf<K> };
    }
    const text = await res.body.text();
    if (res.statusCode >= 400) {
      let parsed: ErrorBody;
      try {
        parsed = JSON.parse(text) as ErrorBody;
      } catch {
        parsed = { code: `http_${res.statusCode}`, message: text.slice(0, 500) || `HTTP ${res.statusCode}` };
      }
      throw new ApiCallError(res.statusCode, parsed);
    }
    // An empty answer of a route with a body is its 204 (an acquire that timed out): null.
    const data = (text ? JSON.parse(text) : route.success.body ? null : undefined) as ResponseOf<K>;
    return { status: res.statusCode, headers: res.headers, data };
  }
}
