import { Type, type Static, type TInteger } from 'typebox';
import { TelemetryConfigSchema, TelemetryRequestSchema } from './telemetry-config.js';

/** Bodies refuse unknown fields: a typo such as `timout_seconds` must be a 400, not silently dropped. */
const strict = { additionalProperties: false } as const;

export const ErrorDetailSchema = Type.Object({ code: Type.String(), message: Type.String() });
export const ErrorBodySchema = Type.Object(
  {
    code: Type.String({ description: 'Top-level error code, such as bad_request' }),
    message: Type.String(),
    details: Type.Optional(Type.Array(ErrorDetailSchema)),
    inner_error: Type.Optional(ErrorDetailSchema),
    executors: Type.Optional(Type.Array(Type.Unknown(), { description: 'A 409 for one Playwright executor too many: the ones that exist' })),
    invocation_id: Type.Optional(Type.String({ description: 'A WebMCP outcome_unknown: the invocation that started' })),
  },
  { description: 'The error body of every error response' },
);

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
        burst: Type.Optional(
          Type.Integer({ minimum: 1, description: 'of `wanted`, how many are kept extra because creates of this kind come in a burst' }),
        ),
      }),
      {
        description: 'Browsers kept launched for instant creates, by kind (headless|headful@WxH@R): how many are ready of how many wanted',
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

export const ViewportSchema = Type.Object(
  {
    width: Type.Integer({ minimum: 1, description: 'Window width in pixels' }),
    height: Type.Integer({ minimum: 1, description: 'Window height in pixels' }),
    refresh_rate: Type.Optional(Type.Integer({ minimum: 1, description: 'Refresh rate; derived when omitted' })),
  },
  strict,
);

export const ProfileSelectionSchema = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1 })),
    name: Type.Optional(Type.String({ minLength: 1 })),
    save_changes: Type.Optional(Type.Boolean()),
  },
  strict,
);

export const ExtensionSelectionSchema = Type.Object(
  { id: Type.Optional(Type.String({ minLength: 1 })), name: Type.Optional(Type.String({ minLength: 1 })) },
  strict,
);

export const PersistenceSchema = Type.Object({ id: Type.String({ minLength: 1 }) }, strict);

export const TagsSchema = Type.Record(Type.String({ maxLength: 128 }), Type.String({ maxLength: 256 }), {
  maxProperties: 50,
});

export const SessionNameSchema = Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\u0000-\\u001f/]+$' });

export const TimeoutSecondsSchema = Type.Integer({
  minimum: 10,
  maximum: 259200,
  description: 'Seconds of inactivity before the session ends (10 to 259200)',
});

const StartUrlSchema = Type.String({ format: 'uri', maxLength: 8192 });

/** Kernel's `proxy` (0.94, for proxy_id): exactly one of a proxy by id, by name, or an egress mode. */
export const BrowserProxySelectionSchema = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1 })),
    name: Type.Optional(Type.String({ minLength: 1 })),
    mode: Type.Optional(
      Type.Union([Type.Literal('direct'), Type.Literal('default')], {
        description: "direct: no proxy, whatever stealth says; default: a stealth session's default proxy (RBROWSE_STEALTH_PROXY), else direct",
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1, maxProperties: 1 },
);
export type BrowserProxySelection = Static<typeof BrowserProxySelectionSchema>;

/**
 * Kernel's `network` (0.94): private hosts its browsers reach directly instead of through Kernel's
 * managed egress. A local session has no managed egress: it reaches private hosts (a VPN the machine
 * joined, a LAN) through its own network already; the setting is kept and answered.
 */
export const NetworkSchema = Type.Object(
  { private_hosts: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 100 })) },
  { additionalProperties: false },
);

/**
 * Kernel's `chrome_policy`: Chrome enterprise policies by name, applied to the session's browser
 * as managed policies. Their values are Chromium's to check (a value of the wrong type is ignored
 * there, as in any managed Chrome); the policies rbrowse itself manages are refused.
 */
