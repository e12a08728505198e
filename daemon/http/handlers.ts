import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BodyOf, OperationId, ParamsOf, QueryOf, ResponseOf } from '../../src/api/routes.js';
import type { ApiKeyRecord } from '../org/key-record.js';
import type { Scope } from '../org/projects.js';

export interface HandlerContext<K extends OperationId> {
  params: ParamsOf<K>;
  query: QueryOf<K>;
  body: BodyOf<K>;
  /**
   * The owner of the caller's resources: its organization's project (X-Kernel-Project-Id, else the
   * key's project, else the default one); present on every route whose auth is `key`.
   */
  org: Scope;
  /** The key the caller authenticated with; present wherever `org` is. */
  key: ApiKeyRecord;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** A handler's types come from its route's schemas, so a field the schema lacks cannot be read. */
export type Handler<K extends OperationId> = (ctx: HandlerContext<K>) => Promise<ResponseOf<K>> | ResponseOf<K>;
export type Handlers = { [K in OperationId]: Handler<K> };
export type HandlerGroup<K extends OperationId> = { [P in K]: Handler<P> };
