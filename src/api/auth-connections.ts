import { Type, type Static } from 'typebox';
import { BrowserProxySelectionSchema } from './browsers.js';
import { IdParamsSchema, PaginationQuery } from './schemas.js';
import { TelemetryRequestSchema } from './telemetry-config.js';
import { ProfileNameSchema } from './profiles.js';
import { NoContent, type RouteDef } from './route-def.js';

// Managed auth (Kernel's /auth/connections): a profile kept logged into one domain. A login flow
// runs in a browser session of the organization: rbrowse finds the login form on the page, asks
// for what it lacks (or fills it from a stored credential), submits it, and saves the profile once
// the form is gone; health checks load the site with the profile and say whether it still is.

const strict = { additionalProperties: false } as const;
const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const FLOW_STATUSES = ['IN_PROGRESS', 'SUCCESS', 'FAILED', 'EXPIRED', 'CANCELED'] as const;
export const FLOW_STEPS = ['DISCOVERING', 'AWAITING_INPUT', 'AWAITING_EXTERNAL_ACTION', 'SUBMITTING', 'COMPLETED'] as const;
const lit = <const T extends readonly string[]>(values: T, options?: { description: string }) => Type.Enum(values, options);

const DomainSchema = Type.String({
  minLength: 1,
  maxLength: 253,
  description: 'The site to stay logged into, e.g. github.com (its subdomains count)',
});
const ConnectionProxySchema = Type.Object(
  { id: Type.Optional(Type.String({ minLength: 1 })), name: Type.Optional(Type.String({ minLength: 1 })) },
  {
    additionalProperties: false,
    minProperties: 1,
    description: 'A proxy of the organization, by id or by name (both: they must name the same proxy)',
  },
);
const CredentialRefSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'A stored credential (POST /credentials)' })),
    provider: Type.Optional(Type.String({ minLength: 1 })),
    path: Type.Optional(Type.String({ minLength: 1 })),
    auto: Type.Optional(Type.Boolean()),
  },
  { ...strict, description: 'The stored credential a login fills the form from: { name } (external providers are refused)' },
);
const BrowserConfigSchema = Type.Object(
  {
    stealth: Type.Optional(Type.Boolean()),
    proxy: Type.Optional(BrowserProxySelectionSchema),
    telemetry: Type.Optional(nullable(TelemetryRequestSchema)),
  },
  { ...strict, description: "The flow's browser: as on POST /browsers" },
);
const HealthIntervalSchema = Type.Integer({
  minimum: 1,
  maximum: 86_400,
  description: 'Seconds between health checks (default 3600); at least 300 unless RBROWSE_AUTH_MIN_HEALTH_CHECK_SECONDS says otherwise',
});

const DiscoveredFieldSchema = Type.Object({
  name: Type.String({ description: 'The key to submit its value under (fields)' }),
  label: Type.String(),
  selector: Type.String({ description: 'A CSS selector of the input on the page' }),
  type: lit(['text', 'email', 'password', 'tel', 'number', 'url', 'code', 'totp'] as const),
  placeholder: Type.Optional(Type.String()),
  required: Type.Optional(Type.Boolean()),
  hint: Type.Optional(Type.String()),
});
export type DiscoveredField = Static<typeof DiscoveredFieldSchema>;

const FieldSchema = Type.Object({
  id: Type.String({ description: 'The key to submit its value under (field_values)' }),
  ref: Type.String({ description: 'The stored credential value it is filled from and saved to' }),
  type: lit(['identifier', 'password', 'code', 'totp_code', 'totp_secret', 'text'] as const),
  reason: lit(['missing', 'rejected'] as const, {
    description: 'rejected: the site turned the submitted value down (the form came back); else missing',
  }),
  hint: Type.Optional(Type.String({ description: 'Text the site shows by the field (its description or help text)' })),
  label: Type.Optional(Type.String()),
  observed_selector: Type.Optional(nullable(Type.String())),
  required: Type.Optional(Type.Boolean()),
});
export type CanonicalField = Static<typeof FieldSchema>;