export const ChromePolicySchema = Type.Record(Type.String({ pattern: '^[A-Za-z][A-Za-z0-9]{0,99}$' }), Type.Unknown(), {
  maxProperties: 500,
  additionalProperties: false,
  description:
    'Chrome enterprise policy overrides (https://chromeenterprise.google/policies/), by policy name; the ones rbrowse manages (extensions, proxy, remote debugging and developer tools) are refused',
});

/** Kernel's regions: a local daemon has one (the machine), and keeps whichever a client names. */
export const RegionSchema = Type.Union([Type.Literal('us-east'), Type.Literal('eu-west')]);

export const CreateBrowserSchema = Type.Object(
  {
    invocation_id: Type.Optional(Type.String({ minLength: 1 })),
    persistence: Type.Optional(PersistenceSchema),
    stealth: Type.Optional(Type.Boolean()),
    headless: Type.Optional(Type.Boolean()),
    timeout_seconds: Type.Optional(TimeoutSecondsSchema),
    profile: Type.Optional(ProfileSelectionSchema),
    extensions: Type.Optional(Type.Array(ExtensionSelectionSchema, { maxItems: 20 })),
    proxy_id: Type.Optional(Type.String()),
    proxy: Type.Optional(BrowserProxySelectionSchema),
    region: Type.Optional(RegionSchema),
    network: Type.Optional(NetworkSchema),
    gpu: Type.Optional(
      Type.Boolean({
        description: 'GPU acceleration: needs headless false and a GPU on this machine (refused with 400 and the reason when there is none)',
      }),
    ),
    chrome_policy: Type.Optional(ChromePolicySchema),
    memory: Type.Optional(
      Type.Union([Type.Literal('8GiB'), Type.Literal('16GiB')], { description: "The session's memory limit (its box's), raised to this size" }),
    ),
    viewport: Type.Optional(ViewportSchema),
    kiosk_mode: Type.Optional(Type.Boolean()),
    name: Type.Optional(SessionNameSchema),
    tags: Type.Optional(TagsSchema),
    start_url: Type.Optional(StartUrlSchema),
    telemetry: Type.Optional(Type.Union([TelemetryRequestSchema, Type.Null()])),
  },
  strict,
);
export type CreateBrowserBody = Static<typeof CreateBrowserSchema>;

export const UpdateViewportSchema = Type.Object(
  {
    width: Type.Integer({ minimum: 1 }),
    height: Type.Integer({ minimum: 1 }),
    refresh_rate: Type.Optional(Type.Integer({ minimum: 1 })),
    force: Type.Optional(Type.Boolean({ description: 'Resize even while live-view viewers are connected' })),
  },
  strict,
);

export const UpdateBrowserSchema = Type.Object(
  {
    proxy_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    proxy: Type.Optional(BrowserProxySelectionSchema),
    // Stealth sessions go through the daemon's default stealth proxy (RBROWSE_STEALTH_PROXY), as
    // Kernel's through its managed one; true: direct from now on, false: through it again.
    disable_default_proxy: Type.Optional(Type.Boolean()),
    telemetry: Type.Optional(Type.Union([TelemetryRequestSchema, Type.Null()])),
    // A profile for a session that has none: its browser restarts in place with the profile's user data.
    profile: Type.Optional(ProfileSelectionSchema),
    viewport: Type.Optional(UpdateViewportSchema),
    name: Type.Optional(Type.Union([SessionNameSchema, Type.Null()])),
    tags: Type.Optional(Type.Union([TagsSchema, Type.Null()])),
  },
  strict,
);
export type UpdateBrowserBody = Static<typeof UpdateBrowserSchema>;

