import { Type, type Static } from 'typebox';
import { IdParamsSchema, PaginationQuery } from './schemas.js';
import { NoContent, type RouteDef } from './route-def.js';

// Stored credentials (Kernel's /credentials): values and TOTP secrets go in and never come out;
// only their field names and a current TOTP code do.

const strict = { additionalProperties: false } as const;
const NameSchema = Type.String({ minLength: 1, maxLength: 255, description: 'Unique within the project' });
const DomainSchema = Type.String({ minLength: 1, maxLength: 2048, description: 'The site it logs into, e.g. github.com' });
const ValuesSchema = Type.Record(Type.String({ minLength: 1, maxLength: 255 }), Type.String({ maxLength: 65_536 }), {
  description: 'Field name to value (username, password, ...)',
});
const TotpSecretSchema = Type.String({ maxLength: 1024, description: 'Base32 TOTP secret; spaces and dashes are ignored' });

export const CredentialSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  domain: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  has_values: Type.Boolean(),
  has_totp_secret: Type.Boolean(),
  sso_provider: Type.Union([Type.String(), Type.Null()]),
  value_keys: Type.Optional(Type.Array(Type.String(), { description: 'The stored field names (not in lists)' })),
  totp_code: Type.Optional(Type.String({ description: 'The current code, when this call set the TOTP secret' })),
  totp_code_expires_at: Type.Optional(Type.String({ format: 'date-time' })),
});
export type Credential = Static<typeof CredentialSchema>;

export const CreateCredentialSchema = Type.Object(
  {
    name: NameSchema,
    domain: DomainSchema,
    values: ValuesSchema,
    sso_provider: Type.Optional(Type.String({ maxLength: 64 })),
    totp_secret: Type.Optional(TotpSecretSchema),
  },
  strict,
);
export type CreateCredentialBody = Static<typeof CreateCredentialSchema>;

export const UpdateCredentialSchema = Type.Object(
  {
    name: Type.Optional(NameSchema),
    values: Type.Optional(ValuesSchema),
    remove_value_keys: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: 'Removed before values are merged' })),
    sso_provider: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()], { description: 'Empty or null removes it' })),
    totp_secret: Type.Optional(Type.String({ maxLength: 1024, description: 'Base32 TOTP secret; empty removes it' })),
  },
  strict,
);
export type UpdateCredentialBody = Static<typeof UpdateCredentialSchema>;

export const ListCredentialsQuerySchema = Type.Object({
  ...PaginationQuery,
  domain: Type.Optional(Type.String({ description: 'Exact domain' })),
  query: Type.Optional(Type.String({ description: 'Case-insensitive substring of the name or domain; an id matches exactly' })),
});
export type ListCredentialsQuery = Static<typeof ListCredentialsQuerySchema>;

export const TotpCodeSchema = Type.Object({
  code: Type.String({ description: 'The current 6-digit code' }),
  expires_at: Type.String({ format: 'date-time' }),
});
export type TotpCode = Static<typeof TotpCodeSchema>;

export const credentialRoutes = {
  createCredential: {
    method: 'POST',
    url: '/credentials',
    auth: 'key',
    summary: 'Store a credential; its values and TOTP secret are encrypted and never returned',
    tag: 'credentials',
    body: CreateCredentialSchema,
    success: { status: 200, body: CredentialSchema },
  },
  listCredentials: {
    method: 'GET',
    url: '/credentials',
    auth: 'key',
    summary: 'List credentials (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'credentials',
    querystring: ListCredentialsQuerySchema,
    success: { status: 200, body: Type.Array(CredentialSchema) },
  },
  getCredential: {
    method: 'GET',
    url: '/credentials/:id',
    auth: 'key',
    summary: 'Get a credential by id or name (field names, never values)',
    tag: 'credentials',
    params: IdParamsSchema,
    success: { status: 200, body: CredentialSchema },
  },
  updateCredential: {
    method: 'PATCH',
    url: '/credentials/:id',
    auth: 'key',
    summary: 'Rename a credential, merge or remove values, set or clear its TOTP secret and SSO provider',
    tag: 'credentials',
    params: IdParamsSchema,
    body: UpdateCredentialSchema,
    success: { status: 200, body: CredentialSchema },
  },
  deleteCredential: {
    method: 'DELETE',
    url: '/credentials/:id',
    auth: 'key',
    summary: 'Delete a credential and its values',
    tag: 'credentials',
    params: IdParamsSchema,
    success: NoContent,
  },
  credentialTotpCode: {
    method: 'GET',
    url: '/credentials/:id/totp-code',
    auth: 'key',
    summary: "The current TOTP code of a credential's secret",
    tag: 'credentials',
    params: IdParamsSchema,
    success: { status: 200, body: TotpCodeSchema },
  },
} as const satisfies Record<string, RouteDef>;

