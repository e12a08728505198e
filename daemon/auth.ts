import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { newId } from '../src/ids.js';
import type { HomePaths } from '../src/config.js';
import type { Store } from './store.js';

export const DEFAULT_ORG = 'default';

export interface OrgRecord {
  id: string;
  name: string;
  created_at: string;
}

export interface ApiKeyRecord {
  id: string;
  org_id: string;
  /** sha256 of the key; the key itself is shown once and never stored here. */
  sha256: string;
  created_at: string;
}

declare module './store.js' {
  interface State {
    orgs: OrgRecord[];
    api_keys: ApiKeyRecord[];
  }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
/** Keys are long random secrets, so a plain sha256 is a sound way to keep them (no password stretching needed). */
const newKey = () => `sk_${randomBytes(24).toString('base64url')}`;
const keyRecord = (orgId: string, key: string): ApiKeyRecord => ({
  id: newId(),
  org_id: orgId,
  sha256: sha256(key),
  created_at: new Date().toISOString(),
});

export async function readOrCreateSecret(file: string, make: () => string): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const value = make();
  // wx: if two processes race, one loses with EEXIST instead of both writing different secrets.
  await writeFile(file, `${value}\n`, { mode: 0o600, flag: 'wx' }).catch(async (err) => {
    if (err.code !== 'EEXIST') throw err;
  });
  await chmod(file, 0o600);
  return (await readFile(file, 'utf8')).trim();
}

/** Organizations, their API keys, and the local admin token the CLI uses for key management. */
export class Auth {
  private constructor(
    private readonly store: Store,
    private readonly adminToken: string,
  ) {}

  static async open(store: Store, paths: HomePaths): Promise<Auth> {
    const adminToken = await readOrCreateSecret(paths.adminTokenFile, () => randomBytes(32).toString('base64url'));
    store.collection('orgs');
    store.collection('api_keys');
    const auth = new Auth(store, adminToken);
    // First start: a default organization and a key for it, kept readable for `rbrowse auth token`.
    const existing = await readFile(paths.apiKeyFile, 'utf8').then((t) => t.trim(), () => '');
    if (!existing || !auth.orgForKey(existing)) {
      const { key } = await auth.createKey(DEFAULT_ORG);
      await mkdir(dirname(paths.apiKeyFile), { recursive: true, mode: 0o700 });
      await writeFile(paths.apiKeyFile, `${key}\n`, { mode: 0o600 });
    }
    return auth;
  }

  orgForKey(key: string): OrgRecord | undefined {
    const digest = sha256(key);
    const record = this.store.data.api_keys.find((k) => k.sha256 === digest);
    return record && this.store.data.orgs.find((o) => o.id === record.org_id);
  }

  isAdminToken(token: string): boolean {
    const a = Buffer.from(token);
    const b = Buffer.from(this.adminToken);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  async createKey(orgName: string): Promise<{ org: OrgRecord; key: string }> {
    const key = newKey();
    const org = await this.store.update((state) => {
      let org = state.orgs.find((o) => o.name === orgName);
      if (!org) {
        org = { id: newId(), name: orgName, created_at: new Date().toISOString() };
        state.orgs.push(org);
      }
      state.api_keys.push(keyRecord(org.id, key));
      return org;
    });
    return { org, key };
  }

  /** A further key of an existing org (an invocation's own, revoked with revokeKey when it ends). */
  async mintKey(org: OrgRecord): Promise<{ id: string; key: string }> {
    const key = newKey();
    const record = keyRecord(org.id, key);
    await this.store.update((state) => void state.api_keys.push(record));
    return { id: record.id, key };
  }

  async revokeKey(id: string): Promise<void> {
    await this.store.update((state) => {
      state.api_keys = state.api_keys.filter((k) => k.id !== id);
    });
  }
}
