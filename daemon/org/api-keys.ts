import type { ApiKey, CreateApiKeyBody, CreatedApiKey, ListApiKeysQuery, RotateApiKeyBody } from '../../src/api/api-keys.js';
import { ApiError, BadRequestError, ForbiddenError, NotFoundError } from '../../src/errors.js';
import { creatorOf, DAY_MS, newKeyRecord, type Auth } from './auth.js';
import type { ApiKeyRecord } from './key-record.js';
import type { Projects, Scope } from './projects.js';
import { paginate, type ListPage } from '../lib/paging.js';
import type { Store } from '../lib/state/store.js';

/** Kernel's grace period for a rotated key when the call names none. */
const DEFAULT_GRACE_DAYS = 7;

/** The API's view of a key: masked, never its digest. */
function view(k: ApiKeyRecord, projectName: string | null): ApiKey {
  return {
    id: k.id,
    name: k.name,
    masked_key: k.masked_key,
    created_at: k.created_at,
    created_by: k.created_by,
    expires_at: k.expires_at,
    deleted_at: k.deleted_at,
    project_id: k.project_id,
    project_name: projectName,
  };
}

const sortKey = {
  created_at: (k: ApiKeyRecord) => k.created_at,
  name: (k: ApiKeyRecord) => k.name.toLowerCase(),
  // Never-expiring keys sort after every dated one.
  expires_at: (k: ApiKeyRecord) => k.expires_at ?? '\uffff',
};

/**
 * An organization's API keys as Kernel's /org/api_keys serves them: the plaintext exists only in
 * the answer of a create or rotate; delete is soft (the record stays for the audit trail) and
 * takes effect on the next request; a key cannot delete itself. Keys belong to the organization,
 * whatever project a request is scoped to; a project-scoped key sees and makes only its project's.
 */
export class ApiKeys {
  constructor(private readonly deps: { store: Store; auth: Auth; projects: Projects }) {}

  async create(org: Scope, caller: ApiKeyRecord, body: CreateApiKeyBody): Promise<CreatedApiKey> {
    let project = body.project_id ?? null;
    if (org.key_project_id) {
      if (project !== null && project !== org.key_project_id) throw new ForbiddenError('a project-scoped key makes keys of its own project only');
      project = org.key_project_id;
    }
    if (project !== null) this.deps.projects.activeProject(org.org_id, project);
    const { key, record } = newKeyRecord(org.org_id, {
      name: body.name,
      created_by: creatorOf(caller.id),
      lifetime_days: body.days_to_expire ?? null,
      project_id: project,
    });
    await this.deps.store.update((state) => void state.api_keys.push(record));
    return { ...this.view(record), key };
  }

  list(org: Scope, q: ListApiKeysQuery): ListPage<ApiKey> {
    const status = q.include_deleted && (q.status ?? 'active') === 'active' ? 'all' : (q.status ?? 'active');
    const name = q.name?.toLowerCase();
    const query = q.query?.toLowerCase();
    const keys = this.mine(org).filter(
      (k) =>
        (status === 'all' || (status === 'deleted') === Boolean(k.deleted_at)) &&
        (name === undefined || k.name.toLowerCase() === name) &&
        (query === undefined ||
          [k.name, k.created_by.email, k.created_by.name ?? '', k.project_id ?? '', this.deps.projects.nameOf(k.project_id) ?? ''].some((f) =>
            f.toLowerCase().includes(query),
          ) ||
          k.id.startsWith(q.query!) ||
          k.masked_key.startsWith(q.query!)),
    );
    const by = sortKey[q.sort_by ?? 'created_at'];
    const direction = (q.sort_direction ?? 'desc') === 'asc' ? 1 : -1;
    keys.sort((a, b) => (by(a) < by(b) ? -direction : by(a) > by(b) ? direction : 0));
    return paginate(keys, q, (k) => this.view(k));
  }

  get(org: Scope, id: string, includeDeleted = false): ApiKey {
    return this.view(this.find(org, id, includeDeleted));
  }

  async rename(org: Scope, id: string, name: string): Promise<ApiKey> {
    const record = this.find(org, id);
    await this.deps.store.update(() => void (record.name = name));
    return this.view(record);
  }

  async delete(org: Scope, caller: ApiKeyRecord, id: string): Promise<void> {
    const record = this.find(org, id);
    if (record.id === caller.id) {
      throw new ApiError(400, 'cannot_delete_current_key', 'a key cannot delete itself: delete it with another key of the organization');
    }
    await this.deps.store.update(() => void (record.deleted_at = new Date().toISOString()));
  }

  /**
   * A new key with the old one's name, project and (unless named) lifetime; the old key expires
   * after the grace period, never later than it already would (rotation never extends a key's life).
   */
  async rotate(org: Scope, caller: ApiKeyRecord, id: string, body: RotateApiKeyBody): Promise<CreatedApiKey> {
    const old = this.find(org, id);
    const grace = body.expire_in_days ?? DEFAULT_GRACE_DAYS;
    const lifetime = body.days_to_expire ?? old.lifetime_days;
    // Checked only for a lifetime the call names: a short-lived key rotated as it is keeps its lifetime.
    if (body.days_to_expire != null && body.days_to_expire < grace) {
      throw BadRequestError.field('days_to_expire', `must be at least expire_in_days (${grace}): the new key would expire before the old one`);
    }
    const { key, record } = newKeyRecord(org.org_id, {
      name: old.name,
      created_by: creatorOf(caller.id),
      lifetime_days: lifetime,
      project_id: old.project_id,
    });
    const deadline = new Date(Date.now() + grace * DAY_MS).toISOString();
    await this.deps.store.update((state) => {
      state.api_keys.push(record);
      if (!old.expires_at || deadline < old.expires_at) old.expires_at = deadline;
    });
    await this.deps.auth.followRotation(old, key);
    return { ...this.view(record), key };
  }

  private view(k: ApiKeyRecord): ApiKey {
    return view(k, this.deps.projects.nameOf(k.project_id));
  }

  private mine(org: Scope): ApiKeyRecord[] {
    return this.deps.store.data.api_keys.filter(
      (k) => k.org_id === org.org_id && !k.minted && (!org.key_project_id || k.project_id === org.key_project_id),
    );
  }

  private find(org: Scope, id: string, includeDeleted = false): ApiKeyRecord {
    const record = this.mine(org).find((k) => k.id === id);
    if (!record || (record.deleted_at && !includeDeleted)) throw new NotFoundError(`API key ${JSON.stringify(id)} not found`);
    return record;
  }
}