// External credential providers (Kernel's /org/credential_providers): a 1Password service
// account whose login items sessions may use. The token goes in and never comes out.

const ProviderNameSchema = Type.String({ minLength: 1, maxLength: 255, description: 'Unique in the organization' });

export const CredentialProviderSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  provider_type: Type.Literal('onepassword'),
  enabled: Type.Boolean(),
  priority: Type.Integer({ description: 'Lower is asked first' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
export type CredentialProvider = Static<typeof CredentialProviderSchema>;

export const CreateCredentialProviderSchema = Type.Object(
  {
    name: ProviderNameSchema,
    provider_type: Type.Literal('onepassword'),
    token: Type.String({ minLength: 1, maxLength: 16_384, description: 'The 1Password service account token (ops_...)' }),
    cache_ttl_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400, description: 'How long item lists are reused (default 300)' })),
  },
  strict,
);
export type CreateCredentialProviderBody = Static<typeof CreateCredentialProviderSchema>;

export const UpdateCredentialProviderSchema = Type.Object(
  {
    name: Type.Optional(ProviderNameSchema),
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 16_384 })),
    cache_ttl_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400 })),
    enabled: Type.Optional(Type.Boolean()),
    priority: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
  },
  strict,
);
export type UpdateCredentialProviderBody = Static<typeof UpdateCredentialProviderSchema>;

export const ListCredentialProvidersQuerySchema = Type.Object({
  ...PaginationQuery,
  query: Type.Optional(Type.String({ description: 'Case-insensitive substring of the name; an id matches exactly' })),
});
export type ListCredentialProvidersQuery = Static<typeof ListCredentialProvidersQuerySchema>;

export const CredentialProviderItemsSchema = Type.Object({
  items: Type.Array(
    Type.Object({
      id: Type.String(),
      title: Type.String(),
      path: Type.String({ description: 'VaultName/ItemTitle' }),
      vault_id: Type.String(),
      vault_name: Type.String(),
      urls: Type.Array(Type.String()),
    }),
  ),
});
export type CredentialProviderItems = Static<typeof CredentialProviderItemsSchema>;

export const CredentialProviderTestSchema = Type.Object({
  success: Type.Boolean(),
  vaults: Type.Array(Type.Object({ id: Type.String(), name: Type.String() })),
  error: Type.Optional(Type.String()),
});
export type CredentialProviderTest = Static<typeof CredentialProviderTestSchema>;

export const credentialProviderRoutes = {
  createCredentialProvider: {
    method: 'POST',
    url: '/org/credential_providers',
    auth: 'key',
    summary: 'Add a credential provider (a 1Password service account); its token is encrypted and never returned',
    tag: 'credential-providers',
    body: CreateCredentialProviderSchema,
    success: { status: 200, body: CredentialProviderSchema },
  },
  listCredentialProviders: {
    method: 'GET',
    url: '/org/credential_providers',
    auth: 'key',
    summary: 'List credential providers, in lookup order (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'credential-providers',
    querystring: ListCredentialProvidersQuerySchema,
    success: { status: 200, body: Type.Array(CredentialProviderSchema) },
  },
  getCredentialProvider: {
    method: 'GET',
    url: '/org/credential_providers/:id',
    auth: 'key',
    summary: 'Get a credential provider by id or name',
    tag: 'credential-providers',
    params: IdParamsSchema,
    success: { status: 200, body: CredentialProviderSchema },
  },
  updateCredentialProvider: {
    method: 'PATCH',
    url: '/org/credential_providers/:id',
    auth: 'key',
    summary: 'Rename, re-prioritize, enable or disable a provider, or give it a new token',
    tag: 'credential-providers',
    params: IdParamsSchema,
    body: UpdateCredentialProviderSchema,
    success: { status: 200, body: CredentialProviderSchema },
  },
  deleteCredentialProvider: {
    method: 'DELETE',
    url: '/org/credential_providers/:id',
    auth: 'key',
    summary: 'Remove a credential provider and its token',
    tag: 'credential-providers',
    params: IdParamsSchema,
    success: NoContent,
  },
  credentialProviderItems: {
    method: 'GET',
    url: '/org/credential_providers/:id/items',
    auth: 'key',
    summary: "The provider's login items (cached for its cache_ttl_seconds); 422 when it refuses the token, 503 when it cannot be reached",
    tag: 'credential-providers',
    params: IdParamsSchema,
    success: { status: 200, body: CredentialProviderItemsSchema },
  },
  testCredentialProvider: {
    method: 'POST',
    url: '/org/credential_providers/:id/test',
    auth: 'key',
    summary: 'Connect to the provider with its token: success and the vaults it can read, or the error',
    tag: 'credential-providers',
    params: IdParamsSchema,
    success: { status: 200, body: CredentialProviderTestSchema },
  },
} as const satisfies Record<string, RouteDef>;
