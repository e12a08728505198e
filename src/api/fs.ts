import { Type, type Static } from 'typebox';
import { IdParamsSchema } from './schemas.js';
import { NoContent, type RouteDef } from './route-def.js';

/** Bodies refuse unknown fields: a typo such as `timout_seconds` must be a 400, not silently dropped. */
const strict = { additionalProperties: false } as const;

// Filesystem inside a session (kernel-wire "Filesystem"). Absolute paths and `..` are checked by
// the daemon (daemon/in-session/fs/paths.ts), so the message can say why a path is refused.
const FsPath = Type.String({ minLength: 1, maxLength: 4096, description: 'Absolute path as the browser sees it' });
const OctalMode = Type.String({ pattern: '^[0-7]{3,4}$', description: 'Octal mode, e.g. 755' });

export const FsPathBodySchema = Type.Object({ path: FsPath }, strict);
export const FsPathQuerySchema = Type.Object({ path: FsPath });
export const CreateDirectoryBodySchema = Type.Object({ path: FsPath, mode: Type.Optional(OctalMode) }, strict);
export const SetFilePermissionsBodySchema = Type.Object(
  {
    path: FsPath,
    mode: OctalMode,
    owner: Type.Optional(Type.String({ minLength: 1, description: 'User name or numeric id (best effort)' })),
    group: Type.Optional(Type.String({ minLength: 1, description: 'Group name or numeric id (best effort)' })),
  },
  strict,
);
export const MoveBodySchema = Type.Object({ src_path: FsPath, dest_path: FsPath }, strict);
export const WriteFileQuerySchema = Type.Object({ path: FsPath, mode: Type.Optional(OctalMode) });
export const FileInfoSchema = Type.Object({
  name: Type.String(),
  path: Type.String(),
  size_bytes: Type.Integer(),
  is_dir: Type.Boolean(),
  mod_time: Type.String({ format: 'date-time' }),
  mode: Type.String(),
});

/** The text field of POST /browsers/{id}/fs/upload_zip (the zip itself is the `zip_file` part). */
export const UploadZipFormSchema = Type.Object(
  { dest_path: Type.String({ minLength: 1, maxLength: 4096, description: 'Absolute directory to extract into (created if missing)' }) },
  { additionalProperties: false },
);
export type UploadZipForm = Static<typeof UploadZipFormSchema>;

/** POST /browsers/{id}/fs/watch. */
export const FsWatchStartSchema = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 4096, description: 'Absolute path of a directory or file to watch' }),
    recursive: Type.Optional(Type.Boolean({ description: 'Watch subdirectories too, those created later included' })),
  },
  { additionalProperties: false },
);
export const FsWatchParamsSchema = Type.Object({ ...IdParamsSchema.properties, watch_id: Type.String({ maxLength: 64 }) });

