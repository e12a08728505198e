import type {
  ListProjectsQuery,
  OrgEntitlements,
  OrgLimits,
  Project,
  ProjectLimits,
  UpdateOrgLimitsBody,
  UpdateProjectBody,
  UpdateProjectLimitsBody,
} from '../../src/api/projects.js';
import { ApiError, BadRequestError, ConflictError, ForbiddenError, NotFoundError } from '../../src/errors.js';
import { newId } from '../../src/ids.js';
import type { ApiKeyRecord } from './key-record.js';
import type { OrgRecord } from '../lib/owned-records.js';
import { paginate, type ListPage } from '../lib/paging.js';
import type { Store } from '../lib/state/store.js';

/**
 * The owner of a request's resources: an organization's project. Every module keeps `org_id` on
 * its records and compares it with `id` here, so a project is its own tenant without any module
 * knowing projects: `id` is the organization's id for its default project (what every record
 * made before projects already holds) and the project's id for any other.
 */
export interface Scope extends OrgRecord {
  /** The organization itself. */
  org_id: string;
  project_id: string;
  /** The project the caller's key is bound to; null for an organization-wide key. */
  key_project_id: string | null;
}

export interface ProjectRecord {
  id: string;
  org_id: string;
  name: string;
  status: 'active' | 'archived';
  created_at: string;
  updated_at: string;
  /** The organization's default project: requests without a project act on it. */
  default?: true;
  limits: { max_concurrent_sessions: number | null; max_concurrent_invocations: number | null };
}

export interface OrgLimitsRecord {
  org_id: string;
  default_project_max_concurrent_sessions: number | null;
}

declare module '../lib/state/store.js' {
  interface State {
    projects: ProjectRecord[];
    org_limits: OrgLimitsRecord[];
  }
}

export class ProjectNotFoundError extends ApiError {
  constructor(message = 'project not found or inactive') {
    super(404, 'project_not_found', message);
  }
}

const DEFAULT_NAME = 'Default';

/** A new active project without caps of its own. */
function newProject(orgId: string, name: string, isDefault = false): ProjectRecord {
  const now = new Date().toISOString();
  return {
    id: newId(),
    org_id: orgId,
    name,
    status: 'active',
    created_at: now,
    updated_at: now,
    ...(isDefault ? { default: true as const } : {}),
    limits: { max_concurrent_sessions: null, max_concurrent_invocations: null },
  };
}

/** The project headers of a request: X-Kernel-Project-Id (an id) and X-Kernel-Project (a name or an id). */
export interface ProjectHeaders {
  id?: string;
  ref?: string;
}

const view = (p: ProjectRecord): Project => ({ id: p.id, name: p.name, status: p.status, created_at: p.created_at, updated_at: p.updated_at });

/**
 * Projects of an organization (Kernel's /org/projects) and the scope of each request: the
 * X-Kernel-Project-Id header (a project id), else the key's project, else the default project.
 * An organization always has its default project, made on first need; it can be renamed but not
 * archived or deleted. A project is deleted only when empty.
 */
export class Projects {
  constructor(
    private readonly deps: {
      store: Store;
      /** The organization's concurrency limit (the machine's, unless set): what a project default cannot exceed. */
      orgMaxSessions: number;
      /** Managed auth, as /org/limits and the entitlements report it: the organization's connections and the shortest health check interval. */
      managedAuth: { connectionsOf: (orgId: string) => number; minHealthCheckSeconds: number };
    },
  ) {
    deps.store.collection('projects');
    deps.store.collection('org_limits');
  }

