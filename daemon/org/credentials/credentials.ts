import type { CreateCredentialBody, Credential, ListCredentialsQuery, TotpCode, UpdateCredentialBody } from '../../../src/api/credentials.js';
import { BadRequestError } from '../../../src/errors.js';
import { newId } from '../../../src/ids.js';
import { KeyedSerialQueue } from '../../lib/serial-queue.js';
import type { OrgRecord } from '../../lib/owned-records.js';
import { assertNameFree, findByIdOrName } from '../../lib/owned-records.js';
import { paginate, type ListPage } from '../../lib/paging.js';
import type { Store } from '../../lib/state/store.js';
import type { Vault } from './vault.js';

export interface CredentialRecord {
  id: string;
  org_id: string;
  name: string;
  domain: string;
  sso_provider: string | null;
  created_at: string;
  updated_at: string;
  /** The field names of the sealed values: shown; the values never are. */
  value_keys: string[];
  has_totp_secret: boolean;
  /** { values, totp_secret } as a JWE (vault.ts): nothing of them is in the state file in clear. */
  sealed: string;
}

interface Secrets {
  values: Record<string, string>;
  totp_secret?: string;
}

declare module '../../lib/state/store.js' {
  interface State {
    credentials: CredentialRecord[];
  }
}

/** otpauth, loaded on the first TOTP secret: most daemons never see one. */
const otp = () => import('otpauth');

/** A Base32 secret as people paste it (spaces, dashes, lower case), checked and normalized. */
async function totpSecret(raw: string): Promise<string> {
  const secret = raw.replace(/[\s-]/g, '').toUpperCase().replace(/=+$/, '');
  const { Secret } = await otp();
  try {
    if (!secret || Secret.fromBase32(secret).bytes.length === 0) throw new Error('empty');
  } catch {
    throw BadRequestError.field('totp_secret', 'is not a Base32 secret');
  }
  return secret;
}

/** The current code of a secret (RFC 6238 defaults: SHA-1, 6 digits, 30 s), and when it stops being current. */
async function currentCode(secret: string): Promise<TotpCode> {
  const { Secret, TOTP } = await otp();
  const totp = new TOTP({ secret: Secret.fromBase32(secret) });
  return { code: totp.generate(), expires_at: new Date(Date.now() + totp.remaining()).toISOString() };
}

/**
 * Kernel's stored credentials: values and TOTP secrets are sealed by the vault before they reach
 * the state document, and no answer carries them, only the field names and the current TOTP code.
 */
export class Credentials {
  /** Updates of one credential run one after another: each opens, merges and seals the values. */
  private readonly updating = new KeyedSerialQueue();

  constructor(private readonly deps: { store: Store; vault: Vault }) {
    deps.store.collection('credentials');
  }

  async create(org: OrgRecord, body: CreateCredentialBody): Promise<Credential> {
    this.assertNameFree(org, body.name);
    const secrets: Secrets = { values: body.values, ...(body.totp_secret ? { totp_secret: await totpSecret(body.totp_secret) } : {}) };
    const now = new Date().toISOString();
    const record: CredentialRecord = {
      id: newId(),
      org_id: org.id,
      name: body.name,
      domain: body.domain,
      sso_provider: body.sso_provider || null,
      created_at: now,
      updated_at: now,
      value_keys: Object.keys(body.values).sort(),
      has_totp_secret: Boolean(secrets.totp_secret),
      sealed: await this.deps.vault.seal(secrets),
    };
    await this.deps.store.update((state) => {
      // Checked again where no other create can come between.
      this.assertNameFree(org, body.name);
      state.credentials.push(record);
    });
    return { ...this.view(record, true), ...(secrets.totp_secret ? await this.codeFields(secrets.totp_secret) : {}) };
  }

  list(org: OrgRecord, q: ListCredentialsQuery): ListPage<Credential> {
    const query = q.query?.toLowerCase();
    const mine = this.deps.store.data.credentials.filter(
      (c) =>
        c.org_id === org.id &&
        (q.domain === undefined || c.domain === q.domain) &&
        (query === undefined || c.id === q.query || c.name.toLowerCase().includes(query) || c.domain.toLowerCase().includes(query)),
    );
    return paginate(mine, q, (c) => this.view(c, false));
  }

