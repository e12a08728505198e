import { executorsOf } from '../../in-session/playwright/executors.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { HandlerGroup } from '../handlers.js';
import { clientGone } from '../client-gone.js';

export function playwrightHandlers(
  sessions: SessionManager,
): HandlerGroup<'playwrightExecute' | 'listPlaywrightExecutors' | 'deletePlaywrightExecutor'> {
  return {
    playwrightExecute: ({ org, params, body, reply }) =>
      sessions.withSession(org, params.id, (s) => executorsOf(s).execute(sessions.view.cdpUrlInBox(s.record), body, clientGone(reply))),
    listPlaywrightExecutors: ({ org, params }) => sessions.withSession(org, params.id, (s) => executorsOf(s).list()),
    deletePlaywrightExecutor: ({ org, params, query }) =>
      sessions.withSession(org, params.id, (s) => executorsOf(s).delete(params.name, query.close_tab ?? true)),
  };
}
