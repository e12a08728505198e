import { sendPage } from '../../paging.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { HandlerGroup } from '../handlers.js';

export function browserHandlers(
  sessions: SessionManager,
): HandlerGroup<'createBrowser' | 'listBrowsers' | 'getBrowser' | 'updateBrowser' | 'deleteBrowser'> {
  return {
    createBrowser: ({ org, body }) => sessions.create(org, body),
    listBrowsers: async ({ org, query, reply }) => sendPage(reply, await sessions.list(org, query)),
    getBrowser: ({ org, params, query }) => sessions.get(org, params.id, query.include_deleted),
    updateBrowser: ({ org, params, body }) => sessions.update(org, params.id, body),
    deleteBrowser: ({ org, params }) => sessions.delete(org, params.id),
  };
}
