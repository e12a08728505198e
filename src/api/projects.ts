import { Type, type Static } from 'typebox';
import { IdParamsSchema, PaginationQuery } from './schemas.js';
import { NoContent, type RouteDef } from './route-def.js';

// Projects of an organization and the concurrency limits of the organization and its projects
// (Kernel's /org/projects, /org/projects/{id}/limits and /org/limits).

const strict = { additionalProperties: false } as const;
const ProjectNameSchema = Type.String({ minLength: 1, maxLength: 255 });
const Cap = (description: string) => Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 100_000 }), Type.Null()], { description }));

export const ProjectSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('archived')]),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
export type Project = Static<typeof ProjectSchema>;

export const CreateProjectSchema = Type.Object({ name: ProjectNameSchema }, strict);
export type CreateProjectBody = Static<typeof CreateProjectSchema>;

export const UpdateProjectSchema = Type.Object(
  {
    name: Type.Optional(ProjectNameSchema),
    status: Type.Optional(
      Type.Union([Type.Literal('active'), Type.Literal('archived')], { description: 'An archived project refuses requests scoped to it' }),
    ),
  },
  strict,
);
export type UpdateProjectBody = Static<typeof UpdateProjectSchema>;

export const ListProjectsQuerySchema = Type.Object({
  ...PaginationQuery,
  name: Type.Optional(Type.String({ description: 'Exact name, case-insensitive' })),
  query: Type.Optional(Type.String({ description: 'Case-insensitive substring of the name' })),
});
export type ListProjectsQuery = Static<typeof ListProjectsQuerySchema>;

export const ProjectLimitsSchema = Type.Object({
  max_concurrent_sessions: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Browsers at once (sessions and pool reservations); null: the organization default applies',
  }),
  max_concurrent_invocations: Type.Union([Type.Integer(), Type.Null()], { description: 'Invocations queued or running at once; null: no cap' }),
  max_pooled_sessions: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Deprecated: always null (pooled browsers count toward max_concurrent_sessions)',
  }),
});
export type ProjectLimits = Static<typeof ProjectLimitsSchema>;

export const UpdateProjectLimitsSchema = Type.Object(
  {
    max_concurrent_sessions: Cap('0 removes the cap; absent leaves it'),
    max_concurrent_invocations: Cap('0 removes the cap; absent leaves it'),
    max_pooled_sessions: Cap('Deprecated: a value is refused with 400'),
  },
  strict,
);
export type UpdateProjectLimitsBody = Static<typeof UpdateProjectLimitsSchema>;

export const OrgLimitsSchema = Type.Object({
  max_concurrent_sessions: Type.Integer({
    description:
      "The organization's limit: browsers at once across its projects (RBROWSE_ORG_MAX_SESSIONS; by default what the machine's memory holds)",
  }),
  default_project_max_concurrent_sessions: Type.Union([Type.Integer(), Type.Null()], { description: 'The cap of every project without its own' }),
  auth_connections_used: Type.Integer({ description: "The organization's managed auth connections" }),
  max_auth_connections: Type.Union([Type.Integer(), Type.Null()], { description: 'The most managed auth connections it may have; null: no cap' }),
  min_health_check_interval_seconds: Type.Integer({
    description: 'The shortest managed-auth health check interval (RBROWSE_AUTH_MIN_HEALTH_CHECK_SECONDS, else 300)',
  }),
});
export type OrgLimits = Static<typeof OrgLimitsSchema>;

const Enabled = Type.Object({ enabled: Type.Boolean() });
const enabledWith = <P extends Record<string, import('typebox').TSchema>>(props: P) => Type.Object({ enabled: Type.Boolean(), ...props });

/** Kernel's plan and feature flags (GET /org/entitlements), with a local daemon's answer: everything it serves, no plan limits of a cloud account. */
export const OrgEntitlementsSchema = Type.Object({
  features: Type.Object({
    browser_extensions: enabledWith({ max_stored_per_org: Type.Union([Type.Integer(), Type.Null()]) }),
    browser_pools: Enabled,
    browser_replays: enabledWith({ retention_days: Type.Integer() }),
    credential_providers: Enabled,
    credentials: Enabled,
    custom_proxies: Enabled,
    file_io: Enabled,
    gpu: Enabled,
    managed_auth: enabledWith({
      health_check_interval_default_seconds: Type.Integer(),
      health_check_interval_max_seconds: Type.Integer(),
      health_check_interval_min_seconds: Type.Integer(),
      max_connections: Type.Union([Type.Integer(), Type.Null()]),
    }),
    managed_proxies: Enabled,
    profiles: Enabled,
    proxy_bypass_hosts: Enabled,
  }),
  limits: Type.Object({
    default_max_concurrent_invocations_per_app: Type.Integer(),
    max_concurrent_browsers: Type.Integer(),
    max_concurrent_invocations: Type.Integer(),
  }),
  plan: Type.Object({
    id: Type.String(),
    effective_id: Type.String(),
    is_trialing: Type.Boolean(),
    status: Type.String(),
    trial_ends_at: Type.Null(),
  }),
});
export type OrgEntitlements = Static<typeof OrgEntitlementsSchema>;

