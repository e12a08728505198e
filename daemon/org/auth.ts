import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname } from 'node:path';
import { newId } from '../../src/ids.js';
import type { HomePaths } from '../../src/config.js';
import type { Store } from '../lib/state/store.js';
import type { Scope } from './projects.js';
import type { ApiKeyRecord } from './key-record.js';
import { replaceFile } from '../lib/state/replace-file.js';
import { readOrCreateSecret } from '../lib/secret-file.js';
import type { OrgRecord } from '../lib/owned-records.js';

export const DEFAULT_ORG = 'default';

/** Who made a key: the key (or admin token) that asked, in the local OS user's name. */
export type KeyCreator = ApiKeyRecord['created_by'];

const osUser = (() => {
  try {
    return userInfo().username;
  } catch {
    return 'local';
  }
})();
export const creatorOf = (id: string): KeyCreator => ({ id, email: `${osUser}@localhost`, name: osUser });

declare module '../lib/state/store.js' {
  interface State {
    orgs: OrgRecord[];
    api_keys: ApiKeyRecord[];
  }
}

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
/** Keys are long random secrets, so a plain sha256 is a sound way to keep them (no password stretching needed). */
const newKey = () => `sk_${randomBytes(24).toString('base64url')}`;
const mask = (key: string) => `${key.slice(0, 3)}${'*'.repeat(8)}${key.slice(-4)}`;
export const DAY_MS = 86_400_000;

/** A new key and its record; the plaintext leaves with the answer and is never stored. */
export function newKeyRecord(
  orgId: string,
  fields: { name: string; created_by: KeyCreator; lifetime_days?: number | null; project_id?: string | null; minted?: true },
): { key: string; record: ApiKeyRecord } {
  const key = newKey();
  const now = Date.now();
  const lifetime = fields.lifetime_days ?? null;
  const record: ApiKeyRecord = {
    id: newId(),
    org_id: orgId,
    sha256: sha256(key),
    created_at: new Date(now).toISOString(),
    name: fields.name,
    masked_key: mask(key),
    created_by: fields.created_by,
    expires_at: lifetime === null ? null : new Date(now + lifetime * DAY_MS).toISOString(),
    deleted_at: null,
    lifetime_days: lifetime,
    project_id: fields.project_id ?? null,
    ...(fields.minted ? { minted: true as const } : {}),
  };
  return { key, record };
}

/** Not deleted and not expired: the only keys that authenticate. */
export const usable = (k: ApiKeyRecord, now = Date.now()) => !k.deleted_at && (!k.expires_at || Date.parse(k.expires_at) > now);

/** Fields a record written before keys had names and lifetimes lacks. */
function upgrade(k: ApiKeyRecord, localKey: string): ApiKeyRecord {
  if (k.name !== undefined) return k;
  return {
    ...k,
    name: 'key',
    masked_key: localKey && sha256(localKey) === k.sha256 ? mask(localKey) : 'sk_********????',
    created_by: creatorOf('daemon'),
    expires_at: null,
    deleted_at: null,
    lifetime_days: null,
    project_id: null,
  };
}

/** Organizations, their API keys, and the local admin token the CLI uses for key management. */
export class Auth {
  private constructor(
    private readonly store: Store,
    private readonly adminToken: string,
    private readonly localKeyFile: string,
  ) {}

  static async open(store: Store, paths: HomePaths): Promise<Auth> {
    const adminToken = await readOrCreateSecret(paths.adminTokenFile, () => randomBytes(32).toString('base64url'));
    store.collection('orgs');
    store.collection('api_keys');
    const auth = new Auth(store, adminToken, paths.apiKeyFile);
    const existing = await readFile(paths.apiKeyFile, 'utf8').then(
      (t) => t.trim(),
      () => '',
    );
    if (store.data.api_keys.some((k) => k.name === undefined)) {
      await store.update((state) => void (state.api_keys = state.api_keys.map((k) => upgrade(k, existing))));
    }
    // First start (or the local key deleted or expired): a key of the default organization, kept
    // readable for `rbrowse auth token` and the CLI.
    if (!existing || !auth.keyFor(existing)) {
      const { key } = await auth.createKey(DEFAULT_ORG, 'local', creatorOf('daemon'));
      await auth.writeLocalKey(key);
    }
    return auth;
  }

  /** The usable key a bearer token is, with its organization. */
  keyFor(token: string): { org: OrgRecord; key: ApiKeyRecord } | undefined {
    const digest = sha256(token);
    const key = this.store.data.api_keys.find((k) => k.sha256 === digest);
    if (!key || !usable(key)) return undefined;
    const org = this.store.data.orgs.find((o) => o.id === key.org_id);
    return org && { org, key };
  }

  isAdminToken(token: string): boolean {
    const a = Buffer.from(token);
    const b = Buffer.from(this.adminToken);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** A key of the named organization, which is made when missing (the admin's `rbrowse auth create-key`). */
  async createKey(orgName: string, name = orgName, createdBy: KeyCreator = creatorOf('admin')): Promise<{ org: OrgRecord; key: string }> {
    const org = await this.store.update((state) => {
      let org = state.orgs.find((o) => o.name === orgName);
      if (!org) {
        org = { id: newId(), name: orgName, created_at: new Date().toISOString() };
        state.orgs.push(org);
      }
      return org;
    });
    const { key, record } = newKeyRecord(org.id, { name, created_by: createdBy });
    await this.store.update((state) => void state.api_keys.push(record));
    return { org, key };
  }

  /** An invocation's own key, bound to its project, revoked with revokeKey when it ends. */
  async mintKey(scope: Scope): Promise<{ id: string; key: string }> {
    const { key, record } = newKeyRecord(scope.org_id, {
      name: 'invocation',
      created_by: creatorOf('daemon'),
      project_id: scope.project_id,
      minted: true,
    });
    await this.store.update((state) => void state.api_keys.push(record));
    return { id: record.id, key };
  }

  async revokeKey(id: string): Promise<void> {
    await this.store.update((state) => {
      state.api_keys = state.api_keys.filter((k) => k.id !== id);
    });
  }

  /** The CLI's key (credentials/api-key) is rotated with the key it was: the new plaintext replaces it. */
  async followRotation(rotated: ApiKeyRecord, newKey: string): Promise<void> {
    const current = await readFile(this.localKeyFile, 'utf8').then(
      (t) => t.trim(),
      () => '',
    );
    if (current && sha256(current) === rotated.sha256) await this.writeLocalKey(newKey);
  }

  private async writeLocalKey(key: string): Promise<void> {
    await mkdir(dirname(this.localKeyFile), { recursive: true, mode: 0o700 });
    await replaceFile(this.localKeyFile, `${key}\n`);
  }
}
