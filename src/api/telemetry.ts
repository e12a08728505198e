import { Type, type Static } from 'typebox';
import { IdParamsSchema, JwtQuerySchema } from './schemas.js';
import type { RouteDef } from './route-def.js';

// Telemetry (Kernel's browsers.telemetry): a session's events, by category, kept while it runs.

export * from './telemetry-config.js';
import { TELEMETRY_CATEGORIES } from './telemetry-config.js';

/** What a client may filter on: the configurable categories, and `monitor` (the CDP collector's health). */
const QUERY_CATEGORIES = [...TELEMETRY_CATEGORIES, 'monitor'] as const;

export const TelemetryEnvelopeSchema = Type.Object({
  seq: Type.Integer({ description: 'Increases by one per event of the session; gaps mean events were dropped' }),
  event: Type.Object(
    {
      type: Type.String(),
      category: Type.String(),
      ts: Type.Integer({ description: 'Unix microseconds' }),
      source: Type.Object({ kind: Type.String(), event: Type.Optional(Type.String()) }, { additionalProperties: true }),
      data: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      truncated: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: true },
  ),
});
export type TelemetryEnvelope = Static<typeof TelemetryEnvelopeSchema>;

const TimeBound = Type.String({ maxLength: 64, description: 'An RFC 3339 time, or a duration ago such as 5m, 90s, 2h' });

export const TelemetryEventsQuerySchema = Type.Object({
  category: Type.Optional(Type.Array(Type.Union(QUERY_CATEGORIES.map((c) => Type.Literal(c))), { maxItems: 20 })),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'asc' })),
  since: Type.Optional(TimeBound),
  until: Type.Optional(TimeBound),
  offset: Type.Optional(Type.Integer({ minimum: 0, description: 'A seq cursor: the X-Next-Offset of the previous page' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
});
export type TelemetryEventsQuery = Static<typeof TelemetryEventsQuerySchema>;

export const TelemetryStreamQuerySchema = Type.Object({
  replay: Type.Optional(Type.String({ maxLength: 16, description: '`all`: from the oldest event kept; anything else: new events only' })),
});
export type TelemetryStreamQuery = Static<typeof TelemetryStreamQuerySchema>;

export const telemetryRoutes = {
  telemetryEvents: {
    method: 'GET',
    url: '/browsers/:id/telemetry/events',
    auth: 'key',
    summary:
      "A page of the session's telemetry events ({seq, event}), oldest first (order=desc: newest first), within since..until (default: the last 5 minutes); X-Next-Offset is a seq cursor. Empty once the session has ended",
    tag: 'telemetry',
    params: IdParamsSchema,
    querystring: TelemetryEventsQuerySchema,
    success: { status: 200, body: Type.Array(TelemetryEnvelopeSchema) },
  },
  telemetryStream: {
    method: 'GET',
    url: '/browsers/:id/telemetry/stream',
    auth: 'key',
    summary:
      "The session's telemetry events as server-sent events: `id:` is the seq (send it back as Last-Event-ID to resume), `data:` the {seq, event} envelope, a comment every 15 s; closes when the session ends",
    tag: 'telemetry',
    params: IdParamsSchema,
    querystring: TelemetryStreamQuerySchema,
    success: { status: 200, body: null },
    produces: 'text/event-stream',
  },
  sessionTelemetryStream: {
    method: 'GET',
    url: '/browser/telemetry/stream',
    auth: 'session-jwt',
    summary: 'telemetryStream for the session named by the jwt: where the official SDK sends it (base_url + /telemetry/stream)',
    tag: 'telemetry',
    querystring: Type.Object({ ...JwtQuerySchema.properties, ...TelemetryStreamQuerySchema.properties }),
    success: { status: 200, body: null },
    produces: 'text/event-stream',
    hidden: true,
  },
} as const satisfies Record<string, RouteDef>;