export const ManagedAuthSchema = Type.Object({
  id: Type.String(),
  domain: Type.String(),
  profile_name: Type.String(),
  record_session: Type.Boolean(),
  save_credentials: Type.Boolean(),
  status: lit(['AUTHENTICATED', 'NEEDS_AUTH'] as const),
  allowed_domains: Type.Array(Type.String()),
  auto_reauth: Type.Boolean(),
  health_checks: Type.Boolean(),
  health_check_interval: Type.Integer(),
  login_url: Type.Optional(Type.String()),
  credential: Type.Optional(CredentialRefSchema),
  proxy_id: Type.Optional(Type.String()),
  browser: Type.Optional(BrowserConfigSchema),
  browser_telemetry: Type.Optional(nullable(TelemetryRequestSchema)),
  can_reauth: Type.Boolean(),
  can_reauth_reason: Type.String(),
  last_auth_check_at: Type.Optional(Type.String({ format: 'date-time' })),
  last_auth_at: Type.Optional(Type.String({ format: 'date-time', description: 'Deprecated: last_auth_check_at' })),
  post_login_url: Type.Optional(Type.String()),
  flow_status: nullable(lit(FLOW_STATUSES)),
  flow_step: nullable(lit(FLOW_STEPS)),
  flow_type: nullable(lit(['LOGIN', 'REAUTH'] as const)),
  flow_expires_at: nullable(Type.String({ format: 'date-time' })),
  browser_session_id: nullable(Type.String()),
  hosted_url: nullable(Type.String()),
  live_view_url: nullable(Type.String()),
  discovered_fields: nullable(Type.Array(DiscoveredFieldSchema)),
  fields: nullable(Type.Array(FieldSchema)),
  mfa_options: nullable(Type.Array(Type.Object({ label: Type.String(), type: Type.String() }))),
  pending_sso_buttons: nullable(Type.Array(Type.Object({ label: Type.String(), provider: Type.String(), selector: Type.String() }))),
  sign_in_options: nullable(Type.Array(Type.Object({ id: Type.String(), label: Type.String() }))),
  choices: nullable(Type.Array(Type.Object({ id: Type.String(), label: Type.String(), type: Type.String() }))),
  external_action_message: nullable(Type.String()),
  sso_provider: nullable(Type.String()),
  website_error: nullable(Type.String()),
  error_code: nullable(Type.String()),
  error_message: nullable(Type.String()),
  interaction_id: nullable(
    Type.String({ description: 'Names the pause for input under way (new at each); a submit may name it, and is refused once it is past' }),
  ),
});
export type ManagedAuth = Static<typeof ManagedAuthSchema>;

const connectionSettings = {
  allowed_domains: Type.Optional(Type.Array(DomainSchema, { maxItems: 50, description: 'Other domains the login may pass through' })),
  auto_reauth: Type.Optional(Type.Boolean({ description: 'A failed health check logs in again with the stored credential (default true)' })),
  browser: Type.Optional(BrowserConfigSchema),
  browser_telemetry: Type.Optional(nullable(TelemetryRequestSchema)),
  credential: Type.Optional(CredentialRefSchema),
  health_check_interval: Type.Optional(HealthIntervalSchema),
  health_checks: Type.Optional(Type.Boolean({ description: 'Periodic health checks (default true)' })),
  login_url: Type.Optional(Type.String({ maxLength: 8192, description: 'The login page (default https://<domain>/); empty clears it on update' })),
  proxy: Type.Optional(ConnectionProxySchema),
  record_session: Type.Optional(Type.Boolean({ description: 'Record a replay of each login (default false)' })),
  save_credentials: Type.Optional(Type.Boolean({ description: 'Store what a successful login submitted, one-time codes aside (default true)' })),
};

