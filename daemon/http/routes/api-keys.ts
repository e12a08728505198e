import type { ApiKeys } from '../../org/api-keys.js';
import { sendPage } from '../../lib/paging.js';
import type { HandlerGroup } from '../handlers.js';

export function apiKeyHandlers(
  keys: ApiKeys,
): HandlerGroup<'createApiKey' | 'listApiKeys' | 'getApiKey' | 'updateApiKey' | 'deleteApiKey' | 'rotateApiKey'> {
  return {
    createApiKey: ({ org, key, body }) => keys.create(org, key, body),
    listApiKeys: ({ org, query, reply }) => sendPage(reply, keys.list(org, query)),
    getApiKey: ({ org, params, query }) => keys.get(org, params.id, query.include_deleted),
    updateApiKey: ({ org, params, body }) => keys.rename(org, params.id, body.name),
    deleteApiKey: ({ org, key, params }) => keys.delete(org, key, params.id),
    rotateApiKey: ({ org, key, params, body }) => keys.rotate(org, key, params.id, body),
  };
}