export const ProfileMetadataSchema = Type.Object({
  id: Type.String(),
  name: Type.Optional(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.Optional(Type.String({ format: 'date-time' })),
  last_used_at: Type.Optional(Type.String({ format: 'date-time' })),
});

export const BrowserPoolRefSchema = Type.Object({
  id: Type.String({ description: 'Browser pool id' }),
  name: Type.Optional(Type.String({ description: 'Browser pool name, if set' })),
});

export const LiveViewSchema = Type.Object(
  {
    url: Type.String({ description: 'The live view: watch the browser and take control of it' }),
    read_only_url: Type.String({ description: 'The same view without input, on a jwt of its own (safe to share)' }),
    kind: Type.Union([Type.Literal('vnc'), Type.Literal('screencast')], {
      description: "vnc: a headful session's screen (its browser_live_view_url); screencast: a headless session's page, as CDP screencast frames",
    }),
  },
  { description: "A running session's live view, headless sessions included" },
);
export type LiveView = Static<typeof LiveViewSchema>;

export const BrowserSessionSchema = Type.Object(
  {
    session_id: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    cdp_ws_url: Type.String({ description: 'Chrome DevTools Protocol websocket; carries a jwt query parameter' }),
    webdriver_ws_url: Type.String({ description: "WebDriver BiDi websocket (chromium-bidi's mapper in the session); the cdp_ws_url's jwt" }),
    base_url: Type.Optional(
      Type.String({ description: "Where the official SDK sends a session's curl requests and browser.fetch() itself (with the cdp_ws_url's jwt)" }),
    ),
    headless: Type.Boolean(),
    stealth: Type.Boolean(),
    timeout_seconds: Type.Integer(),
    region: Type.String({ description: 'The region asked for on create (us-east by default); the browser runs on this machine' }),
    network: Type.Optional(NetworkSchema),
    chrome_policy: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'The Chrome enterprise policies applied to this browser' }),
    ),
    memory: Type.String({
      description: "Kernel's name of the session's memory limit: the size asked for, or the smallest that covers the configured one",
    }),
    browser_live_view_url: Type.Optional(Type.String()),
    persistence: Type.Optional(Type.Object({ id: Type.String() })),
    gpu: Type.Optional(Type.Boolean({ description: 'Whether the browser has GPU acceleration' })),
    profile: Type.Optional(ProfileMetadataSchema),
    profile_save_changes: Type.Optional(
      Type.Boolean({ description: "Whether this session's changes are written back to its profile when it ends; absent without a profile" }),
    ),
    proxy_id: Type.Optional(Type.String()),
    proxy: Type.Optional(
      Type.Object(
        { id: Type.Optional(Type.String()), name: Type.Optional(Type.String()), mode: Type.Optional(Type.String()) },
        { description: 'The resolved proxy: the selected one by id and name, or the egress mode (direct or default)' },
      ),
    ),
    viewport: Type.Optional(Type.Object({ width: Type.Integer(), height: Type.Integer(), refresh_rate: Type.Optional(Type.Integer()) })),
    kiosk_mode: Type.Optional(Type.Boolean()),
    deleted_at: Type.Optional(Type.String({ format: 'date-time' })),
    name: Type.Optional(Type.String()),
    tags: Type.Optional(TagsSchema),
    start_url: Type.Optional(Type.String()),
    invocation_id: Type.Optional(Type.String()),
    pool: Type.Optional(BrowserPoolRefSchema),
    telemetry: Type.Optional(
      Type.Union([TelemetryConfigSchema, Type.Null()], { description: 'The categories captured; absent while telemetry is off' }),
    ),
    usage: Type.Optional(Type.Object({ uptime_ms: Type.Integer({ description: 'How long the session has run, or ran until it ended' }) })),
  },
  { description: 'A browser session' },
);
export type BrowserSession = Static<typeof BrowserSessionSchema>;

export const IdParamsSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });

export const GetBrowserQuerySchema = Type.Object({
  include_deleted: Type.Optional(Type.Boolean({ default: false })),
});

export const PaginationQuery = {
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
};

