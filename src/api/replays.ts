import { Type, type Static } from 'typebox';
import { IdParamsSchema, JwtQuerySchema } from './schemas.js';
import { NoContent, type RouteDef } from './route-def.js';

// Replays (Kernel's browsers.replays): recordings of a session's screen as mp4.

export const ReplaySchema = Type.Object({
  replay_id: Type.String(),
  started_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  finished_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'null while it records' }),
  replay_view_url: Type.String({ description: 'Where a browser plays it once finished (carries a jwt; no API key needed)' }),
});
export type Replay = Static<typeof ReplaySchema>;

export const ReplayStartSchema = Type.Object(
  {
    framerate: Type.Optional(Type.Integer({ minimum: 1, maximum: 60, default: 10 })),
    max_duration_in_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 4 * 3600, description: 'Stops by itself after this long' })),
    record_audio: Type.Optional(Type.Boolean({ description: 'Sessions have no audio here: true is refused' })),
  },
  { additionalProperties: false },
);
export type ReplayStartBody = Static<typeof ReplayStartSchema>;

const ReplayParamsSchema = Type.Object({ ...IdParamsSchema.properties, replay_id: Type.String({ maxLength: 64 }) });

export const replayRoutes = {
  listReplays: {
    method: 'GET',
    url: '/browsers/:id/replays',
    auth: 'key',
    summary: "A session's replays, also once it has ended",
    tag: 'replays',
    params: IdParamsSchema,
    success: { status: 200, body: Type.Array(ReplaySchema) },
  },
  startReplay: {
    method: 'POST',
    url: '/browsers/:id/replays',
    auth: 'key',
    summary: "Start recording the session's screen (409 while another recording of it runs)",
    tag: 'replays',
    params: IdParamsSchema,
    body: ReplayStartSchema,
    success: { status: 200, body: ReplaySchema },
  },
  stopReplay: {
    method: 'POST',
    url: '/browsers/:id/replays/:replay_id/stop',
    auth: 'key',
    summary: 'Stop a recording; the mp4 is ready when this answers',
    tag: 'replays',
    params: ReplayParamsSchema,
    success: NoContent,
  },
  downloadReplay: {
    method: 'GET',
    url: '/browsers/:id/replays/:replay_id',
    auth: 'key',
    summary: 'The mp4 of a finished replay (409 while it records)',
    tag: 'replays',
    params: ReplayParamsSchema,
    success: { status: 200, body: null },
    produces: 'video/mp4',
  },
  viewReplay: {
    method: 'GET',
    url: '/browser/replays/:replay_id',
    auth: 'session-jwt',
    summary: "A replay's mp4 for a browser to play: replay_view_url",
    tag: 'replays',
    params: Type.Object({ replay_id: Type.String({ maxLength: 64 }) }),
    querystring: JwtQuerySchema,
    success: { status: 200, body: null },
    produces: 'video/mp4',
    hidden: true,
  },
} as const satisfies Record<string, RouteDef>;
