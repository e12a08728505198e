import type { Static, TSchema } from 'typebox';
import type { ErrorBody } from './errors.js';
import type { Readable } from 'node:stream';
import { formBody } from './form-body.js';
import { exchange, isFormData, type Exchange, type ExchangeBody } from './http-exchange.js';
import { routes, type RouteDef, type BodyOf, type OperationId, type ParamsOf, type QueryOf, type ResponseOf, type Routes } from './api/routes.js';

type FormOf<F> = F extends { files: readonly (infer N extends string)[]; fields: infer T extends TSchema } ? Static<T> & Record<N, Blob> : never;
/**
 * What the client sends: a multipart route with a RouteDef.form its fields and files (encoded as
 * the Node SDK does) or a ready FormData; another multipart route a FormData; the rest BodyOf.
 */
export type ClientBodyOf<K extends OperationId> = Routes[K] extends { form: infer F }
  ? FormOf<F> | FormData
  : Routes[K] extends { consumes: 'multipart/form-data' }
    ? FormData
    : BodyOf<K>;

type Maybe<K extends string, T> = T extends undefined ? { [P in K]?: undefined } : { [P in K]: T };
export type CallArgs<K extends OperationId> = Maybe<'params', ParamsOf<K>> & Partial<Maybe<'query', QueryOf<K>>> & Maybe<'body', ClientBodyOf<K>>;

/** An error answer of the server, carrying its kernel-wire body. */
export class ApiCallError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(`${body.code}: ${body.message}`);
  }

  /** The error of an answer's status and text; a body that is not kernel-wire JSON becomes `http_<status>`. */
  static fromAnswer(status: number, text: string): ApiCallError {
    let body: ErrorBody | undefined;
    try {
      body = JSON.parse(text) as ErrorBody;
    } catch {
      body = undefined;
    }
    // Anything but a kernel-wire body (a proxy's page, Node's own 400) is named by its status.
    if (typeof body?.code !== 'string') body = { code: `http_${status}`, message: (body?.message ?? text).slice(0, 500) || `HTTP ${status}` };
    return new ApiCallError(status, body);
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
    /** A project id: every request is scoped to it (X-Kernel-Project-Id). */
    readonly projectId?: string,
    /** How a request is sent: over HTTP, or (the daemon's own calls) into its server without a socket. */
    private readonly send: typeof exchange = exchange,
  ) {}

  async call<K extends OperationId>(op: K, args: CallArgs<K>): Promise<ResponseOf<K>> {
    return (await this.request(op, args)).data;
  }

  /** The URL of an operation, its path parameters and query filled in (for event streams: cli/sse.ts). */
  url<K extends OperationId>(op: K, args: CallArgs<K>): URL {
    const params = (args as { params?: Record<string, string> }).params ?? {};
    const path = routes[op].url.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(String(params[name])));
    const url = new URL(path, this.baseUrl);
    const query = (args as { query?: Record<string, unknown> }).query ?? {};
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined) continue;
      // An object is OpenAPI's deepObject style, as the SDKs send it: `tags[team]=backend`.
      if (v !== null && typeof v === 'object') for (const [sub, value] of Object.entries(v)) url.searchParams.set(`${k}[${sub}]`, String(value));
      else url.searchParams.set(k, String(v));
    }
    return url;
  }

  async request<K extends OperationId>(op: K, args: CallArgs<K>): Promise<CallResult<ResponseOf<K>>> {
    const route = routes[op];
    const def: RouteDef = route;
    const headers = this.headers(def);
    const body = this.body(def, (args as { body?: unknown }).body, headers);
    const res: Exchange = await this.send(this.url(op, args), { method: route.method, headers, body });
    const answer = { status: res.status, headers: res.headers };
    const ok = res.status < 400;
    if (def.produces && ok) return { ...answer, data: res.body as ResponseOf<K> };
    const text = res.body.toString('utf8');
    if (!ok) throw ApiCallError.fromAnswer(res.status, text);
    // An empty answer of a route with a body is its 204 (an acquire that timed out): null.
    const data = (text ? JSON.parse(text) : route.success.body ? null : undefined) as ResponseOf<K>;
    return { ...answer, data };
  }

  /**
   * A bodiless operation's answer as a fetch Response whose body is not read yet: downloads stream
   * it (cli/progress.ts downloadWithProgress) instead of holding it in memory. Error answers throw.
   */
  async open<K extends OperationId>(op: K, args: CallArgs<K>): Promise<Response> {
    const def: RouteDef = routes[op];
    const res = await fetch(this.url(op, args), { method: def.method, headers: this.headers(def) });
    if (!res.ok) throw ApiCallError.fromAnswer(res.status, await res.text());
    return res;
  }

  /** Who is asking: the key, and the project the requests are scoped to (for streams and uploads made by hand). */
  authHeaders(): Record<string, string> {
    return {
      ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}),
      ...(this.projectId ? { 'x-kernel-project-id': this.projectId } : {}),
    };
  }

  private headers(def: RouteDef): Record<string, string> {
    return { accept: def.produces ?? 'application/json', ...this.authHeaders() };
  }

  /** The request body, its content type set in `headers` (a form's, with its boundary, by exchange()). */
  private body(def: RouteDef, body: unknown, headers: Record<string, string>): ExchangeBody {
    if (body === undefined) return undefined;
    if (def.form || isFormData(body)) return isFormData(body) ? body : formBody(body as Record<string, unknown>);
    headers['content-type'] = def.consumes ?? 'application/json';
    return def.consumes ? (body as Buffer | string | Readable) : JSON.stringify(body);
  }
}
