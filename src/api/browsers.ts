import { Type, type Static } from 'typebox';
import { IdParamsSchema, JwtQuerySchema, PaginationQuery } from './schemas.js';
import { TelemetryConfigSchema, TelemetryRequestSchema } from './telemetry-config.js';
import { NoContent, type RouteDef } from './route-def.js';

// Browser sessions: create, list, get, update, delete, the live view and CDP (kernel-wire "Browsers").

/** Bodies refuse unknown fields: a typo such as `timout_seconds` must be a 400, not silently dropped. */
const strict = { additionalProperties: false } as const;

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

export const StartUrlSchema = Type.String({ format: 'uri', maxLength: 8192 });

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

export const GetBrowserQuerySchema = Type.Object({
  include_deleted: Type.Optional(Type.Boolean({ default: false })),
});

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

export const browserRoutes = {
  createBrowser: {
    method: 'POST',
    url: '/browsers',
    auth: 'key',
    summary: 'Create a browser session',
    tag: 'browsers',
    body: CreateBrowserSchema,
    success: { status: 200, body: BrowserSessionSchema },
  },
  listBrowsers: {
    method: 'GET',
    url: '/browsers',
    auth: 'key',
    summary: 'List browser sessions (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'browsers',
    querystring: ListBrowsersQuerySchema,
    success: { status: 200, body: Type.Array(BrowserSessionSchema) },
  },
  getBrowser: {
    method: 'GET',
    url: '/browsers/:id',
    auth: 'key',
    summary: 'Get a browser session by id or name',
    tag: 'browsers',
    params: IdParamsSchema,
    querystring: GetBrowserQuerySchema,
    success: { status: 200, body: BrowserSessionSchema },
  },
  updateBrowser: {
    method: 'PATCH',
    url: '/browsers/:id',
    auth: 'key',
    summary: 'Update a browser session (proxy_id: omitted unchanged, "" removes)',
    tag: 'browsers',
    params: IdParamsSchema,
    body: UpdateBrowserSchema,
    success: { status: 200, body: BrowserSessionSchema },
  },
  deleteBrowser: {
    method: 'DELETE',
    url: '/browsers/:id',
    auth: 'key',
    summary: 'Delete (soft-delete) a browser session by id or name',
    tag: 'browsers',
    params: IdParamsSchema,
    success: NoContent,
  },
  getLiveView: {
    method: 'GET',
    url: '/browsers/:id/live_view',
    auth: 'key',
    summary: "A running session's live view URLs, headless sessions included (their object carries no browser_live_view_url)",
    tag: 'browsers',
    params: IdParamsSchema,
    success: { status: 200, body: LiveViewSchema },
  },
  loadBrowserExtensions: {
    method: 'POST',
    url: '/browsers/:id/extensions',
    auth: 'key',
    summary:
      'Load unpacked extensions into a running session (multipart: extensions[i][name], extensions[i][zip_file]); its browser restarts in place, keeping the session, its jwts and profile (CDP clients reconnect)',
    tag: 'browsers',
    params: IdParamsSchema,
    success: NoContent,
    consumes: 'multipart/form-data',
  },
  cdpVersion: {
    method: 'GET',
    url: '/browser/cdp/json/version',
    auth: 'session-jwt',
    summary: "Chrome's /json/version for the session named by the jwt",
    tag: 'cdp',
    querystring: JwtQuerySchema,
    success: { status: 200, body: CdpVersionSchema },
    hidden: true,
  },
} as const satisfies Record<string, RouteDef>;