  /**
   * The scope of a request by this key, with the headers' project if any: X-Kernel-Project-Id
   * names it by id, X-Kernel-Project (the SDKs' `project` option) by name or id; both must agree.
   */
  async scopeFor(org: OrgRecord, key: ApiKeyRecord, header: ProjectHeaders): Promise<Scope> {
    let project: ProjectRecord;
    if (header.id || header.ref) {
      const active = this.active(org.id);
      const byId = header.id ? active.find((p) => p.id === header.id) : undefined;
      const byRef = header.ref ? (active.find((p) => p.id === header.ref) ?? active.find((p) => p.name === header.ref)) : undefined;
      if ((header.id && !byId) || (header.ref && !byRef)) throw new ProjectNotFoundError();
      if (byId && byRef && byId !== byRef) throw new BadRequestError('X-Kernel-Project-Id and X-Kernel-Project name different projects');
      const named = (byId ?? byRef)!;
      if (key.project_id && key.project_id !== named.id) throw new ForbiddenError('this API key is bound to another project');
      project = named;
    } else if (key.project_id) {
      const bound = this.active(org.id).find((p) => p.id === key.project_id);
      if (!bound) throw new ProjectNotFoundError("the API key's project is archived or deleted");
      project = bound;
    } else project = await this.defaultOf(org.id);
    return { ...org, id: project.default ? org.id : project.id, org_id: org.id, project_id: project.id, key_project_id: key.project_id };
  }

  /**
   * The scope of a session's own jwt: the project that owns the session (`ownerId`, a record's
   * `org_id`), as a key bound to that project would have it. Undefined when the owner is gone.
   */
  async scopeOfOwner(ownerId: string): Promise<Scope | undefined> {
    const project = this.deps.store.data.projects.find((p) => p.id === ownerId && p.status === 'active');
    const org = this.deps.store.data.orgs.find((o) => o.id === (project ? project.org_id : ownerId));
    if (!org) return undefined;
    const owning = project ?? (await this.defaultOf(org.id));
    return { ...org, id: ownerId, org_id: org.id, project_id: owning.id, key_project_id: owning.id };
  }

  /** The id records of this project carry in `org_id` (see Scope). */
  ownerId(p: ProjectRecord): string {
    return p.default ? p.org_id : p.id;
  }

  async create(scope: Scope, name: string): Promise<Project> {
    this.orgWide(scope);
    const record = newProject(scope.org_id, name);
    await this.deps.store.update((state) => void state.projects.push(record));
    return view(record);
  }

  list(scope: Scope, q: ListProjectsQuery): ListPage<Project> {
    const name = q.name?.toLowerCase();
    const query = q.query?.toLowerCase();
    const mine = this.visible(scope).filter(
      (p) => (name === undefined || p.name.toLowerCase() === name) && (query === undefined || p.name.toLowerCase().includes(query)),
    );
    return paginate(mine, q, view);
  }

  get(scope: Scope, id: string): Project {
    return view(this.find(scope, id));
  }

  async update(scope: Scope, id: string, body: UpdateProjectBody): Promise<Project> {
    this.orgWide(scope);
    const p = this.find(scope, id);
    if (body.status === 'archived' && p.default) throw new ConflictError('the default project cannot be archived');
    await this.deps.store.update(() => {
      if (body.name !== undefined) p.name = body.name;
      if (body.status !== undefined) p.status = body.status;
      p.updated_at = new Date().toISOString();
    });
    return view(p);
  }

  /**
   * 409 project_not_empty while any record of another module is the project's and not over: a
   * record is over once deleted (deleted_at: its module moves it to history) or stopped or failed
   * (a deployment, kept listed as Kernel does). Those last are removed with the project, since no
   * module would ever move them.
   */
  async delete(scope: Scope, id: string): Promise<void> {
    this.orgWide(scope);
    const p = this.find(scope, id);
    if (p.default || this.active(scope.org_id).length <= 1) {
      throw new ApiError(
        409,
        'last_active_project',
        p.default ? 'the default project cannot be deleted' : 'organization must have at least one project',
      );
    }
    const owner = this.ownerId(p);
    type Owned = { org_id?: string; project_id?: string | null; deleted_at?: string | null; status?: string };
    const collections = () => Object.entries(this.deps.store.data).filter((e): e is [string, Owned[]] => Array.isArray(e[1]));
    const finished = (r: Owned) => r.status === 'stopped' || r.status === 'failed';
    const held = collections().flatMap(([collection, records]) =>
      records
        .filter((r) => !r.deleted_at && !finished(r) && (r.org_id === owner || (collection === 'api_keys' && r.project_id === p.id)))
        .map(() => collection),
    );
    if (held.length) {
      const kinds = [...new Set(held)].map((c) => `${held.filter((h) => h === c).length} ${c}`).join(', ');
      throw new ApiError(409, 'project_not_empty', `the project still has ${kinds}: delete them first`);
    }
    await this.deps.store.update((state) => {
      state.projects = state.projects.filter((x) => x !== p);
      const all = state as unknown as Record<string, Owned[]>;
      for (const [collection] of collections()) all[collection] = all[collection]!.filter((r) => !(r.org_id === owner && finished(r)));
    });
  }

