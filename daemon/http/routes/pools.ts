import { sendPage } from '../../lib/paging.js';
import type { PoolManager } from '../../pools/manager.js';
import { Quotas } from '../../org/quotas.js';
import { clientGone } from '../client-gone.js';
import type { HandlerGroup } from '../handlers.js';

export function poolHandlers(
  pools: PoolManager,
  quotas: Quotas,
): HandlerGroup<'createPool' | 'listPools' | 'getPool' | 'updatePool' | 'deletePool' | 'flushPool' | 'acquirePool' | 'releasePool'> {
  return {
    // A pool reserves its size against the project's and organization's browser limits.
    createPool: ({ org, body }) => Quotas.holding(quotas.holdSessions(org, body.size), () => pools.create(org, body)),
    listPools: ({ org, query, reply }) => sendPage(reply, pools.list(org, query)),
    getPool: ({ org, params }) => pools.get(org, params.id),
    updatePool: ({ org, params, body }) => {
      const size = pools.get(org, params.id).browser_pool_config.size;
      return Quotas.holding(quotas.holdSessions(org, (body.size ?? size) - size), () => pools.update(org, params.id, body));
    },
    // The SDK sends force in the body; a query parameter is what curl users reach for.
    deletePool: ({ org, params, body, query }) => pools.delete(org, params.id, Boolean(body.force ?? query.force)),
    flushPool: ({ org, params }) => pools.flush(org, params.id),
    acquirePool: async ({ org, params, body, reply }) => {
      // A client that gives up (the SDK's own timeout) must not keep its place in the queue.
      quotas.assertWithinSessions(org);
      return await pools.acquire(org, params.id, body, clientGone(reply));
    },
    releasePool: ({ org, params, body }) => pools.release(org, params.id, body),
  };
}
