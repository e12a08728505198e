import type { FastifyReply } from 'fastify';

export interface ListPage<T> {
  items: T[];
  hasMore: boolean;
  /** Absolute offset of the next page; 0 on the last one (kernel-wire). */
  nextOffset: number;
}

/** One page of an already filtered and ordered list, with kernel-wire's defaults (offset 0, limit 20). */
export function paginate<T, R = T>(
  all: readonly T[],
  q: { offset?: number; limit?: number },
  map: (item: T) => R = (item) => item as unknown as R,
): ListPage<R> {
  const offset = q.offset ?? 0;
  const limit = q.limit ?? 20;
  const hasMore = offset + limit < all.length;
  return { items: all.slice(offset, offset + limit).map(map), hasMore, nextOffset: hasMore ? offset + limit : 0 };
}

/** Lists answer a bare array; the paging travels in X-Has-More / X-Next-Offset. */
export function sendPage<T>(reply: FastifyReply, page: ListPage<T>): T[] {
  reply.header('x-has-more', String(page.hasMore)).header('x-next-offset', String(page.nextOffset));
  return page.items;
}
