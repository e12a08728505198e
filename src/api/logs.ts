import { Type, type Static } from 'typebox';
import { IdParamsSchema } from './schemas.js';
import type { RouteDef } from './route-def.js';

// A session's logs (kernel-wire "Logs").

/** GET /browsers/{id}/logs/stream. */
export const LogStreamQuerySchema = Type.Object({
  source: Type.Union([Type.Literal('path'), Type.Literal('supervisor')], {
    description: "path: a file inside the session; supervisor: a program's own log (supervisor_process: chromium)",
  }),
  follow: Type.Optional(
    Type.Boolean({ default: true, description: 'true: lines written from now on, until the client leaves; false: the whole file, then the end' }),
  ),
  path: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  supervisor_process: Type.Optional(Type.String({ maxLength: 64 })),
});
export type LogStreamQuery = Static<typeof LogStreamQuerySchema>;

export const logRoutes = {
  logsStream: {
    method: 'GET',
    url: '/browsers/:id/logs/stream',
    auth: 'key',
    summary: "A session's log lines (server-sent events): a file inside it, or its Chromium's own log; `log` events {message, timestamp}",
    tag: 'logs',
    params: IdParamsSchema,
    querystring: LogStreamQuerySchema,
    success: { status: 200, body: null },
    produces: 'text/event-stream',
  },
} as const satisfies Record<string, RouteDef>;
