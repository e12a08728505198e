import { Type, type Static } from 'typebox';
import type { RouteDef } from './route-def.js';

// The audit log (Kernel's /audit-logs): every state-changing call of an organization, newest first.

export const AuditLogEntrySchema = Type.Object({
  id: Type.String(),
  timestamp: Type.String({ format: 'date-time', description: 'When the request was received (UTC)' }),
  method: Type.String(),
  path: Type.String({ description: 'The request path, without its query' }),
  route: Type.String({ description: 'The matched route pattern, e.g. /browsers/{id}' }),
  status: Type.Integer({ description: "The answer: the call's result" }),
  duration_ms: Type.Integer(),
  auth_strategy: Type.String({ description: 'api_key' }),
  user_id: Type.String({ description: 'Who: the id of the API key that made the call' }),
  email: Type.String({ description: "Who: the key's creator" }),
  api_key_id: Type.String(),
  project_id: Type.String({ description: 'The project the call acted on' }),
  client_ip: Type.String(),
  user_agent: Type.String(),
  domain: Type.String({ description: 'The request host' }),
  service: Type.String({ description: 'api' }),
});
export type AuditLogEntry = Static<typeof AuditLogEntrySchema>;

/** Array filters arrive comma-joined (the SDK's query format) or repeated. */
const StringList = Type.Array(Type.String({ maxLength: 1024 }));

const Filters = {
  start: Type.String({ format: 'date-time', description: 'Lower bound, inclusive' }),
  end: Type.String({ format: 'date-time', description: 'Upper bound, exclusive' }),
  auth_strategy: Type.Optional(Type.String()),
  method: Type.Optional(Type.String()),
  exclude_method: Type.Optional(StringList),
  search: Type.Optional(Type.String({ maxLength: 1024, description: 'Substring of the path, user id, email, client IP or status' })),
  search_user_id: Type.Optional(StringList),
  service: Type.Optional(Type.String()),
};

export const ListAuditLogsQuerySchema = Type.Object({
  ...Filters,
  page_token: Type.Optional(Type.String({ maxLength: 512 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
});
export type ListAuditLogsQuery = Static<typeof ListAuditLogsQuerySchema>;

export const ExportAuditLogsQuerySchema = Type.Object({
  ...Filters,
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50_000, default: 10_000 })),
  format: Type.Optional(Type.Union([Type.Literal('jsonl'), Type.Literal('jsonl.gz')], { default: 'jsonl' })),
});
export type ExportAuditLogsQuery = Static<typeof ExportAuditLogsQuerySchema>;

export const auditLogRoutes = {
  listAuditLogs: {
    method: 'GET',
    url: '/audit-logs',
    auth: 'key',
    summary: 'State-changing calls of the organization between start and end, newest first (X-Next-Page-Token / X-Has-More page it)',
    tag: 'audit-logs',
    querystring: ListAuditLogsQuerySchema,
    success: { status: 200, body: Type.Array(AuditLogEntrySchema) },
  },
  exportAuditLogs: {
    method: 'GET',
    url: '/audit-logs/export/chunk',
    auth: 'key',
    summary: 'One chunk of the audit log as JSON lines (X-Row-Count, X-Has-More, X-Next-Cursor for older records, X-Content-Sha256 of the body)',
    tag: 'audit-logs',
    querystring: ExportAuditLogsQuerySchema,
    success: { status: 200, body: null },
    produces: 'application/octet-stream',
  },
} as const satisfies Record<string, RouteDef>;
