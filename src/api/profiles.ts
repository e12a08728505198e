import { Type, type Static } from 'typebox';
import { IdParamsSchema, PaginationQuery, PoolNameSchema } from './schemas.js';
import { ProfileMetadataSchema } from './browsers.js';
import { NoContent, type RouteDef } from './route-def.js';

// Profiles: saved user data a session loads and may write back (kernel-wire "Profiles").

const strict = { additionalProperties: false } as const;

/** Kernel documents no pattern; the one of pool and extension names keeps names safe in paths and shells. */
export const ProfileNameSchema = PoolNameSchema;

/** The same object a session's `profile` field carries. */
export const ProfileSchema = ProfileMetadataSchema;
export type Profile = Static<typeof ProfileSchema>;

export const CreateProfileSchema = Type.Object({ name: Type.Optional(ProfileNameSchema) }, strict);
export type CreateProfileBody = Static<typeof CreateProfileSchema>;

export const UpdateProfileSchema = Type.Object({ name: ProfileNameSchema }, strict);
export type UpdateProfileBody = Static<typeof UpdateProfileSchema>;

export const ListProfilesQuerySchema = Type.Object({
  ...PaginationQuery,
  name: Type.Optional(Type.String({ description: 'Exact profile name' })),
  query: Type.Optional(Type.String({ description: 'Case-insensitive substring of the name or id' })),
});
export type ListProfilesQuery = Static<typeof ListProfilesQuerySchema>;

export const DownloadProfileQuerySchema = Type.Object({
  format: Type.Optional(Type.Union([Type.Literal('tar'), Type.Literal('tar.zst')], { description: 'tar (default) or zstd-compressed tar' })),
});
export type DownloadProfileQuery = Static<typeof DownloadProfileQuerySchema>;

export const profileRoutes = {
  createProfile: {
    method: 'POST',
    url: '/profiles',
    auth: 'key',
    summary: 'Create a profile (no saved data until a session with save_changes ends)',
    tag: 'profiles',
    body: CreateProfileSchema,
    success: { status: 200, body: ProfileSchema },
  },
  listProfiles: {
    method: 'GET',
    url: '/profiles',
    auth: 'key',
    summary: 'List profiles (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'profiles',
    querystring: ListProfilesQuerySchema,
    success: { status: 200, body: Type.Array(ProfileSchema) },
  },
  getProfile: {
    method: 'GET',
    url: '/profiles/:id',
    auth: 'key',
    summary: 'Get a profile by id or name',
    tag: 'profiles',
    params: IdParamsSchema,
    success: { status: 200, body: ProfileSchema },
  },
  updateProfile: {
    method: 'PATCH',
    url: '/profiles/:id',
    auth: 'key',
    summary: 'Rename a profile',
    tag: 'profiles',
    params: IdParamsSchema,
    body: UpdateProfileSchema,
    success: { status: 200, body: ProfileSchema },
  },
  deleteProfile: {
    method: 'DELETE',
    url: '/profiles/:id',
    auth: 'key',
    summary: 'Delete a profile and its saved data by id or name; 409 while a live session uses it',
    tag: 'profiles',
    params: IdParamsSchema,
    success: NoContent,
  },
  downloadProfile: {
    method: 'GET',
    url: '/profiles/:id/download',
    auth: 'key',
    summary: "A tar archive of the profile's saved user data; 202 with no body while nothing is saved",
    tag: 'profiles',
    params: IdParamsSchema,
    querystring: DownloadProfileQuerySchema,
    success: { status: 200, body: null },
    alsoStatus: 202,
    produces: 'application/x-tar',
  },
} as const satisfies Record<string, RouteDef>;
