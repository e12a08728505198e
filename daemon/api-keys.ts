import type { ApiKey, CreateApiKeyBody, CreatedApiKey, ListApiKeysQuery, RotateApiKeyBody } from '../src/api/api-keys.js';
import { ApiError, BadRequestError, NotFoundError } from '../src/errors.js';
import { creatorOf, newKeyRecord, type ApiKeyRecord, type Auth, type OrgRecord } from './auth.js';
import { paginate, type ListPage } from './paging.js';
import type { Store } from './store.js';

const DAY_MS = 86_400_000;
/** Kernel's grace period for a rotated key when the call names none. */
const DEFAULT_GRACE_DAYS = 7;

export class ProjectNotFoundError extends ApiError {
  constructor(id: string) {
    super(404, 'project_not_found', `project ${JSON.stringify(id)} not found`);
  }
}

/** The API's view of a key: masked, never its digest. */
function view(k: ApiKeyRecord): ApiKey {
  return {
    id: k.id,
    name: k.name,
    masked_key: k.masked_key,
    created_at: k.created_at,
    created_by: k.created_by,
    expires_at: k.expires_at,
    deleted_at: k.deleted_at,
    project_id: k.project_id,
    project_name: null,
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
 * takes effect on the next request; a key cannot delete itself.
 */
export class ApiKeys {
  constructor(private readonly deps: { store: Store; auth: Auth }) {}

  async create(org: OrgRecord, caller: ApiKeyRecord, body: CreateApiKeyBody): Promise<CreatedApiKey> {
    if (body.project_id) throw new ProjectNotFoundError(body.project_id);
    const { key, record } = newKeyRecord(org.id, { name: body.name, created_by: creatorOf(caller.id), lifetime_days: body.days_to_expire ?? null });
    await this.deps.store.update((state) => void state.api_keys.push(record));
    return { ...view(record), key };
  }

  list(org: OrgRecord, q: ListApiKeysQuery): ListPage<ApiKey> {
    const status = q.include_deleted && (q.status ?? 'active') === 'active' ? 'all' : (q.status ?? 'active');
    const name = q.name?.toLowerCase();
    const query = q.query?.toLowerCase();
    const keys = this.mine(org).filter(
      (k) =>
        (status === 'all' || (status === 'deleted') === Boolean(k.deleted_at)) &&
        (name === undefined || k.name.toLowerCase() === name) &&
        (query === undefined ||
          [k.name, k.created_by.email, k.created_by.name ?? '', k.project_id ?? ''].some((f) => f.toLowerCase().includes(query)) ||
          k.id.startsWith(q.query!) ||
          k.masked_key.startsWith(q.query!)),
    );
    const by = sortKey[q.sort_by ?? 'created_at'];
    const direction = (q.sort_direction ?? 'desc') === 'asc' ? 1 : -1;
    keys.sort((a, b) => (by(a) < by(b) ? -direction : by(a) > by(b) ? direction : 0));
    return paginate(keys, q, view);
  }

  get(org: OrgRecord, id: string, includeDeleted = false): ApiKey {
    return view(this.find(org, id, includeDeleted));
  }

  async rename(org: OrgRecord, id: string, name: string): Promise<ApiKey> {
    const record = this.find(org, id);
    await this.deps.store.update(() => void (record.name = name));
    return view(record);
  }

  async delete(org: OrgRecord, caller: ApiKeyRecord, id: string): Promise<void> {
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
  async rotate(org: OrgRecord, caller: ApiKeyRecord, id: string, body: RotateApiKeyBody): Promise<CreatedApiKey> {
    const old = this.find(org, id);
    const grace = body.expire_in_days ?? DEFAULT_GRACE_DAYS;
    const lifetime = body.days_to_expire ?? old.lifetime_days;
    // Checked only for a lifetime the call names: a short-lived key rotated as it is keeps its lifetime.
    if (body.days_to_expire != null && body.days_to_expire < grace) {
      throw BadRequestError.field('days_to_expire', `must be at least expire_in_days (${grace}): the new key would expire before the old one`);
    }
    const { key, record } = newKeyRecord(org.id, {
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
    return { ...view(record), key };
  }

  private mine(org: OrgRecord): ApiKeyRecord[] {
    return this.deps.store.data.api_keys.filter((k) => k.org_id === org.id && !k.minted);
  }

  private find(org: OrgRecord, id: string, includeDeleted = false): ApiKeyRecord {
    const record = this.mine(org).find((k) => k.id === id);
    if (!record || (record.deleted_at && !includeDeleted)) throw new NotFoundError(`API key ${JSON.stringify(id)} not found`);
    return record;
  }
}
