import type { AuditLog } from '../../org/audit/audit-log.js';
import type { HandlerGroup } from '../handlers.js';

export function auditLogHandlers(audit: AuditLog): HandlerGroup<'listAuditLogs' | 'exportAuditLogs'> {
  return {
    listAuditLogs: async ({ org, query, reply }) => {
      const { items, nextToken } = await audit.list(org, query);
      reply.header('x-has-more', String(Boolean(nextToken)));
      if (nextToken) reply.header('x-next-page-token', nextToken);
      return items;
    },
    exportAuditLogs: async ({ org, query, reply }) => {
      const chunk = await audit.exportChunk(org, query);
      reply
        .type(chunk.contentType)
        .header('x-row-count', String(chunk.rows))
        .header('x-has-more', String(chunk.hasMore))
        .header('x-content-sha256', chunk.sha256);
      if (chunk.nextCursor) reply.header('x-next-cursor', chunk.nextCursor);
      return chunk.body;
    },
  };
}