export const CreateAuthConnectionSchema = Type.Object({ domain: DomainSchema, profile_name: ProfileNameSchema, ...connectionSettings }, strict);
export type CreateAuthConnectionBody = Static<typeof CreateAuthConnectionSchema>;

export const UpdateAuthConnectionSchema = Type.Object(connectionSettings, strict);
export type UpdateAuthConnectionBody = Static<typeof UpdateAuthConnectionSchema>;

export const ListAuthConnectionsQuerySchema = Type.Object({
  ...PaginationQuery,
  domain: Type.Optional(Type.String({ description: 'Exact domain' })),
  profile_name: Type.Optional(Type.String({ description: 'Exact profile name' })),
  query: Type.Optional(Type.String({ description: 'Case-insensitive substring of the domain or profile name; an id matches exactly' })),
});
export type ListAuthConnectionsQuery = Static<typeof ListAuthConnectionsQuerySchema>;

export const LoginAuthConnectionSchema = Type.Object(
  {
    browser: Type.Optional(BrowserConfigSchema),
    browser_telemetry: Type.Optional(nullable(TelemetryRequestSchema)),
    proxy: Type.Optional(ConnectionProxySchema),
    record_session: Type.Optional(Type.Boolean()),
  },
  strict,
);
export type LoginAuthConnectionBody = Static<typeof LoginAuthConnectionSchema>;

export const LoginResponseSchema = Type.Object({
  id: Type.String(),
  flow_type: lit(['LOGIN', 'REAUTH'] as const),
  flow_expires_at: Type.String({ format: 'date-time' }),
  hosted_url: Type.String({ description: "The live view of the login's browser, where a person completes it" }),
  live_view_url: Type.Optional(Type.String()),
  handoff_code: Type.Optional(
    Type.String({
      description: 'A one-time code: GET /auth/handoff/{code} redirects to hosted_url once, while the flow runs (a link to hand a person)',
    }),
  ),
});
export type LoginResponse = Static<typeof LoginResponseSchema>;

const ValueMapSchema = Type.Record(Type.String({ minLength: 1, maxLength: 255 }), Type.String({ maxLength: 4096 }));
export const SubmitAuthConnectionSchema = Type.Object(
  {
    fields: Type.Optional(ValueMapSchema),
    field_values: Type.Optional(ValueMapSchema),
    mfa_option_id: Type.Optional(Type.String()),
    selected_choice_id: Type.Optional(Type.String()),
    sign_in_option_id: Type.Optional(Type.String()),
    sso_button_selector: Type.Optional(Type.String()),
    sso_provider: Type.Optional(Type.String()),
    interaction_id: Type.Optional(
      Type.String({ description: "The connection's interaction_id the submit answers: refused (409) once the flow moved past it" }),
    ),
  },
  strict,
);
export type SubmitAuthConnectionBody = Static<typeof SubmitAuthConnectionSchema>;

export const TimelineEventSchema = Type.Object({
  id: Type.String(),
  type: lit(['login', 'reauth', 'health_check'] as const),
  status: lit([...FLOW_STATUSES, 'AUTHENTICATED', 'NEEDS_AUTH'] as const),
  timestamp: Type.String({ format: 'date-time' }),
  updated_at: Type.Optional(Type.String({ format: 'date-time' })),
  step: Type.Optional(Type.String()),
  browser_session_id: Type.Optional(Type.String()),
  previous_status: Type.Optional(lit(['AUTHENTICATED', 'NEEDS_AUTH'] as const)),
  error_code: Type.Optional(Type.String()),
  error_message: Type.Optional(Type.String()),
  website_error: Type.Optional(Type.String()),
  replay_id: Type.Optional(Type.String()),
  telemetry_captured: Type.Optional(Type.Boolean()),
});
export type TimelineEvent = Static<typeof TimelineEventSchema>;