export const fsRoutes = {
  // Filesystem inside a session: writes are PUTs, reads GETs, as Kernel serves them.
  fsCreateDirectory: {
    method: 'PUT',
    url: '/browsers/:id/fs/create_directory',
    auth: 'key',
    summary: 'Create a directory (recursive, idempotent; mode default 755)',
    tag: 'fs',
    params: IdParamsSchema,
    body: CreateDirectoryBodySchema,
    success: NoContent,
  },
  fsDeleteDirectory: {
    method: 'PUT',
    url: '/browsers/:id/fs/delete_directory',
    auth: 'key',
    summary: 'Delete a directory recursively (succeeds when missing; removes a plain file too)',
    tag: 'fs',
    params: IdParamsSchema,
    body: FsPathBodySchema,
    success: NoContent,
  },
  fsSetFilePermissions: {
    method: 'PUT',
    url: '/browsers/:id/fs/set_file_permissions',
    auth: 'key',
    summary: 'Set a file mode (owner and group best-effort)',
    tag: 'fs',
    params: IdParamsSchema,
    body: SetFilePermissionsBodySchema,
    success: NoContent,
  },
  fsDeleteFile: {
    method: 'PUT',
    url: '/browsers/:id/fs/delete_file',
    auth: 'key',
    summary: 'Delete a file',
    tag: 'fs',
    params: IdParamsSchema,
    body: FsPathBodySchema,
    success: NoContent,
  },
  fsMove: {
    method: 'PUT',
    url: '/browsers/:id/fs/move',
    auth: 'key',
    summary: 'Move or rename a file or directory',
    tag: 'fs',
    params: IdParamsSchema,
    body: MoveBodySchema,
    success: NoContent,
  },
  fsFileInfo: {
    method: 'GET',
    url: '/browsers/:id/fs/file_info',
    auth: 'key',
    summary: 'Information about a file or directory',
    tag: 'fs',
    params: IdParamsSchema,
    querystring: FsPathQuerySchema,
    success: { status: 200, body: FileInfoSchema },
  },
  fsListFiles: {
    method: 'GET',
    url: '/browsers/:id/fs/list_files',
    auth: 'key',
    summary: 'List a directory',
    tag: 'fs',
    params: IdParamsSchema,
    querystring: FsPathQuerySchema,
    success: { status: 200, body: Type.Array(FileInfoSchema) },
  },
  fsReadFile: {
    method: 'GET',
    url: '/browsers/:id/fs/read_file',
    auth: 'key',
    summary: "Read a file's bytes",
    tag: 'fs',
    params: IdParamsSchema,
    querystring: FsPathQuerySchema,
    success: { status: 200, body: null },
    produces: 'application/octet-stream',
  },
  fsWriteFile: {
    method: 'PUT',
    url: '/browsers/:id/fs/write_file',
    auth: 'key',
    summary: 'Write a file from the raw request body (created or replaced)',
    tag: 'fs',
    params: IdParamsSchema,
    querystring: WriteFileQuerySchema,
    success: NoContent,
    consumes: 'application/octet-stream',
  },
  fsUpload: {
    method: 'POST',
    url: '/browsers/:id/fs/upload',
    auth: 'key',
    summary: 'Upload files (multipart: files[i][file] and files[i][dest_path]); parents are created',
    tag: 'fs',
    params: IdParamsSchema,
    success: NoContent,
    consumes: 'multipart/form-data',
  },
  fsUploadZip: {
    method: 'POST',
    url: '/browsers/:id/fs/upload_zip',
    auth: 'key',
    summary:
      'Upload a zip and extract it into dest_path (multipart: zip_file, dest_path), created if missing: no entry may leave it (absolute or .. paths, links), nor be encrypted or a bomb',
    tag: 'fs',
    params: IdParamsSchema,
    success: NoContent,
    consumes: 'multipart/form-data',
    form: { files: ['zip_file'], fields: UploadZipFormSchema },
  },
  fsWatchStart: {
    method: 'POST',
    url: '/browsers/:id/fs/watch',
    auth: 'key',
    summary: "Start watching a path for changes (404 if it is missing); read them from the watch's events stream",
    tag: 'fs',
    params: IdParamsSchema,
    body: FsWatchStartSchema,
    success: { status: 201, body: Type.Object({ watch_id: Type.String() }) },
  },
  fsWatchEvents: {
    method: 'GET',
    url: '/browsers/:id/fs/watch/:watch_id/events',
    auth: 'key',
    summary:
      "A watch's changes (server-sent events): `fs_event` events {type: CREATE|WRITE|DELETE|RENAME, path, name, is_dir}, those since the last reader first; ends when the watch stops",
    tag: 'fs',
    params: FsWatchParamsSchema,
    success: { status: 200, body: null },
    produces: 'text/event-stream',
  },
  fsWatchStop: {
    method: 'DELETE',
    url: '/browsers/:id/fs/watch/:watch_id',
    auth: 'key',
    summary: 'Stop a watch (its event streams end)',
    tag: 'fs',
    params: FsWatchParamsSchema,
    success: NoContent,
  },
  fsDownloadDirZip: {
    method: 'GET',
    url: '/browsers/:id/fs/download_dir_zip',
    auth: 'key',
    summary: "A zip of a directory's contents",
    tag: 'fs',
    params: IdParamsSchema,
    querystring: FsPathQuerySchema,
    success: { status: 200, body: null },
    produces: 'application/zip',
  },
} as const satisfies Record<string, RouteDef>;
