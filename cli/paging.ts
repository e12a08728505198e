import type { CallResult } from '../src/client.js';

/**
 * Every item of a paginated list (X-Has-More / X-Next-Offset), or just the page asked for when
 * the user gave --limit or --offset: `rbrowse ls -q | xargs rbrowse rm` must see every session.
 */
export async function listPages<T>(
  o: { limit?: number; offset?: number },
  fetchPage: (page: { limit?: number; offset?: number }) => Promise<CallResult<T[]>>,
): Promise<T[]> {
  if (o.limit !== undefined || o.offset !== undefined) return (await fetchPage(o)).data;
  const items: T[] = [];
  for (let offset = 0; ; ) {
    const { data, headers } = await fetchPage({ limit: 100, offset });
    items.push(...data);
    const next = Number(headers['x-next-offset']);
    if (headers['x-has-more'] !== 'true' || !(next > offset)) return items;
    offset = next;
  }
}
