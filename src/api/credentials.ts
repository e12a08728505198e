import { Type, type Static } from 'typebox';
import { IdParamsSchema, PaginationQuery } from './schemas.js';
import { NoContent, type RouteDef } from './route-def.js';

// Stored credentials (Kernel's /credentials): values and TOTP secrets go in and never come out;
// only their field names and a current TOTP code do.

const strict = { additionalProperties: false } as const;
const NameSchema = Type.String({ minLength: 1, maxLength: 255, description: 'Unique within the project' });
const DomainSchema = Type.String({ minLength: 1, maxLength: 2048, description: 'The site it logs into, e.g. github.com' });
const ValuesSchema = Type.Record(Type.String({ minLength: 1, maxLength: 255 }), Type.String({ maxLength: 65_536 }), { description: 'Field name to value (username, password, ...)' });
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