  getLimits(scope: Scope, id: string): ProjectLimits {
    return this.limitsView(this.find(scope, id));
  }

  async updateLimits(scope: Scope, id: string, body: UpdateProjectLimitsBody): Promise<ProjectLimits> {
    this.orgWide(scope);
    const p = this.find(scope, id);
    if (body.max_pooled_sessions != null)
      throw BadRequestError.field('max_pooled_sessions', 'is deprecated: pooled browsers count toward max_concurrent_sessions');
    // 0 removes a cap; an absent field is left as it is.
    await this.deps.store.update(() => {
      if (body.max_concurrent_sessions !== undefined) p.limits.max_concurrent_sessions = body.max_concurrent_sessions || null;
      if (body.max_concurrent_invocations !== undefined) p.limits.max_concurrent_invocations = body.max_concurrent_invocations || null;
    });
    return this.limitsView(p);
  }

  orgLimits(scope: Scope): OrgLimits {
    return {
      max_concurrent_sessions: this.deps.orgMaxSessions,
      default_project_max_concurrent_sessions: this.orgDefault(scope.org_id),
      auth_connections_used: this.deps.managedAuth.connectionsOf(scope.org_id),
      // No plan here caps them: as many as the organization makes.
      max_auth_connections: null,
      min_health_check_interval_seconds: this.deps.managedAuth.minHealthCheckSeconds,
    };
  }

  /** Kernel's entitlements, answered for a local daemon: every feature it serves enabled, its limits the organization's. */
  entitlements(scope: Scope, opts: { replayRetentionDays: number }): OrgEntitlements {
    const limit = this.deps.orgMaxSessions;
    const off = { enabled: false };
    const on = { enabled: true };
    return {
      features: {
        browser_extensions: { enabled: true, max_stored_per_org: null },
        browser_pools: on,
        browser_replays: { enabled: true, retention_days: opts.replayRetentionDays },
        // Served (/org/credential_providers: 1Password service accounts), so reported on.
        credential_providers: on,
        credentials: on,
        custom_proxies: on,
        file_io: on,
        gpu: off,
        managed_auth: {
          enabled: true,
          health_check_interval_default_seconds: 3600,
          health_check_interval_max_seconds: 86_400,
          health_check_interval_min_seconds: this.orgLimits(scope).min_health_check_interval_seconds,
          max_connections: null,
        },
        managed_proxies: off,
        profiles: on,
        proxy_bypass_hosts: on,
      },
      // Invocations run in boxes as sessions do, under the same organization limit; no per-app cap of their own.
      limits: { default_max_concurrent_invocations_per_app: limit, max_concurrent_browsers: limit, max_concurrent_invocations: limit },
      plan: { id: 'ENTERPRISE', effective_id: 'ENTERPRISE', is_trialing: false, status: 'ACTIVE', trial_ends_at: null },
    };
  }

