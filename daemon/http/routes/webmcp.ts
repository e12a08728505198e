import { webmcpOf } from '../../in-session/webmcp/webmcp.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { HandlerGroup } from '../handlers.js';

export function webmcpHandlers(
  sessions: SessionManager,
): HandlerGroup<'listWebmcpTools' | 'invokeWebmcpTool' | 'listWebmcpCustomTools' | 'addWebmcpCustomTools' | 'removeWebmcpCustomTool'> {
  return {
    listWebmcpTools: ({ org, params, query }) => sessions.withSession(org, params.id, (s) => webmcpOf(s).list(query.exclude_custom === true)),
    invokeWebmcpTool: ({ org, params, body }) =>
      sessions.withSession(org, params.id, (s) => webmcpOf(s).invoke(body, sessions.view.cdpUrlInBox(s.record))),
    listWebmcpCustomTools: ({ org, params }) => sessions.withSession(org, params.id, async (s) => webmcpOf(s).listCustom()),
    addWebmcpCustomTools: ({ org, params, body }) =>
      sessions.withSession(org, params.id, (s) => webmcpOf(s).addCustom(body, sessions.view.cdpUrlInBox(s.record))),
    removeWebmcpCustomTool: ({ org, params }) => sessions.withSession(org, params.id, async (s) => webmcpOf(s).removeCustom(params.tool_id)),
  };
}
