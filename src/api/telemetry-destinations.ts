import { Type, type Static } from 'typebox';
import { NoContent, type RouteDef } from './route-def.js';
import { IdParamsSchema, PaginationQuery } from './schemas.js';

// OTLP destinations (Kernel's telemetry.destinations): collectors a session's telemetry is
// exported to over OTLP/HTTP, chosen on create with telemetry.export.otlp.destination.

const strict = { additionalProperties: false } as const;
/** RFC 9110 token characters. */
const HeaderNameSchema = Type.String({ minLength: 1, maxLength: 256, pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" });
const HeaderValueSchema = Type.String({ maxLength: 8192, pattern: '^[\\t\\u0020-\\u007e\\u0080-\\u00ff]*$' });
const DestinationNameSchema = Type.String({ minLength: 1, maxLength: 255, pattern: '\\S' });
const EndpointSchema = Type.String({
  format: 'uri',
  maxLength: 2048,
  description: 'The collector without a signal path (http://127.0.0.1:4318, not .../v1/logs): /v1/logs is added',
});

export const OtlpDestinationSchema = Type.Object({
  id: Type.String(),
  name: Type.String({ description: 'Unique in the organization; usable in place of the id' }),
  endpoint: Type.String(),
  headers: Type.Record(Type.String(), Type.String(), { description: 'Sent with each export; names canonical, values redacted as ""' }),
  description: Type.Optional(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
export type OtlpDestination = Static<typeof OtlpDestinationSchema>;

export const CreateOtlpDestinationSchema = Type.Object(
  {
    name: DestinationNameSchema,
    endpoint: EndpointSchema,
    description: Type.Optional(Type.String({ maxLength: 1024 })),
    headers: Type.Optional(
      Type.Record(HeaderNameSchema, HeaderValueSchema, {
        // Without it a name that is not a token (or a value that is not a string under it) passes.
        additionalProperties: false,
        description: 'Sent with each export, typically an ingestion key; kept 0600, never returned',
      }),
    ),
  },
  strict,
);
export type CreateOtlpDestinationBody = Static<typeof CreateOtlpDestinationSchema>;

export const UpdateOtlpDestinationSchema = Type.Object(
  {
    name: Type.Optional(DestinationNameSchema),
    endpoint: Type.Optional(EndpointSchema),
    description: Type.Optional(Type.String({ maxLength: 1024 })),
    headers: Type.Optional(
      Type.Record(HeaderNameSchema, Type.Union([HeaderValueSchema, Type.Null()]), {
        additionalProperties: false,
        description: 'Edits header by header: a value sets one, null removes it, others stay; sessions exporting use the new values at once',
      }),
    ),
  },
  strict,
);
export type UpdateOtlpDestinationBody = Static<typeof UpdateOtlpDestinationSchema>;

export const ListOtlpDestinationsQuerySchema = Type.Object({
  ...PaginationQuery,
  name: Type.Optional(Type.String({ description: 'Exact name (case-insensitive)' })),
  query: Type.Optional(Type.String({ description: 'Substring of the name or endpoint, or an exact id' })),
});
export type ListOtlpDestinationsQuery = Static<typeof ListOtlpDestinationsQuerySchema>;

export const telemetryDestinationRoutes = {
  createTelemetryDestination: {
    method: 'POST',
    url: '/telemetry/destinations',
    auth: 'key',
    summary: "Add an OTLP/HTTP collector that sessions' telemetry can be exported to (telemetry.export.otlp on create)",
    tag: 'telemetry',
    body: CreateOtlpDestinationSchema,
    success: { status: 200, body: OtlpDestinationSchema },
  },
  listTelemetryDestinations: {
    method: 'GET',
    url: '/telemetry/destinations',
    auth: 'key',
    summary: 'List OTLP destinations (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'telemetry',
    querystring: ListOtlpDestinationsQuerySchema,
    success: { status: 200, body: Type.Array(OtlpDestinationSchema) },
  },
  getTelemetryDestination: {
    method: 'GET',
    url: '/telemetry/destinations/:id',
    auth: 'key',
    summary: 'An OTLP destination by id or name',
    tag: 'telemetry',
    params: IdParamsSchema,
    success: { status: 200, body: OtlpDestinationSchema },
  },
  updateTelemetryDestination: {
    method: 'PATCH',
    url: '/telemetry/destinations/:id',
    auth: 'key',
    summary: 'Change an OTLP destination: headers are edited one by one, and sessions exporting to it use the change at once',
    tag: 'telemetry',
    params: IdParamsSchema,
    body: UpdateOtlpDestinationSchema,
    success: { status: 200, body: OtlpDestinationSchema },
  },
  deleteTelemetryDestination: {
    method: 'DELETE',
    url: '/telemetry/destinations/:id',
    auth: 'key',
    summary: 'Delete an OTLP destination; 409 while a running session exports to it',
    tag: 'telemetry',
    params: IdParamsSchema,
    success: NoContent,
  },
} as const satisfies Record<string, RouteDef>;