export const ListBrowsersQuerySchema = Type.Object({
  ...PaginationQuery,
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('deleted'), Type.Literal('all')], { default: 'active' })),
  include_deleted: Type.Optional(Type.Boolean({ description: 'Deprecated: same as status=all' })),
  query: Type.Optional(
    Type.String({ description: "Matches a session's id, name, profile (id or name), proxy id or pool name (substring, any case)" }),
  ),
  region: Type.Optional(RegionSchema),
  tags: Type.Optional(
    Type.Record(Type.String(), Type.String(), { description: 'Sessions carrying every one of these tags (?tags[team]=backend&tags[env]=staging)' }),
  ),
});
export type ListBrowsersQuery = Static<typeof ListBrowsersQuerySchema>;

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

export const CdpVersionSchema = Type.Object(
  {
    Browser: Type.String(),
    'Protocol-Version': Type.String(),
    'User-Agent': Type.String(),
    'V8-Version': Type.String(),
    'WebKit-Version': Type.String(),
    webSocketDebuggerUrl: Type.String(),
  },
  { additionalProperties: true },
);
export const JwtQuerySchema = Type.Object({ jwt: Type.Optional(Type.String()) });

// Browser pools. A pool's browsers take the session fields of POST /browsers, with the same schemas.
const { headless, stealth, kiosk_mode, viewport, profile, extensions, proxy_id, start_url, chrome_policy, region, network, telemetry, name, tags } =
  CreateBrowserSchema.properties;
const poolSessionFields = {
  headless,
  stealth,
  kiosk_mode,
  viewport,
  profile,
  extensions,
  proxy_id,
  start_url,
  chrome_policy,
  region,
  network,
  telemetry,
  refresh_on_profile_update: Type.Optional(
    Type.Boolean({ description: "Idle browsers are replaced when the pool's profile is saved (default true with a profile)" }),
  ),
};
/** A pool's region is fixed once it is made, as a session's. */
const { region: _fixedRegion, ...poolUpdateFields } = poolSessionFields;

export const PoolNameSchema = Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9._-]+$' });
const PoolSizeSchema = Type.Integer({ minimum: 1, maximum: 50, description: 'Browsers kept in the pool, idle and acquired' });
const FillRateSchema = Type.Integer({
  minimum: 0,
  description: 'Percent of size launched per minute (default 10); 0 launches nothing until it is raised (idle browsers stay)',
});
const PoolTimeoutSchema = Type.Integer({
  minimum: 10,
  maximum: 259200,
  description: 'Inactivity timeout of an acquired browser (default 600); idle pooled browsers never time out',
});

export const CreatePoolSchema = Type.Object(
  {
    name: Type.Optional(PoolNameSchema),
    size: PoolSizeSchema,
    fill_rate_per_minute: Type.Optional(FillRateSchema),
    timeout_seconds: Type.Optional(PoolTimeoutSchema),
    ...poolSessionFields,
  },
  strict,
);
export type CreatePoolBody = Static<typeof CreatePoolSchema>;

export const UpdatePoolSchema = Type.Object(
  {
    name: Type.Optional(Type.Union([PoolNameSchema, Type.Literal('')], { description: '"" leaves the name unchanged' })),
    size: Type.Optional(PoolSizeSchema),
    fill_rate_per_minute: Type.Optional(FillRateSchema),
    timeout_seconds: Type.Optional(PoolTimeoutSchema),
    ...poolUpdateFields,
    profile: Type.Optional(
      Type.Union([ProfileSelectionSchema, Type.Object({ id: Type.Literal('') }, strict)], {
        description: '{"id": ""} removes the profile',
      }),
    ),
    start_url: Type.Optional(Type.Union([StartUrlSchema, Type.Literal('')], { description: '"" removes it' })),
    discard_all_idle: Type.Optional(Type.Boolean({ description: 'Replace idle browsers with the new configuration now' })),
  },
  strict,
);
export type UpdatePoolBody = Static<typeof UpdatePoolSchema>;

