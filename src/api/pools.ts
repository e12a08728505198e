import { Type, type Static } from 'typebox';
import { BrowserSessionSchema, CreateBrowserSchema, NetworkSchema, ProfileSelectionSchema, RegionSchema, StartUrlSchema } from './browsers.js';
import { IdParamsSchema, PaginationQuery, PoolNameSchema } from './schemas.js';
import { TelemetryConfigSchema, TelemetryRequestSchema } from './telemetry-config.js';
import { NoContent, type RouteDef } from './route-def.js';

/** Bodies refuse unknown fields: a typo such as `timout_seconds` must be a 400, not silently dropped. */
const strict = { additionalProperties: false } as const;

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

export const poolRoutes = {
  createPool: {
    method: 'POST',
    url: '/browser_pools',
    auth: 'key',
    summary: 'Create a browser pool; it fills in the background at its fill rate',
    tag: 'browser_pools',
    body: CreatePoolSchema,
    success: { status: 200, body: BrowserPoolSchema },
  },
  listPools: {
    method: 'GET',
    url: '/browser_pools',
    auth: 'key',
    summary: 'List browser pools (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'browser_pools',
    querystring: ListPoolsQuerySchema,
    success: { status: 200, body: Type.Array(BrowserPoolSchema) },
  },
  getPool: {
    method: 'GET',
    url: '/browser_pools/:id',
    auth: 'key',
    summary: 'Get a browser pool by id or name',
    tag: 'browser_pools',
    params: IdParamsSchema,
    success: { status: 200, body: BrowserPoolSchema },
  },
  updatePool: {
    method: 'PATCH',
    url: '/browser_pools/:id',
    auth: 'key',
    summary: 'Update a pool; browsers created after use the new configuration (discard_all_idle: now)',
    tag: 'browser_pools',
    params: IdParamsSchema,
    body: UpdatePoolSchema,
    success: { status: 200, body: BrowserPoolSchema },
  },
  deletePool: {
    method: 'DELETE',
    url: '/browser_pools/:id',
    auth: 'key',
    summary: 'Delete a pool and its browsers; 409 while browsers are leased unless force',
    tag: 'browser_pools',
    params: IdParamsSchema,
    querystring: DeletePoolQuerySchema,
    body: DeletePoolSchema,
    success: NoContent,
  },
  flushPool: {
    method: 'POST',
    url: '/browser_pools/:id/flush',
    auth: 'key',
    summary: 'End the idle browsers of a pool; it refills',
    tag: 'browser_pools',
    params: IdParamsSchema,
    success: NoContent,
  },
  acquirePool: {
    method: 'POST',
    url: '/browser_pools/:id/acquire',
    auth: 'key',
    summary: 'Acquire a browser; waits up to acquire_timeout_seconds, then 204 No Content',
    tag: 'browser_pools',
    params: IdParamsSchema,
    body: AcquirePoolSchema,
    success: { status: 200, body: BrowserSessionSchema },
    noContentOnNull: true,
  },
  releasePool: {
    method: 'POST',
    url: '/browser_pools/:id/release',
    auth: 'key',
    summary: 'Release an acquired browser (reuse false: end it; the pool makes a new one)',
    tag: 'browser_pools',
    params: IdParamsSchema,
    body: ReleasePoolSchema,
    success: NoContent,
  },
} as const satisfies Record<string, RouteDef>;
