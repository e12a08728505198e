import { Type, type Static } from 'typebox';
import { NoContent, type RouteDef } from './route-def.js';
import { BrowserSessionSchema } from './browsers.js';
import { IdParamsSchema, PaginationQuery } from './schemas.js';

// Invocations of app actions (kernel-wire "Invocations, apps, deployments").

const strict = { additionalProperties: false } as const;

export const INVOCATION_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
export type InvocationStatus = (typeof INVOCATION_STATUSES)[number];
const StatusSchema = Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed')]);
const FinalStatusSchema = Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]);

export const ASYNC_TIMEOUT = { min: 10, max: 3600, default: 900 } as const;

export const CreateInvocationSchema = Type.Object(
  {
    app_name: Type.String({ minLength: 1, description: 'Application name' }),
    version: Type.String({ minLength: 1, description: 'Application version label; "latest" is the newest deployment' }),
    action_name: Type.String({ minLength: 1, description: 'Action to invoke' }),
    payload: Type.Optional(Type.String({ description: 'Input data, a JSON string' })),
    async: Type.Optional(Type.Boolean({ description: 'Answer 202 with status queued at once (default false)' })),
    async_timeout_seconds: Type.Optional(
      Type.Integer({
        minimum: ASYNC_TIMEOUT.min,
        maximum: ASYNC_TIMEOUT.max,
        description: `Async invocations end failed after this long (default ${ASYNC_TIMEOUT.default})`,
      }),
    ),
  },
  strict,
);
export type CreateInvocationBody = Static<typeof CreateInvocationSchema>;

export const UpdateInvocationSchema = Type.Object(
  {
    status: FinalStatusSchema,
    output: Type.Optional(Type.String({ description: 'Output rendered as a JSON string' })),
  },
  strict,
);
export type UpdateInvocationBody = Static<typeof UpdateInvocationSchema>;

export const InvocationSchema = Type.Object(
  {
    id: Type.String(),
    app_name: Type.String(),
    version: Type.String(),
    action_name: Type.String(),
    status: StatusSchema,
    started_at: Type.String({ description: 'RFC 3339 with nanoseconds' }),
    finished_at: Type.Union([Type.String(), Type.Null()], { description: 'RFC 3339 with nanoseconds; null while unfinished' }),
    payload: Type.Optional(Type.String()),
    output: Type.Optional(Type.String({ description: "The action's return value as a JSON string" })),
    status_reason: Type.Optional(Type.String()),
  },
  { description: 'An invocation of an action' },
);
export type Invocation = Static<typeof InvocationSchema>;

export const ListInvocationsQuerySchema = Type.Object({
  ...PaginationQuery,
  app_name: Type.Optional(Type.String()),
  version: Type.Optional(Type.String()),
  action_name: Type.Optional(Type.String()),
  status: Type.Optional(StatusSchema),
  deployment_id: Type.Optional(Type.String()),
  query: Type.Optional(Type.String({ description: 'Matches the id, app name or action name (substring)' })),
  since: Type.Optional(Type.String({ description: 'Started since: an RFC 3339 time or a duration such as 5m' })),
});
export type ListInvocationsQuery = Static<typeof ListInvocationsQuerySchema>;

export const InvocationEventsQuerySchema = Type.Object({
  since: Type.Optional(Type.String({ description: 'Log lines since: an RFC 3339 time or a duration such as 5m' })),
});

export const InvocationBrowsersSchema = Type.Object({ browsers: Type.Array(BrowserSessionSchema) });

export const invocationRoutes = {
  createInvocation: {
    method: 'POST',
    url: '/invocations',
    auth: 'key',
    summary: 'Invoke an action: sync answers the finished invocation (or the running one after 100 s); async answers 202 queued',
    tag: 'invocations',
    body: CreateInvocationSchema,
    success: { status: 200, body: InvocationSchema },
    alsoStatus: 202,
  },
  listInvocations: {
    method: 'GET',
    url: '/invocations',
    auth: 'key',
    summary: 'List invocations, newest first (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'invocations',
    querystring: ListInvocationsQuerySchema,
    success: { status: 200, body: Type.Array(InvocationSchema) },
  },
  getInvocation: {
    method: 'GET',
    url: '/invocations/:id',
    auth: 'key',
    summary: 'Get an invocation',
    tag: 'invocations',
    params: IdParamsSchema,
    success: { status: 200, body: InvocationSchema },
  },
  updateInvocation: {
    method: 'PATCH',
    url: '/invocations/:id',
    auth: 'key',
    summary: 'Set the final status (and output); stops a running action, and failed ends its browsers',
    tag: 'invocations',
    params: IdParamsSchema,
    body: UpdateInvocationSchema,
    success: { status: 200, body: InvocationSchema },
  },
  invocationEvents: {
    method: 'GET',
    url: '/invocations/:id/events',
    auth: 'key',
    summary: 'Server-sent events: log, invocation_state, error, sse_heartbeat; ends at a terminal state',
    tag: 'invocations',
    params: IdParamsSchema,
    querystring: InvocationEventsQuerySchema,
    success: { status: 200, body: null },
    produces: 'text/event-stream',
  },
  listInvocationBrowsers: {
    method: 'GET',
    url: '/invocations/:id/browsers',
    auth: 'key',
    summary: 'The active browser sessions created within an invocation',
    tag: 'invocations',
    params: IdParamsSchema,
    success: { status: 200, body: InvocationBrowsersSchema },
  },
  deleteInvocationBrowsers: {
    method: 'DELETE',
    url: '/invocations/:id/browsers',
    auth: 'key',
    summary: 'End every browser session created within an invocation',
    tag: 'invocations',
    params: IdParamsSchema,
    success: NoContent,
  },
} as const satisfies Record<string, RouteDef>;
