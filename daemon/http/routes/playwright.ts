import { executePlaywright } from '../../in-session/playwright/execute.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { HandlerGroup } from '../handlers.js';
import { clientGone } from './process.js';

export function playwrightHandlers(sessions: SessionManager): HandlerGroup<'playwrightExecute'> {
  return {
    playwrightExecute: ({ org, params, body, reply }) =>
      sessions.withSession(org, params.id, (s) => executePlaywright(s, sessions.cdpUrlInBox(s), body, clientGone(reply))),
  };
}