/** Who the caller is and what scope it acts in (GET /auth/context). */
export const AuthContextSchema = Type.Object({
  authentication: Type.Object({
    credential_id: Type.Union([Type.String(), Type.Null()]),
    method: Type.Literal('api_key'),
    source: Type.Literal('api_key'),
  }),
  authorization: Type.Object({
    credential_scope: Type.Object({ project_id: Type.Union([Type.String(), Type.Null()]) }),
    effective_scope: Type.Object({ project_id: Type.Union([Type.String(), Type.Null()]) }),
  }),
  organization: Type.Object({ id: Type.String() }),
  principal: Type.Object({ id: Type.String(), type: Type.Literal('api_key') }),
});
export type AuthContext = Static<typeof AuthContextSchema>;

export const UpdateOrgLimitsSchema = Type.Object(
  { default_project_max_concurrent_sessions: Cap("0 removes the default; it cannot exceed the organization's limit") },
  strict,
);
export type UpdateOrgLimitsBody = Static<typeof UpdateOrgLimitsSchema>;

export const projectRoutes = {
  createProject: {
    method: 'POST',
    url: '/org/projects',
    auth: 'key',
    summary: 'Create a project',
    tag: 'projects',
    body: CreateProjectSchema,
    success: { status: 200, body: ProjectSchema },
  },
  listProjects: {
    method: 'GET',
    url: '/org/projects',
    auth: 'key',
    summary: 'List projects (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'projects',
    querystring: ListProjectsQuerySchema,
    success: { status: 200, body: Type.Array(ProjectSchema) },
  },
  getProject: {
    method: 'GET',
    url: '/org/projects/:id',
    auth: 'key',
    summary: 'Get a project by id or name',
    tag: 'projects',
    params: IdParamsSchema,
    success: { status: 200, body: ProjectSchema },
  },
  updateProject: {
    method: 'PATCH',
    url: '/org/projects/:id',
    auth: 'key',
    summary: 'Rename, archive or reactivate a project (the default project is never archived)',
    tag: 'projects',
    params: IdParamsSchema,
    body: UpdateProjectSchema,
    success: { status: 200, body: ProjectSchema },
  },
  deleteProject: {
    method: 'DELETE',
    url: '/org/projects/:id',
    auth: 'key',
    summary: 'Delete an empty project (409 project_not_empty otherwise; 409 last_active_project for the default one)',
    tag: 'projects',
    params: IdParamsSchema,
    success: NoContent,
  },
  getProjectLimits: {
    method: 'GET',
    url: '/org/projects/:id/limits',
    auth: 'key',
    summary: "A project's own caps (null: none of its own)",
    tag: 'projects',
    params: IdParamsSchema,
    success: { status: 200, body: ProjectLimitsSchema },
  },
  updateProjectLimits: {
    method: 'PATCH',
    url: '/org/projects/:id/limits',
    auth: 'key',
    summary: "Set a project's caps: 0 removes one, an absent field is left",
    tag: 'projects',
    params: IdParamsSchema,
    body: UpdateProjectLimitsSchema,
    success: { status: 200, body: ProjectLimitsSchema },
  },
  getOrgLimits: {
    method: 'GET',
    url: '/org/limits',
    auth: 'key',
    summary: "The organization's concurrency limit and its default cap for projects",
    tag: 'projects',
    success: { status: 200, body: OrgLimitsSchema },
  },
  getOrgEntitlements: {
    method: 'GET',
    url: '/org/entitlements',
    auth: 'key',
    summary:
      'What this daemon offers, as Kernel names its plans and features: everything it serves is enabled; cloud-only features (GPU, managed auth and proxies) are not',
    tag: 'projects',
    success: { status: 200, body: OrgEntitlementsSchema },
  },
  getAuthContext: {
    method: 'GET',
    url: '/auth/context',
    auth: 'key',
    summary: "The caller's identity and scope: its API key, its organization, the key's project and the project this request acts in",
    tag: 'projects',
    success: { status: 200, body: AuthContextSchema },
  },
  updateOrgLimits: {
    method: 'PATCH',
    url: '/org/limits',
    auth: 'key',
    summary: 'Set the default cap of projects without their own (0 removes it)',
    tag: 'projects',
    body: UpdateOrgLimitsSchema,
    success: { status: 200, body: OrgLimitsSchema },
  },
} as const satisfies Record<string, RouteDef>;
