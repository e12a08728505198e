import { Type, type TInteger } from 'typebox';
import type { RouteDef } from './route-def.js';

// The daemon itself: its health and the local admin's routes (kernel-wire has no such routes; rbrowse's own).

/** Bodies refuse unknown fields: a typo such as `timout_seconds` must be a 400, not silently dropped. */
const strict = { additionalProperties: false } as const;

/** A /health object of whole-number counters, all named in `names`. */
function counters<const K extends string>(names: readonly K[], description: string) {
  const properties = Object.fromEntries(names.map((n) => [n, Type.Integer({ minimum: 0 })])) as Record<K, TInteger>;
  return Type.Optional(Type.Object(properties, { description }));
}

export const HealthSchema = Type.Object({
  status: Type.Literal('ok'),
  standby: Type.Optional(
    Type.Record(
      Type.String(),
      Type.Object({
        ready: Type.Integer({ minimum: 0 }),
        wanted: Type.Integer({ minimum: 0 }),
        launching: Type.Optional(
          Type.Literal(true, { description: 'a browser of this kind is launching now; a create that finds none ready takes it' }),
        ),
        learned: Type.Optional(
          Type.Literal(true, { description: 'kept because creates asked for this kind (standby learn=K), until none has for a while' }),
        ),
        learned_until: Type.Optional(
          Type.String({
            format: 'date-time',
            description:
              'when a learned kind is forgotten and its browsers stopped unless a create asks for it first (RBROWSE_STANDBY_FORGET_SECONDS)',
          }),
        ),
        burst: Type.Optional(
          Type.Integer({ minimum: 1, description: 'of `wanted`, how many are kept extra because creates of this kind come in a burst' }),
        ),
        burst_until: Type.Optional(
          Type.String({
            format: 'date-time',
            description:
              "when the burst's extra browsers are stopped unless another create of the kind comes first (RBROWSE_STANDBY_BURST_HOLD_SECONDS); absent while they are still being launched",
          }),
        ),
      }),
      {
        description:
          'Browsers kept launched for instant creates, by kind (headless|headful@WxH@R): how many are ready of how many wanted, and why and until when the learned and burst ones are kept',
      },
    ),
  ),
  standby_burst: Type.Optional(
    Type.Object(
      {
        burst_budget_mb: Type.Integer({ minimum: 0 }),
        burst_used_mb: Type.Integer({ minimum: 0 }),
        burst_hold_seconds: Type.Number({ minimum: 0 }),
      },
      {
        description:
          'The memory browsers kept for bursts of creates may take (RBROWSE_STANDBY_BURST_MB), what they take now, and how long they stay once the burst stops',
      },
    ),
  ),
  standby_served: counters(
    ['creates', 'from_ready', 'from_launch'],
    'Since the daemon started: the creates a standby browser could serve, and how many one served, ready or still launching (the rest launched a browser of their own)',
  ),
  spare_boxes: counters(
    ['ready', 'wanted', 'served'],
    'Empty session boxes kept started for creates no standby browser serves (RBROWSE_SPARE_BOXES): how many are ready of how many kept, and how many creates took one since the daemon started',
  ),
  app_spare_boxes: counters(
    ['ready', 'deployments', 'served'],
    'App boxes kept started for the next invocation of deployments invoked lately (RBROWSE_APP_SPARE_BOXES each): how many are ready, for how many deployments, and how many invocations took one since the daemon started',
  ),
  launches: Type.Optional(
    Type.Object(
      {
        launching: Type.Integer({ minimum: 0 }),
        queued: Type.Integer({ minimum: 0 }),
        limit: Type.Integer({ minimum: 1 }),
      },
      { description: 'Browser launches under way, creates waiting for a turn, and how many this machine starts at once' },
    ),
  ),
});

export const CreateKeySchema = Type.Object({ org: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9._-]+$' }) }, strict);
export const CreatedKeySchema = Type.Object({ org_id: Type.String(), org: Type.String(), key: Type.String() });

export const DaemonResourcesSchema = Type.Object({
  pid: Type.Integer(),
  rss_bytes: Type.Integer({ description: 'Resident memory of the daemon process' }),
  heap_used_bytes: Type.Integer({ description: 'JavaScript heap in use' }),
  open_fds: Type.Integer({ description: 'File descriptors the daemon holds' }),
  children: Type.Integer({ description: 'Processes whose parent is the daemon or its browser launcher (the launcher itself not counted)' }),
  resources: Type.Record(Type.String(), Type.Integer(), {
    description: "Node's active handles and requests by type (timers, sockets, child processes...)",
  }),
  sessions: Type.Integer({ description: 'Browser sessions running, pool browsers included (standby browsers are counted in /health)' }),
  event_loop_delay_ms: Type.Object(
    { p50: Type.Number(), p99: Type.Number(), max: Type.Number() },
    {
      description:
        "How late the daemon's event loop ran, since the previous reading (every request waits at least that). It is sampled only after a reading, for 10 minutes from the last one: a first reading, or one after a longer pause, says 0",
    },
  ),
  connections: Type.Object(
    {
      open: Type.Integer(),
      waiting: Type.Integer(),
      evicted: Type.Integer(),
      refused: Type.Integer(),
      websockets: Type.Integer(),
      held_bytes: Type.Integer(),
    },
    {
      description:
        'HTTP connections open now (waiting: without a request in progress), and since the start: closed to make room for newcomers at the cap, refused at the cap; websockets open and the bytes of their unfinished client messages held',
    },
  ),
});

export const daemonRoutes = {
  health: {
    method: 'GET',
    url: '/health',
    auth: 'none',
    summary: 'Liveness check; needs no credentials',
    tag: 'daemon',
    success: { status: 200, body: HealthSchema },
  },
  adminCreateKey: {
    method: 'POST',
    url: '/admin/keys',
    auth: 'admin',
    summary: 'Create an API key for an organization (created when missing); local admin token only',
    tag: 'admin',
    body: CreateKeySchema,
    success: { status: 200, body: CreatedKeySchema },
  },
  adminResources: {
    method: 'GET',
    url: '/admin/resources',
    auth: 'admin',
    summary: "The daemon's own resources (memory, file descriptors, handles, children): what must return to idle levels; local admin token only",
    tag: 'admin',
    success: { status: 200, body: DaemonResourcesSchema },
  },
} as const satisfies Record<string, RouteDef>;