export const TimelineQuerySchema = Type.Object({
  ...PaginationQuery,
  type: Type.Optional(lit(['login', 'reauth', 'health_check'] as const)),
});
export type TimelineQuery = Static<typeof TimelineQuerySchema>;

export const authConnectionRoutes = {
  createAuthConnection: {
    method: 'POST',
    url: '/auth/connections',
    auth: 'key',
    summary: 'Keep a profile logged into a domain (the profile is made if it does not exist); 409 if the pair has one',
    tag: 'managed auth',
    body: CreateAuthConnectionSchema,
    success: { status: 200, body: ManagedAuthSchema },
  },
  listAuthConnections: {
    method: 'GET',
    url: '/auth/connections',
    auth: 'key',
    summary: 'List auth connections (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'managed auth',
    querystring: ListAuthConnectionsQuerySchema,
    success: { status: 200, body: Type.Array(ManagedAuthSchema) },
  },
  getAuthConnection: {
    method: 'GET',
    url: '/auth/connections/:id',
    auth: 'key',
    summary: 'An auth connection, with the state of its login flow',
    tag: 'managed auth',
    params: IdParamsSchema,
    success: { status: 200, body: ManagedAuthSchema },
  },
  updateAuthConnection: {
    method: 'PATCH',
    url: '/auth/connections/:id',
    auth: 'key',
    summary: "Change an auth connection's settings (only the fields given)",
    tag: 'managed auth',
    params: IdParamsSchema,
    body: UpdateAuthConnectionSchema,
    success: { status: 200, body: ManagedAuthSchema },
  },
  deleteAuthConnection: {
    method: 'DELETE',
    url: '/auth/connections/:id',
    auth: 'key',
    summary: 'Delete an auth connection; a login in progress is canceled and its browser ended (the profile stays)',
    tag: 'managed auth',
    params: IdParamsSchema,
    success: NoContent,
  },
  authConnectionEvents: {
    method: 'GET',
    url: '/auth/connections/:id/events',
    auth: 'key',
    summary: 'Server-sent events: managed_auth_state on each change of the login flow, sse_heartbeat; ends at a terminal state',
    tag: 'managed auth',
    params: IdParamsSchema,
    success: { status: 200, body: null },
    produces: 'text/event-stream',
  },
  loginAuthConnection: {
    method: 'POST',
    url: '/auth/connections/:id/login',
    auth: 'key',
    summary: 'Start a login flow (a new one supersedes one in progress); with a stored credential it fills the form itself',
    tag: 'managed auth',
    params: IdParamsSchema,
    body: LoginAuthConnectionSchema,
    success: { status: 200, body: LoginResponseSchema },
  },
  submitAuthConnection: {
    method: 'POST',
    url: '/auth/connections/:id/submit',
    auth: 'key',
    summary: 'Fill the login form with values and submit it; poll the connection or follow its events for the outcome',
    tag: 'managed auth',
    params: IdParamsSchema,
    body: SubmitAuthConnectionSchema,
    success: { status: 200, body: Type.Object({ accepted: Type.Boolean() }) },
  },
  authConnectionTimeline: {
    method: 'GET',
    url: '/auth/connections/:id/timeline',
    auth: 'key',
    summary: 'Logins, re-auths and health checks, newest first (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'managed auth',
    params: IdParamsSchema,
    querystring: TimelineQuerySchema,
    success: { status: 200, body: Type.Array(TimelineEventSchema) },
  },
  redeemAuthHandoff: {
    method: 'GET',
    url: '/auth/handoff/:code',
    auth: 'none',
    summary: "A login's handoff_code: redirects (302) to its hosted_url, once; 404 once used, expired or unknown",
    tag: 'managed auth',
    params: Type.Object({ code: Type.String({ minLength: 1, maxLength: 100 }) }),
    success: { status: 302, body: null },
  },
} as const satisfies Record<string, RouteDef>;
