import { Type, type Static } from 'typebox';
import { NoContent, type RouteDef } from './route-def.js';
import { IdParamsSchema, PaginationQuery } from './schemas.js';

// Deployments and apps (kernel-wire "Invocations, apps, deployments"), in the SDK's shapes.

/** The one region Kernel's SDK knows; rbrowse runs everything locally and only echoes it. */
export const REGION = 'aws.us-east-1a';
const RegionSchema = Type.Literal(REGION);

const DeploymentStatusSchema = Type.Union([
  Type.Literal('queued'),
  Type.Literal('in_progress'),
  Type.Literal('running'),
  Type.Literal('failed'),
  Type.Literal('stopped'),
]);
export type DeploymentStatus = Static<typeof DeploymentStatusSchema>;

const EnvVarsSchema = Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.String({ maxLength: 65536 }), {
  maxProperties: 200,
  additionalProperties: false,
});

/** A relative path inside the app or the repository: no `..`, no leading `/` or `-`. */
const RelativePathSchema = Type.String({ minLength: 1, maxLength: 1024, pattern: '^(?![/-])(?!.*(^|/)\\.\\.(/|$))[^\\u0000-\\u001f\\\\]+$' });

/**
 * Kernel's `source`: the app's code fetched from a git repository instead of uploaded. Kernel
 * downloads it from GitHub; here git fetches it, in the build's box, from wherever the machine
 * reaches (GitHub, a company's git server, a mirror on the LAN).
 */
export const GitSourceSchema = Type.Object(
  {
    type: Type.Literal('github'),
    url: Type.String({ pattern: '^https?://[^\\s]+$', maxLength: 2048, description: 'The repository (https; without blob/tree suffixes)' }),
    ref: Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^(?!-)[A-Za-z0-9._/+@-]+$',
      description: 'A branch, tag or commit SHA',
    }),
    entrypoint: RelativePathSchema,
    path: Type.Optional(RelativePathSchema),
    auth: Type.Optional(
      Type.Object(
        { method: Type.Literal('github_token'), token: Type.String({ minLength: 1, maxLength: 4096 }) },
        { additionalProperties: false, description: 'A token for a private repository: sent to it, never stored' },
      ),
    ),
  },
  { additionalProperties: false },
);
export type GitSource = Static<typeof GitSourceSchema>;

/**
 * The text fields of POST /deployments (multipart, beside the zip in `file`), as the SDKs send
 * them: `env_vars[KEY]` (Node) or `env_vars.KEY` (Go) are gathered into env_vars first; `source`
 * is JSON, instead of `file`.
 */
export const DeployFormSchema = Type.Object(
  {
    entrypoint_rel_path: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'Path of the entrypoint inside the zip (relative, no ..); with a source, its entrypoint',
      }),
    ),
    source: Type.Optional(GitSourceSchema),
    version: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[^\\u0000-\\u001f]+$', description: 'Default latest' })),
    env_vars: Type.Optional(EnvVarsSchema),
    force: Type.Optional(Type.Boolean({ description: 'Accepted; a deploy of the same app and version always replaces the old one' })),
    region: Type.Optional(RegionSchema),
  },
  { additionalProperties: false },
);
export type DeployForm = Static<typeof DeployFormSchema>;

export const DeploymentSchema = Type.Object(
  {
    id: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.Optional(Type.String({ format: 'date-time' })),
    region: RegionSchema,
    status: DeploymentStatusSchema,
    status_reason: Type.Optional(Type.String()),
    entrypoint_rel_path: Type.String(),
    env_vars: Type.Record(Type.String(), Type.String(), {
      description: "The deploy's variables; values are redacted (empty), as Kernel does for API-key callers",
    }),
    version: Type.String({ description: 'The version label the deploy was given (default latest)' }),
    app_names: Type.Array(Type.String(), { description: 'Apps the entrypoint registers; known once loaded' }),
    source_type: Type.Union([Type.Literal('file'), Type.Literal('github')]),
    source_checksum: Type.Optional(Type.String({ description: 'Hex sha256 of the uploaded zip, or of the fetched tree (as a tar) once fetched' })),
    source_url: Type.Optional(Type.String({ description: 'A fetched deployment: the repository' })),
    source_ref: Type.Optional(Type.String({ description: 'A fetched deployment: the ref asked for' })),
    source_path: Type.Optional(Type.String({ description: 'A fetched deployment: the directory of the repository deployed, if not its root' })),
  },
  { description: 'A deployment of app code' },
);
export type Deployment = Static<typeof DeploymentSchema>;

