import { replOf } from '../../in-session/repl/repl.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { HandlerGroup } from '../handlers.js';
import { clientGone } from '../client-gone.js';

export function replHandlers(sessions: SessionManager): HandlerGroup<'runRepl'> {
  return {
    runRepl: ({ org, params, body, reply }) =>
      sessions.withSession(org, params.id, (s) => replOf(s).run(sessions.view.cdpUrlInBox(s.record), body, clientGone(reply))),
  };
}