export const BrowserPoolConfigSchema = Type.Object({
  size: Type.Integer(),
  fill_rate_per_minute: Type.Integer(),
  timeout_seconds: Type.Integer(),
  headless: Type.Boolean(),
  stealth: Type.Boolean(),
  kiosk_mode: Type.Boolean(),
  name: Type.Optional(Type.String()),
  viewport: Type.Optional(BrowserSessionSchema.properties.viewport),
  profile: Type.Optional(Type.Object({ id: Type.Optional(Type.String()), name: Type.Optional(Type.String()) })),
  extensions: Type.Optional(Type.Array(Type.Object({ id: Type.Optional(Type.String()), name: Type.Optional(Type.String()) }))),
  proxy_id: Type.Optional(Type.String()),
  start_url: Type.Optional(Type.String()),
  chrome_policy: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  network: Type.Optional(NetworkSchema),
  region: Type.Optional(RegionSchema),
  refresh_on_profile_update: Type.Optional(Type.Boolean()),
  telemetry: Type.Optional(TelemetryConfigSchema),
});
export type BrowserPoolConfig = Static<typeof BrowserPoolConfigSchema>;

export const BrowserPoolSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.Optional(Type.String()),
    created_at: Type.String({ format: 'date-time' }),
    available_count: Type.Integer({ description: 'Idle browsers ready to acquire' }),
    acquired_count: Type.Integer({ description: 'Browsers leased to clients' }),
    browser_pool_config: BrowserPoolConfigSchema,
    extension_ids: Type.Array(Type.String()),
    region: Type.String({ description: 'The region asked for on create (us-east by default); the pool runs on this machine' }),
    profile_id: Type.Optional(Type.String()),
    last_error: Type.Optional(
      Type.Object(
        { code: Type.String(), message: Type.String(), occurred_at: Type.String({ format: 'date-time' }) },
        { description: 'Why the latest launch failed; cleared by the next one that succeeds' },
      ),
    ),
  },
  { description: 'A browser pool' },
);
export type BrowserPool = Static<typeof BrowserPoolSchema>;

export const ListPoolsQuerySchema = Type.Object({
  ...PaginationQuery,
  name: Type.Optional(Type.String({ description: 'Exact pool name' })),
  query: Type.Optional(Type.String({ description: 'Matches the pool id exactly or the name (substring)' })),
  region: Type.Optional(RegionSchema),
});
export type ListPoolsQuery = Static<typeof ListPoolsQuerySchema>;

const ForceField = { force: Type.Optional(Type.Boolean({ description: 'End leased browsers too' })) };
export const DeletePoolSchema = Type.Object(ForceField, strict);
export const DeletePoolQuerySchema = Type.Object(ForceField);

export const AcquirePoolSchema = Type.Object(
  {
    acquire_timeout_seconds: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 3600, description: 'Default: the time to fill the pool at its fill rate' }),
    ),
    // Per lease: cleared when the browser is released.
    name,
    tags,
    start_url: Type.Optional(StartUrlSchema),
    telemetry: Type.Optional(
      Type.Union([TelemetryRequestSchema, Type.Null()], {
        description: "This lease's telemetry, merged onto the pool's as a PATCH would; the pool's again once the browser is released",
      }),
    ),
  },
  strict,
);
export type AcquirePoolBody = Static<typeof AcquirePoolSchema>;

export const ReleasePoolSchema = Type.Object(
  {
    session_id: Type.String({ minLength: 1 }),
    reuse: Type.Optional(Type.Boolean({ description: 'Default true; false ends the browser and the pool makes a new one' })),
  },
  strict,
);
export type ReleasePoolBody = Static<typeof ReleasePoolSchema>;

// Filesystem inside a session (kernel-wire "Filesystem"). Absolute paths and `..` are checked by
// the daemon (daemon/in-session/fs/paths.ts), so the message can say why a path is refused.
const FsPath = Type.String({ minLength: 1, maxLength: 4096, description: 'Absolute path as the browser sees it' });
const OctalMode = Type.String({ pattern: '^[0-7]{3,4}$', description: 'Octal mode, e.g. 755' });

