import { webmcpOf } from '../../in-session/webmcp/webmcp.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { HandlerGroup } from '../handlers.js';

export function webmcpHandlers(sessions: SessionManager): HandlerGroup<'listWebmcpTools' | 'invokeWebmcpTool'> {
  return {
    listWebmcpTools: ({ org, params }) => sessions.withSession(org, params.id, (s) => webmcpOf(s).list()),
    invokeWebmcpTool: ({ org, params, body }) => sessions.withSession(org, params.id, (s) => webmcpOf(s).invoke(body)),
  };
}
