import { Type, type Static } from 'typebox';
import type { RouteDef } from './route-def.js';
import { BrowserPoolSchema } from './pools.js';
import { BrowserSessionSchema } from './browsers.js';

/** A running session as a dashboard shows it: the API object plus who is connected and when it times out. */
export const WatchSessionSchema = Type.Object({
  session: BrowserSessionSchema,
  cdp_clients: Type.Integer({ description: 'Connected CDP clients' }),
  viewers: Type.Integer({ description: 'Connected live-view viewers' }),
  timeout_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'When the inactivity timeout ends the session unless a client connects; null while one is connected (or for an idle pool browser)',
  }),
});
export type WatchSession = Static<typeof WatchSessionSchema>;

/** A running invocation, in the fields of Kernel's invocation object a dashboard shows. */
export const WatchInvocationSchema = Type.Object(
  {
    id: Type.String(),
    app_name: Type.Optional(Type.String()),
    action_name: Type.Optional(Type.String()),
    status: Type.String(),
    started_at: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { additionalProperties: true },
);
export type WatchInvocation = Static<typeof WatchInvocationSchema>;

/** Sent when the stream opens and after every change (debounced): everything the org has running. */
export const WatchSnapshotSchema = Type.Object({
  event: Type.Literal('snapshot'),
  server_time: Type.String({ format: 'date-time' }),
  sessions: Type.Array(WatchSessionSchema),
  pools: Type.Array(BrowserPoolSchema),
  invocations: Type.Array(WatchInvocationSchema),
});
export type WatchSnapshot = Static<typeof WatchSnapshotSchema>;

/** Sent every second, so countdowns follow the server's clock. */
export const WatchTickSchema = Type.Object({ event: Type.Literal('tick'), server_time: Type.String({ format: 'date-time' }) });
export type WatchTick = Static<typeof WatchTickSchema>;

export const watchRoutes = {
  watch: {
    method: 'GET',
    url: '/watch',
    auth: 'key',
    summary:
      "Live feed of the org's running sessions, pools and invocations (server-sent events): a `snapshot` event on open and after each change, a `tick` event each second, `sse_heartbeat` events",
    tag: 'daemon',
    success: { status: 200, body: null },
    produces: 'text/event-stream',
  },
  watchSnapshot: {
    method: 'GET',
    url: '/watch/snapshot',
    auth: 'key',
    summary:
      "The feed's snapshot now, as one JSON object: the org's running sessions (with connected clients and when each times out), pools and invocations",
    tag: 'daemon',
    success: { status: 200, body: WatchSnapshotSchema },
  },
} as const satisfies Record<string, RouteDef>;