export const FsPathBodySchema = Type.Object({ path: FsPath }, strict);
export const FsPathQuerySchema = Type.Object({ path: FsPath });
export const CreateDirectoryBodySchema = Type.Object({ path: FsPath, mode: Type.Optional(OctalMode) }, strict);
export const SetFilePermissionsBodySchema = Type.Object(
  {
    path: FsPath,
    mode: OctalMode,
    owner: Type.Optional(Type.String({ minLength: 1, description: 'User name or numeric id (best effort)' })),
    group: Type.Optional(Type.String({ minLength: 1, description: 'Group name or numeric id (best effort)' })),
  },
  strict,
);
export const MoveBodySchema = Type.Object({ src_path: FsPath, dest_path: FsPath }, strict);
export const WriteFileQuerySchema = Type.Object({ path: FsPath, mode: Type.Optional(OctalMode) });
export const FileInfoSchema = Type.Object({
  name: Type.String(),
  path: Type.String(),
  size_bytes: Type.Integer(),
  is_dir: Type.Boolean(),
  mod_time: Type.String({ format: 'date-time' }),
  mode: Type.String(),
});

// Computer control (kernel-wire "Computer control"; field names as the official SDK sends them).
// Coordinates inside the screen and key names are checked by the daemon (daemon/computer/).
const Coordinate = (description: string) => Type.Integer({ minimum: 0, description });
const HoldKeysSchema = Type.Array(Type.String({ minLength: 1 }), {
  maxItems: 16,
  description: 'Keys held during the action: ctrl, control, alt, shift, super, meta (any case) or X keysyms (Control_L, Shift_R, ...)',
});
const SmoothFields = {
  smooth: Type.Optional(Type.Boolean({ description: 'Accepted for compatibility; rbrowse moves in straight steps' })),
  duration_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000, description: 'Accepted for compatibility; used only with smooth' })),
};

export const DragMouseSchema = Type.Object(
  {
    path: Type.Array(Type.Array(Type.Integer(), { minItems: 2, maxItems: 2 }), {
      minItems: 2,
      maxItems: 1000,
      description: '[x, y] points to move through while the button is held; at least 2',
    }),
    button: Type.Optional(Type.Enum(['left', 'middle', 'right'], { default: 'left' })),
    delay: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 60_000, default: 0, description: 'Milliseconds between button down and the first move' }),
    ),
    steps_per_segment: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 10, description: 'Relative moves per path segment' })),
    step_delay_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 60_000,
        default: 50,
        description: 'Milliseconds between relative moves; the whole drag must take at most 60 s',
      }),
    ),
    hold_keys: Type.Optional(HoldKeysSchema),
    ...SmoothFields,
  },
  strict,
);
export type DragMouseBody = Static<typeof DragMouseSchema>;

export const ScrollSchema = Type.Object(
  {
    x: Coordinate('Where to scroll'),
    y: Coordinate('Where to scroll'),
    delta_x: Type.Optional(
      Type.Integer({
        minimum: -1000,
        maximum: 1000,
        default: 0,
        description: 'Wheel notches; positive scrolls right, negative left (with delta_y 0 too, the pointer only moves there)',
      }),
    ),
    delta_y: Type.Optional(
      Type.Integer({ minimum: -1000, maximum: 1000, default: 0, description: 'Wheel notches; positive scrolls down, negative up' }),
    ),
    hold_keys: Type.Optional(HoldKeysSchema),
  },
  strict,
);
export type ScrollBody = Static<typeof ScrollSchema>;

export const ClickMouseSchema = Type.Object(
  {
    x: Coordinate('Where to click'),
    y: Coordinate('Where to click'),
    button: Type.Optional(Type.Enum(['left', 'right', 'middle', 'back', 'forward'], { default: 'left' })),
    click_type: Type.Optional(Type.Enum(['down', 'up', 'click'], { default: 'click' })),
    num_clicks: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, default: 1, description: 'Clicks in a row; 0 is the default of 1' })),
    hold_keys: Type.Optional(HoldKeysSchema),
  },
  strict,
);
export type ClickMouseBody = Static<typeof ClickMouseSchema>;