export const AppActionSchema = Type.Object({
  name: Type.String(),
  input_schema: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    description:
      "Kernel's JSON Schema of the action's input: null, as Kernel answers when it cannot generate one (rbrowse reads no types from an app)",
  }),
  output_schema: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    description: "Kernel's JSON Schema of the action's output: null, as for input_schema",
  }),
});

export const AppSchema = Type.Object(
  {
    id: Type.String({ description: 'The app version id' }),
    app_name: Type.String(),
    version: Type.String(),
    region: RegionSchema,
    actions: Type.Array(AppActionSchema),
    env_vars: Type.Record(Type.String(), Type.String(), { description: 'Keys only; values redacted' }),
    deployment: Type.String({ description: 'The id of the running deployment serving this app version' }),
  },
  { description: 'An app version of a running deployment' },
);
export type App = Static<typeof AppSchema>;

export const ListDeploymentsQuerySchema = Type.Object({
  ...PaginationQuery,
  app_name: Type.Optional(Type.String({ description: 'Deployments registering this app' })),
  app_version: Type.Optional(Type.String({ description: 'With app_name: of this version label' })),
  query: Type.Optional(Type.String({ description: 'Matches the deployment id exactly or an app name (substring)' })),
});
export type ListDeploymentsQuery = Static<typeof ListDeploymentsQuerySchema>;

export const ListAppsQuerySchema = Type.Object({
  ...PaginationQuery,
  app_name: Type.Optional(Type.String()),
  version: Type.Optional(Type.String()),
  query: Type.Optional(Type.String({ description: 'Matches the app version id exactly or the app name (substring)' })),
});
export type ListAppsQuery = Static<typeof ListAppsQuerySchema>;

export const FollowQuerySchema = Type.Object({
  since: Type.Optional(Type.String({ description: 'Only log lines since this RFC 3339 time or duration ago (30s, 5m, 1h)' })),
});

export const deploymentRoutes = {
  createDeployment: {
    method: 'POST',
    url: '/deployments',
    auth: 'key',
    summary:
      'Deploy app code: multipart zip in `file`, `entrypoint_rel_path`, `version` (default latest), env_vars[KEY]; answers queued, then builds in the background',
    tag: 'deployments',
    success: { status: 200, body: DeploymentSchema },
    consumes: 'multipart/form-data',
    form: { files: ['file'], fields: DeployFormSchema },
  },
  listDeployments: {
    method: 'GET',
    url: '/deployments',
    auth: 'key',
    summary: 'List deployments, newest first (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'deployments',
    querystring: ListDeploymentsQuerySchema,
    success: { status: 200, body: Type.Array(DeploymentSchema) },
  },
  getDeployment: {
    method: 'GET',
    url: '/deployments/:id',
    auth: 'key',
    summary: 'Get a deployment',
    tag: 'deployments',
    params: IdParamsSchema,
    success: { status: 200, body: DeploymentSchema },
  },
  deleteDeployment: {
    method: 'DELETE',
    url: '/deployments/:id',
    auth: 'key',
    summary: 'Stop a deployment (a build in progress is cancelled); its code is removed once no invocation runs it',
    tag: 'deployments',
    params: IdParamsSchema,
    success: NoContent,
  },
  followDeployment: {
    method: 'GET',
    url: '/deployments/:id/events',
    auth: 'key',
    summary: 'Server-sent events of a deployment (log, deployment_state, app_version_summary); ends at running, failed or stopped',
    tag: 'deployments',
    params: IdParamsSchema,
    querystring: FollowQuerySchema,
    success: { status: 200, body: null },
    produces: 'text/event-stream',
  },
  listApps: {
    method: 'GET',
    url: '/apps',
    auth: 'key',
    summary: 'List the app versions of running deployments (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'apps',
    querystring: ListAppsQuerySchema,
    success: { status: 200, body: Type.Array(AppSchema) },
  },
} as const satisfies Record<string, RouteDef>;
