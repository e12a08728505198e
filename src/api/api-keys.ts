import { Type, type Static } from 'typebox';
import { IdParamsSchema, PaginationQuery } from './schemas.js';
import { NoContent, type RouteDef } from './route-def.js';

// API keys of an organization (Kernel's /org/api_keys): shown once at creation and rotation,
// kept as a digest, masked everywhere else.

const strict = { additionalProperties: false } as const;

const KeyNameSchema = Type.String({ minLength: 1, maxLength: 255, description: 'A label; names are not unique and do not address keys' });
const LifetimeDays = Type.Integer({ minimum: 1, maximum: 3650 });

export const ApiKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  masked_key: Type.String({ description: 'The key with all but its prefix and last four characters hidden' }),
  created_at: Type.String({ format: 'date-time' }),
  created_by: Type.Object({
    id: Type.String({ description: "The creating key's id (admin: the local admin token; daemon: made at first start)" }),
    email: Type.String(),
    name: Type.Union([Type.String(), Type.Null()]),
  }),
  expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  deleted_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  project_id: Type.Union([Type.String({ description: 'The project a project-scoped key is bound to; null: organization-wide' }), Type.Null()]),
  project_name: Type.Union([Type.String(), Type.Null()]),
});
export type ApiKey = Static<typeof ApiKeySchema>;

export const CreatedApiKeySchema = Type.Object({
  ...ApiKeySchema.properties,
  key: Type.String({ description: 'The plaintext key: returned this once, never again' }),
});
export type CreatedApiKey = Static<typeof CreatedApiKeySchema>;

export const CreateApiKeySchema = Type.Object(
  {
    name: KeyNameSchema,
    days_to_expire: Type.Optional(Type.Union([LifetimeDays, Type.Null()])),
    project_id: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()])),
  },
  strict,
);
export type CreateApiKeyBody = Static<typeof CreateApiKeySchema>;

export const UpdateApiKeySchema = Type.Object({ name: KeyNameSchema }, strict);
export type UpdateApiKeyBody = Static<typeof UpdateApiKeySchema>;

export const RotateApiKeySchema = Type.Object(
  {
    days_to_expire: Type.Optional(Type.Union([LifetimeDays, Type.Null()])),
    expire_in_days: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 3650 }), Type.Null()])),
  },
  strict,
);
export type RotateApiKeyBody = Static<typeof RotateApiKeySchema>;

export const GetApiKeyQuerySchema = Type.Object({ include_deleted: Type.Optional(Type.Boolean({ default: false })) });
export type GetApiKeyQuery = Static<typeof GetApiKeyQuerySchema>;

export const ListApiKeysQuerySchema = Type.Object({
  ...PaginationQuery,
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('deleted'), Type.Literal('all')], { default: 'active' })),
  include_deleted: Type.Optional(Type.Boolean({ description: 'Deprecated: status=all' })),
  name: Type.Optional(Type.String({ description: 'Exact name, case-insensitive' })),
  query: Type.Optional(Type.String({ description: 'Case-insensitive substring of the name, creator or project; a prefix of the id or masked key' })),
  sort_by: Type.Optional(Type.Union([Type.Literal('created_at'), Type.Literal('name'), Type.Literal('expires_at')])),
  sort_direction: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
});
export type ListApiKeysQuery = Static<typeof ListApiKeysQuerySchema>;

export const apiKeyRoutes = {
  createApiKey: {
    method: 'POST',
    url: '/org/api_keys',
    auth: 'key',
    summary: "Create an API key in the caller's organization; the plaintext key is in this answer only",
    tag: 'api-keys',
    body: CreateApiKeySchema,
    success: { status: 200, body: CreatedApiKeySchema },
  },
  listApiKeys: {
    method: 'GET',
    url: '/org/api_keys',
    auth: 'key',
    summary: 'List API keys, masked (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'api-keys',
    querystring: ListApiKeysQuerySchema,
    success: { status: 200, body: Type.Array(ApiKeySchema) },
  },
  getApiKey: {
    method: 'GET',
    url: '/org/api_keys/:id',
    auth: 'key',
    summary: 'Get an API key by id, masked; a deleted one only with include_deleted',
    tag: 'api-keys',
    params: IdParamsSchema,
    querystring: GetApiKeyQuerySchema,
    success: { status: 200, body: ApiKeySchema },
  },
  updateApiKey: {
    method: 'PATCH',
    url: '/org/api_keys/:id',
    auth: 'key',
    summary: 'Rename an API key',
    tag: 'api-keys',
    params: IdParamsSchema,
    body: UpdateApiKeySchema,
    success: { status: 200, body: ApiKeySchema },
  },
  deleteApiKey: {
    method: 'DELETE',
    url: '/org/api_keys/:id',
    auth: 'key',
    summary: 'Delete an API key (it stops working at once); a key cannot delete itself (400 cannot_delete_current_key)',
    tag: 'api-keys',
    params: IdParamsSchema,
    success: NoContent,
  },
  rotateApiKey: {
    method: 'POST',
    url: '/org/api_keys/:id/rotate',
    auth: 'key',
    summary:
      "A new key with the rotated one's name and project; the rotated key expires after expire_in_days (default 7, 0: at once), never later than it would have",
    tag: 'api-keys',
    params: IdParamsSchema,
    body: RotateApiKeySchema,
    success: { status: 200, body: CreatedApiKeySchema },
  },
} as const satisfies Record<string, RouteDef>;