export const MoveMouseSchema = Type.Object(
  { x: Coordinate('Where to move'), y: Coordinate('Where to move'), hold_keys: Type.Optional(HoldKeysSchema), ...SmoothFields },
  strict,
);
export type MoveMouseBody = Static<typeof MoveMouseSchema>;

export const TypeTextSchema = Type.Object(
  {
    text: Type.String({ maxLength: 10_000, description: 'Text to type; non-ASCII text is inserted as text' }),
    delay: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 60_000,
        default: 12,
        description: 'Milliseconds between keystrokes; the whole text must type within 60 s',
      }),
    ),
  },
  strict,
);
export type TypeTextBody = Static<typeof TypeTextSchema>;

export const PressKeySchema = Type.Object(
  {
    keys: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      maxItems: 100,
      description: 'xdotool key names or combinations, pressed in order: Return, F5, ctrl+t, Ctrl+Shift+Tab',
    }),
    duration: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 60_000, default: 0, description: 'Milliseconds to hold each; 0 taps; all of them at most 60 s' }),
    ),
    hold_keys: Type.Optional(HoldKeysSchema),
  },
  strict,
);
export type PressKeyBody = Static<typeof PressKeySchema>;

export const ScreenshotSchema = Type.Object(
  {
    region: Type.Optional(
      Type.Object(
        {
          x: Type.Integer({ minimum: 0 }),
          y: Type.Integer({ minimum: 0 }),
          width: Type.Integer({ minimum: 0 }),
          height: Type.Integer({ minimum: 0 }),
        },
        { ...strict, description: 'A rectangle of the screen; 0x0 (an empty region) is the whole screen' },
      ),
    ),
  },
  strict,
);
export type ScreenshotBody = Static<typeof ScreenshotSchema>;

export const MousePositionSchema = Type.Object({ x: Type.Integer(), y: Type.Integer() });

export const ComputerActionSchema = Type.Object(
  {
    type: Type.Enum(['click_mouse', 'move_mouse', 'type_text', 'press_key', 'scroll', 'drag_mouse', 'set_cursor', 'sleep']),
    click_mouse: Type.Optional(ClickMouseSchema),
    move_mouse: Type.Optional(MoveMouseSchema),
    type_text: Type.Optional(TypeTextSchema),
    press_key: Type.Optional(PressKeySchema),
    scroll: Type.Optional(ScrollSchema),
    drag_mouse: Type.Optional(DragMouseSchema),
    set_cursor: Type.Optional(Type.Object({ hidden: Type.Boolean() }, strict)),
    sleep: Type.Optional(Type.Object({ duration_ms: Type.Integer({ minimum: 0, maximum: 60_000 }) }, strict)),
  },
  { ...strict, description: 'One action: `type` names it and the field of that name carries its parameters' },
);
export type ComputerAction = Static<typeof ComputerActionSchema>;

export const BatchSchema = Type.Object(
  {
    actions: Type.Array(ComputerActionSchema, {
      maxItems: 1000,
      description: 'Run in order; the first error stops the batch. Its sleeps and typing may take 300 s in all',
    }),
  },
  strict,
);
export type BatchBody = Static<typeof BatchSchema>;

/** The text field of POST /browsers/{id}/fs/upload_zip (the zip itself is the `zip_file` part). */
export const UploadZipFormSchema = Type.Object(
  { dest_path: Type.String({ minLength: 1, maxLength: 4096, description: 'Absolute directory to extract into (created if missing)' }) },
  { additionalProperties: false },
);
export type UploadZipForm = Static<typeof UploadZipFormSchema>;

/** POST /browsers/{id}/fs/watch. */
export const FsWatchStartSchema = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 4096, description: 'Absolute path of a directory or file to watch' }),
    recursive: Type.Optional(Type.Boolean({ description: 'Watch subdirectories too, those created later included' })),
  },
  { additionalProperties: false },
);
export const FsWatchParamsSchema = Type.Object({ ...IdParamsSchema.properties, watch_id: Type.String({ maxLength: 64 }) });

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
