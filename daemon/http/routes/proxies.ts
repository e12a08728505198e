import { sendPage } from '../../lib/paging.js';
import type { Proxies } from '../../features/proxies/proxies.js';
import type { HandlerGroup } from '../handlers.js';

export function proxyHandlers(
  proxies: Proxies,
): HandlerGroup<'createProxy' | 'listProxies' | 'getProxy' | 'updateProxy' | 'deleteProxy' | 'checkProxy'> {
  return {
    createProxy: ({ org, body }) => proxies.create(org, body),
    listProxies: ({ org, query, reply }) => sendPage(reply, proxies.list(org, query)),
    getProxy: ({ org, params }) => proxies.get(org, params.id),
    updateProxy: ({ org, params, body }) => proxies.update(org, params.id, body),
    deleteProxy: ({ org, params }) => proxies.delete(org, params.id),
    checkProxy: ({ org, params, body }) => proxies.healthCheck(org, params.id, body),
  };
}
