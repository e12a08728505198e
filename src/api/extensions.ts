import { Type, type Static } from 'typebox';
import { NoContent, type RouteDef } from './route-def.js';
import { IdParamsSchema, PaginationQuery } from './schemas.js';

// Extensions: unpacked Chromium extensions uploaded as zips, loaded with --load-extension.

/**
 * Kernel's name rule, less what no download URL could reach: "." and ".." (clients resolve them
 * away) and from_chrome_store (a route of its own).
 */
export const EXTENSION_NAME_PATTERN = '^(?!(\\.{1,2}|from_chrome_store)$)[A-Za-z0-9._-]+$';
export const ExtensionNameSchema = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: EXTENSION_NAME_PATTERN,
  description: 'Unique within the organization: letters, digits, dots, underscores, hyphens',
});

/** The text fields of POST /extensions (multipart, beside the zip in `file`). */
export const ExtensionFormSchema = Type.Object({ name: Type.Optional(ExtensionNameSchema) }, { additionalProperties: false });
export type ExtensionForm = Static<typeof ExtensionFormSchema>;

export const ExtensionSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.Union([Type.String(), Type.Null()], {
      description: "The name given, else the manifest's name made valid (null when another extension has it)",
    }),
    created_at: Type.String({ format: 'date-time' }),
    size_bytes: Type.Integer({ description: 'Size of the uploaded zip' }),
    checksum: Type.String({ description: 'Hex sha256 of the uploaded zip' }),
    last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When a session last loaded it',
    }),
  },
  { description: 'An uploaded unpacked extension' },
);
export type Extension = Static<typeof ExtensionSchema>;

export const ListExtensionsQuerySchema = Type.Object({
  ...PaginationQuery,
  name: Type.Optional(Type.String({ description: 'Exact name' })),
  query: Type.Optional(Type.String({ description: 'Substring of the name (case-insensitive); an id matches exactly' })),
});
export type ListExtensionsQuery = Static<typeof ListExtensionsQuerySchema>;

export const ChromeStoreQuerySchema = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2048, description: "The extension's Chrome Web Store URL (or its 32-letter id)" }),
  os: Type.Optional(Type.Union([Type.Literal('win'), Type.Literal('mac'), Type.Literal('linux')], { default: 'linux' })),
});
export type ChromeStoreQuery = Static<typeof ChromeStoreQuerySchema>;

export const extensionRoutes = {
  uploadExtension: {
    method: 'POST',
    url: '/extensions',
    auth: 'key',
    summary: 'Upload an unpacked extension: multipart zip in `file` (manifest.json at its root or in its one top-level folder), optional `name`',
    tag: 'extensions',
    success: { status: 200, body: ExtensionSchema },
    consumes: 'multipart/form-data',
    form: { files: ['file'], fields: ExtensionFormSchema },
  },
  listExtensions: {
    method: 'GET',
    url: '/extensions',
    auth: 'key',
    summary: 'List extensions, newest first (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'extensions',
    querystring: ListExtensionsQuerySchema,
    success: { status: 200, body: Type.Array(ExtensionSchema) },
  },
  getExtension: {
    method: 'GET',
    url: '/extensions/:id/metadata',
    auth: 'key',
    summary: "An extension's metadata, by id or name",
    tag: 'extensions',
    params: IdParamsSchema,
    success: { status: 200, body: ExtensionSchema },
  },
  downloadExtension: {
    method: 'GET',
    url: '/extensions/:id',
    auth: 'key',
    summary: 'The uploaded zip of an extension, by id or name',
    tag: 'extensions',
    params: IdParamsSchema,
    success: { status: 200, body: null },
    produces: 'application/zip',
  },
  deleteExtension: {
    method: 'DELETE',
    url: '/extensions/:id',
    auth: 'key',
    summary: 'Delete an extension by id or name (running sessions keep their copies)',
    tag: 'extensions',
    params: IdParamsSchema,
    success: NoContent,
  },
  downloadExtensionFromChromeStore: {
    method: 'GET',
    url: '/extensions/from_chrome_store',
    auth: 'key',
    summary: "A zip of an extension fetched from the Chrome Web Store (the CRX's zip, as uploads take it)",
    tag: 'extensions',
    querystring: ChromeStoreQuerySchema,
    success: { status: 200, body: null },
    produces: 'application/zip',
  },
} as const satisfies Record<string, RouteDef>;