  async updateOrgLimits(scope: Scope, body: UpdateOrgLimitsBody): Promise<OrgLimits> {
    this.orgWide(scope);
    const value = body.default_project_max_concurrent_sessions;
    if (value !== undefined) {
      if (value !== null && value > this.deps.orgMaxSessions) {
        throw BadRequestError.field(
          'default_project_max_concurrent_sessions',
          `cannot exceed the organization's limit (${this.deps.orgMaxSessions})`,
        );
      }
      await this.deps.store.update((state) => {
        const row = state.org_limits.find((l) => l.org_id === scope.org_id);
        if (row) row.default_project_max_concurrent_sessions = value || null;
        else state.org_limits.push({ org_id: scope.org_id, default_project_max_concurrent_sessions: value || null });
      });
    }
    return this.orgLimits(scope);
  }

  /** The caps that apply to a scope: its project's own, else the organization's default for projects. */
  capsOf(scope: Scope): { sessions: number | null; invocations: number | null } {
    const p = this.deps.store.data.projects.find((x) => x.id === scope.project_id);
    return {
      sessions: p?.limits.max_concurrent_sessions ?? this.orgDefault(scope.org_id),
      invocations: p?.limits.max_concurrent_invocations ?? null,
    };
  }

  /** Every owner id of the organization's projects (see Scope), for what counts org-wide. */
  ownersOf(orgId: string): Set<string> {
    return ownersOfOrg(this.deps.store, orgId);
  }

  nameOf(id: string | null): string | null {
    return id === null ? null : (this.deps.store.data.projects.find((p) => p.id === id)?.name ?? null);
  }

  /** The organization's active project `id`, or 404 project_not_found. */
  activeProject(orgId: string, id: string): ProjectRecord {
    const p = this.active(orgId).find((x) => x.id === id);
    if (!p) throw new ProjectNotFoundError(`project ${JSON.stringify(id)} not found or inactive`);
    return p;
  }

  private orgDefault(orgId: string): number | null {
    return this.deps.store.data.org_limits.find((l) => l.org_id === orgId)?.default_project_max_concurrent_sessions ?? null;
  }

  private limitsView(p: ProjectRecord): ProjectLimits {
    return {
      max_concurrent_sessions: p.limits.max_concurrent_sessions,
      max_concurrent_invocations: p.limits.max_concurrent_invocations,
      max_pooled_sessions: null,
    };
  }

  /** Organization management is for organization-wide keys. */
  private orgWide(scope: Scope): void {
    if (scope.key_project_id) throw new ForbiddenError('a project-scoped API key cannot manage projects or organization limits');
  }

  /** What a key sees: all of the organization's projects, or only its own. */
  private visible(scope: Scope): ProjectRecord[] {
    return this.deps.store.data.projects.filter((p) => p.org_id === scope.org_id && (!scope.key_project_id || p.id === scope.key_project_id));
  }

  private find(scope: Scope, id: string): ProjectRecord {
    const p = this.visible(scope).find((x) => x.id === id) ?? this.visible(scope).find((x) => x.name === id);
    if (!p) throw new NotFoundError(`project ${JSON.stringify(id)} not found`);
    return p;
  }

  private active(orgId: string): ProjectRecord[] {
    return this.deps.store.data.projects.filter((p) => p.org_id === orgId && p.status === 'active');
  }

  private async defaultOf(orgId: string): Promise<ProjectRecord> {
    const existing = this.deps.store.data.projects.find((p) => p.org_id === orgId && p.default);
    if (existing) return existing;
    const record = newProject(orgId, DEFAULT_NAME, true);
    // Two first requests at once: the second finds the first's inside the update.
    return this.deps.store.update((state) => {
      const raced = state.projects.find((p) => p.org_id === orgId && p.default);
      if (raced) return raced;
      state.projects.push(record);
      return record;
    });
  }
}

/** Every owner id of an organization's projects (a project's records carry its owner id; the default project's is the organization's). */
export function ownersOfOrg(store: Store, orgId: string): Set<string> {
  return new Set(
    store.data.projects
      .filter((p) => p.org_id === orgId)
      .map((p) => (p.default ? p.org_id : p.id))
      .concat(orgId),
  );
}