  get(org: OrgRecord, idOrName: string): Credential {
    return this.view(this.find(org, idOrName), true);
  }

  async update(org: OrgRecord, idOrName: string, body: UpdateCredentialBody): Promise<Credential> {
    const { id } = this.find(org, idOrName);
    return this.updating.run(id, () => this.updateNow(org, id, body));
  }

  private async updateNow(org: OrgRecord, id: string, body: UpdateCredentialBody): Promise<Credential> {
    // Found again: an update before this one may have renamed it, or a delete removed it.
    const record = this.find(org, id);
    if (body.name !== undefined && body.name !== record.name) this.assertNameFree(org, body.name);
    const secrets = await this.deps.vault.open<Secrets>(record.sealed);
    for (const key of body.remove_value_keys ?? []) delete secrets.values[key];
    Object.assign(secrets.values, body.values ?? {});
    const newSecret = body.totp_secret ? await totpSecret(body.totp_secret) : undefined;
    if (body.totp_secret !== undefined) {
      if (newSecret) secrets.totp_secret = newSecret;
      else delete secrets.totp_secret;
    }
    const sealed = await this.deps.vault.seal(secrets);
    await this.deps.store.update(() => {
      if (body.name !== undefined) record.name = body.name;
      if (body.sso_provider !== undefined) record.sso_provider = body.sso_provider || null;
      record.value_keys = Object.keys(secrets.values).sort();
      record.has_totp_secret = Boolean(secrets.totp_secret);
      record.sealed = sealed;
      record.updated_at = new Date().toISOString();
    });
    return { ...this.view(record, true), ...(newSecret ? await this.codeFields(newSecret) : {}) };
  }

  async delete(org: OrgRecord, idOrName: string): Promise<void> {
    const record = this.find(org, idOrName);
    await this.deps.store.update((state) => void (state.credentials = state.credentials.filter((c) => c !== record)));
  }

  async totpCode(org: OrgRecord, idOrName: string): Promise<TotpCode> {
    const record = this.find(org, idOrName);
    const { totp_secret: secret } = await this.deps.vault.open<Secrets>(record.sealed);
    if (!secret) throw new BadRequestError(`credential ${JSON.stringify(idOrName)} has no TOTP secret`);
    return currentCode(secret);
  }

  /**
   * For a login the daemon runs (managed auth): the values of a credential and its current TOTP
   * code. They stay inside the daemon; no answer carries them.
   */
  async secretsFor(org: OrgRecord, idOrName: string): Promise<{ values: Record<string, string>; totpCode?: string }> {
    const secrets = await this.deps.vault.open<Secrets>(this.find(org, idOrName).sealed);
    return { values: secrets.values, ...(secrets.totp_secret ? { totpCode: (await currentCode(secrets.totp_secret)).code } : {}) };
  }

  /** Values a login submitted, merged into the credential of this name (made for the domain if there is none). */
  async saveValues(org: OrgRecord, name: string, domain: string, values: Record<string, string>): Promise<void> {
    const existing = this.deps.store.data.credentials.find((c) => c.org_id === org.id && c.name === name);
    if (existing) await this.update(org, existing.id, { values });
    else await this.create(org, { name, domain, values });
  }

  private async codeFields(secret: string): Promise<Pick<Credential, 'totp_code' | 'totp_code_expires_at'>> {
    const { code, expires_at } = await currentCode(secret);
    return { totp_code: code, totp_code_expires_at: expires_at };
  }

  private view(c: CredentialRecord, single: boolean): Credential {
    return {
      id: c.id,
      name: c.name,
      domain: c.domain,
      created_at: c.created_at,
      updated_at: c.updated_at,
      has_values: c.value_keys.length > 0,
      has_totp_secret: c.has_totp_secret,
      sso_provider: c.sso_provider,
      ...(single ? { value_keys: c.value_keys } : {}),
    };
  }

  private find(org: OrgRecord, idOrName: string): CredentialRecord {
    return findByIdOrName(this.deps.store.data.credentials, org, idOrName, 'credential');
  }

  private assertNameFree(org: OrgRecord, name: string): void {
    assertNameFree(this.deps.store.data.credentials, org, name, 'credential');
  }
}
