import type {
  CreateCredentialProviderBody,
  CredentialProvider,
  CredentialProviderItems,
  CredentialProviderTest,
  ListCredentialProvidersQuery,
  UpdateCredentialProviderBody,
} from '../../../src/api/credentials.js';
import { ApiError, ForbiddenError, ServiceUnavailableError } from '../../../src/errors.js';
import { newId } from '../../../src/ids.js';
import { VERSION } from '../../../src/version.js';
import { assertNameFree, findByIdOrName } from '../../lib/owned-records.js';
import { paginate, type ListPage } from '../../lib/paging.js';
import type { Scope } from '../projects.js';
import type { Store } from '../../lib/state/store.js';
import type { Vault } from './vault.js';

export interface CredentialProviderRecord {
  id: string;
  /** The organization's id: providers are the organization's, whatever project asks. */
  org_id: string;
  name: string;
  provider_type: 'onepassword';
  enabled: boolean;
  priority: number;
  cache_ttl_seconds: number;
  created_at: string;
  updated_at: string;
  /** The service account token as a JWE (vault.ts). */
  sealed_token: string;
}

declare module '../../lib/state/store.js' {
  interface State {
    credential_providers: CredentialProviderRecord[];
  }
}

const DEFAULT_TTL_S = 300;

/** The provider's answer to the token: 422 when it refuses it, 503 when it cannot be reached. */
function providerError(err: unknown): ApiError {
  const message = err instanceof Error ? err.message : String(err);
  return /token|invalid|unauthori[sz]ed|forbidden|auth/i.test(message)
    ? new ApiError(422, 'provider_error', `1Password refused the service account token: ${message}`)
    : new ServiceUnavailableError(`1Password could not be reached: ${message}`);
}

const view = (p: CredentialProviderRecord): CredentialProvider => ({
  id: p.id,
  name: p.name,
  provider_type: p.provider_type,
  enabled: p.enabled,
  priority: p.priority,
  created_at: p.created_at,
  updated_at: p.updated_at,
});

/**
 * Kernel's credential providers: an organization's 1Password service accounts, talked to through
 * 1Password's own SDK (@1password/sdk, loaded on first use: its core is 14 MB of WebAssembly).
 * The token is sealed by the vault; item lists are cached for the provider's cache_ttl_seconds.
 */
export class CredentialProviders {
  private readonly cache = new Map<string, { until: number; items: CredentialProviderItems }>();

  constructor(private readonly deps: { store: Store; vault: Vault }) {
    deps.store.collection('credential_providers');
  }

  async create(scope: Scope, body: CreateCredentialProviderBody): Promise<CredentialProvider> {
    const org = this.org(scope);
    assertNameFree(this.deps.store.data.credential_providers, org, body.name, 'credential provider');
    const now = new Date().toISOString();
    const record: CredentialProviderRecord = {
      id: newId(),
      org_id: org.id,
      name: body.name,
      provider_type: body.provider_type,
      enabled: true,
      priority: this.mine(org.id).length,
      cache_ttl_seconds: body.cache_ttl_seconds ?? DEFAULT_TTL_S,
      created_at: now,
      updated_at: now,
      sealed_token: await this.deps.vault.seal(body.token),
    };
    await this.deps.store.update((state) => {
      assertNameFree(state.credential_providers, org, body.name, 'credential provider');
      state.credential_providers.push(record);
    });
    return view(record);
  }

  list(scope: Scope, q: ListCredentialProvidersQuery): ListPage<CredentialProvider> {
    const query = q.query?.toLowerCase();
    const found = this.mine(this.org(scope).id)
      .filter((p) => query === undefined || p.id === q.query || p.name.toLowerCase().includes(query))
      .sort((a, b) => a.priority - b.priority || a.created_at.localeCompare(b.created_at));
    return paginate(found, q, view);
  }

  get(scope: Scope, idOrName: string): CredentialProvider {
    return view(this.find(scope, idOrName));
  }

  async update(scope: Scope, idOrName: string, body: UpdateCredentialProviderBody): Promise<CredentialProvider> {
    const p = this.find(scope, idOrName);
    if (body.name !== undefined && body.name !== p.name)
      assertNameFree(this.deps.store.data.credential_providers, this.org(scope), body.name, 'credential provider');
    const sealed = body.token === undefined ? undefined : await this.deps.vault.seal(body.token);
    await this.deps.store.update(() => {
      if (body.name !== undefined) p.name = body.name;
      if (body.enabled !== undefined) p.enabled = body.enabled;
      if (body.priority !== undefined) p.priority = body.priority;
      if (body.cache_ttl_seconds !== undefined) p.cache_ttl_seconds = body.cache_ttl_seconds;
      if (sealed) p.sealed_token = sealed;
      p.updated_at = new Date().toISOString();
    });
    if (sealed || body.cache_ttl_seconds !== undefined) this.cache.delete(p.id);
    return view(p);
  }

  async delete(scope: Scope, idOrName: string): Promise<void> {
    const p = this.find(scope, idOrName);
    await this.deps.store.update((state) => void (state.credential_providers = state.credential_providers.filter((x) => x !== p)));
    this.cache.delete(p.id);
  }

  async test(scope: Scope, idOrName: string): Promise<CredentialProviderTest> {
    const p = this.find(scope, idOrName);
    try {
      const client = await this.connect(p);
      const vaults = await client.vaults.list();
      return { success: true, vaults: vaults.map((v) => ({ id: v.id, name: v.title })) };
    } catch (err) {
      return { success: false, vaults: [], error: err instanceof Error ? err.message : String(err) };
    }
  }

  async items(scope: Scope, idOrName: string): Promise<CredentialProviderItems> {
    const p = this.find(scope, idOrName);
    const cached = this.cache.get(p.id);
    if (cached && cached.until > Date.now()) return cached.items;
    let items: CredentialProviderItems;
    try {
      const client = await this.connect(p);
      const vaults = await client.vaults.list();
      const lists = await Promise.all(vaults.map(async (v) => ({ vault: v, items: await client.items.list(v.id) })));
      items = {
        items: lists.flatMap(({ vault, items: found }) =>
          found
            .filter((i) => i.category === 'Login' || i.category === 'Password')
            .map((i) => ({
              id: i.id,
              title: i.title,
              path: `${vault.title}/${i.title}`,
              vault_id: vault.id,
              vault_name: vault.title,
              urls: i.websites.map((w) => w.url),
            })),
        ),
      };
    } catch (err) {
      throw providerError(err);
    }
    this.cache.set(p.id, { until: Date.now() + p.cache_ttl_seconds * 1000, items });
    return items;
  }

  private async connect(p: CredentialProviderRecord) {
    const token = await this.deps.vault.open<string>(p.sealed_token);
    const { createClient } = (await import('@1password/sdk')).default;
    return createClient({ auth: token, integrationName: 'rbrowse', integrationVersion: VERSION });
  }

  /** Providers are managed by organization-wide keys. */
  private org(scope: Scope): Scope {
    if (scope.key_project_id) throw new ForbiddenError('a project-scoped API key cannot manage credential providers');
    return { ...scope, id: scope.org_id };
  }

  private mine(orgId: string): CredentialProviderRecord[] {
    return this.deps.store.data.credential_providers.filter((p) => p.org_id === orgId);
  }

  private find(scope: Scope, idOrName: string): CredentialProviderRecord {
    return findByIdOrName(this.deps.store.data.credential_providers, this.org(scope), idOrName, 'credential provider');
  }
}
