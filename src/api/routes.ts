import type { Readable } from 'node:stream';
import { Type, type Static, type TSchema } from 'typebox';
import * as S from './schemas.js';

/**
 * The one definition of every route: the daemon registers these (validation, handler types),
 * @fastify/swagger turns them into /openapi.json, and src/client.ts derives its calls from them.
 */
export interface RouteDef {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** Fastify path syntax (`:id`); the OpenAPI document shows `{id}`. */
  url: string;
  /** key: an org's API key; admin: the local admin token; session-jwt: a session's jwt query parameter. */
  auth: 'none' | 'key' | 'admin' | 'session-jwt';
  summary: string;
  tag: string;
  /** The success status and its body schema; null means no body (204). */
  success: { status: number; body: TSchema | null };
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  /** Kept out of /openapi.json: protocol plumbing rather than API. */
  hidden?: boolean;
  /** The handler may answer null, sent as 204 with no body (an acquire that timed out). */
  noContentOnNull?: true;
  /** A success body that is not JSON (a file, a PNG): its media type; the handler returns bytes or a stream. */
  produces?: string;
  /** A request body that is not JSON (a file's bytes): its media type; the handler gets the raw stream. */
  consumes?: string;
}

const NoContent = { status: 204, body: null } as const;

export const routes = {
  health: {
    method: 'GET',
    url: '/health',
    auth: 'none',
    summary: 'Liveness check; needs no credentials',
    tag: 'daemon',
    success: { status: 200, body: S.HealthSchema },
  },
  createBrowser: {
    method: 'POST',
    url: '/browsers',
    auth: 'key',
    summary: 'Create a browser session',
    tag: 'browsers',
    body: S.CreateBrowserSchema,
    success: { status: 200, body: S.BrowserSessionSchema },
  },
  listBrowsers: {
    method: 'GET',
    url: '/browsers',
    auth: 'key',
    summary: 'List browser sessions (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'browsers',
    querystring: S.ListBrowsersQuerySchema,
    success: { status: 200, body: Type.Array(S.BrowserSessionSchema) },
  },
  getBrowser: {
    method: 'GET',
    url: '/browsers/:id',
    auth: 'key',
    summary: 'Get a browser session by id or name',
    tag: 'browsers',
    params: S.IdParamsSchema,
    querystring: S.GetBrowserQuerySchema,
    success: { status: 200, body: S.BrowserSessionSchema },
  },
  updateBrowser: {
    method: 'PATCH',
    url: '/browsers/:id',
    auth: 'key',
    summary: 'Update a browser session (proxy_id: omitted unchanged, "" removes)',
    tag: 'browsers',
    params: S.IdParamsSchema,
    body: S.UpdateBrowserSchema,
    success: { status: 200, body: S.BrowserSessionSchema },
  },
  deleteBrowser: {
    method: 'DELETE',
    url: '/browsers/:id',
    auth: 'key',
    summary: 'Delete (soft-delete) a browser session by id or name',
    tag: 'browsers',
    params: S.IdParamsSchema,
    success: NoContent,
  },
  cdpVersion: {
    method: 'GET',
    url: '/browser/cdp/json/version',
    auth: 'session-jwt',
    summary: "Chrome's /json/version for the session named by the jwt",
    tag: 'cdp',
    querystring: S.JwtQuerySchema,
    success: { status: 200, body: S.CdpVersionSchema },
    hidden: true,
  },
  adminCreateKey: {
    method: 'POST',
    url: '/admin/keys',
    auth: 'admin',
    summary: 'Create an API key for an organization (created when missing); local admin token only',
    tag: 'admin',
    body: S.CreateKeySchema,
    success: { status: 200, body: S.CreatedKeySchema },
  },
  createPool: {
    method: 'POST',
    url: '/browser_pools',
    auth: 'key',
    summary: 'Create a browser pool; it fills in the background at its fill rate',
    tag: 'browser_pools',
    body: S.CreatePoolSchema,
    success: { status: 200, body: S.BrowserPoolSchema },
  },
  listPools: {
    method: 'GET',
    url: '/browser_pools',
    auth: 'key',
    summary: 'List browser pools (X-Has-More / X-Next-Offset headers paginate)',
    tag: 'browser_pools',
    querystring: S.ListPoolsQuerySchema,
    success: { status: 200, body: Type.Array(S.BrowserPoolSchema) },
  },
  getPool: {
    method: 'GET',
    url: '/browser_pools/:id',
    auth: 'key',
    summary: 'Get a browser pool by id or name',
    tag: 'browser_pools',
    params: S.IdParamsSchema,
    success: { status: 200, body: S.BrowserPoolSchema },
  },
  updatePool: {
    method: 'PATCH',
    url: '/browser_pools/:id',
    auth: 'key',
    summary: 'Update a pool; browsers created after use the new configuration (discard_all_idle: now)',
    tag: 'browser_pools',
    params: S.IdParamsSchema,
    body: S.UpdatePoolSchema,
    success: { status: 200, body: S.BrowserPoolSchema },
  },
  deletePool: {
    method: 'DELETE',
    url: '/browser_pools/:id',
    auth: 'key',
    summary: 'Delete a pool and its browsers; 409 while browsers are leased unless force',
    tag: 'browser_pools',
    params: S.IdParamsSchema,
    querystring: S.DeletePoolQuerySchema,
    body: S.DeletePoolSchema,
    success: NoContent,
  },
  flushPool: {
    method: 'POST',
    url: '/browser_pools/:id/flush',
    auth: 'key',
    summary: 'End the idle browsers of a pool; it refills',
    tag: 'browser_pools',
    params: S.IdParamsSchema,
    success: NoContent,
  },
  acquirePool: {
    method: 'POST',
    url: '/browser_pools/:id/acquire',
    auth: 'key',
    summary: 'Acquire a browser; waits up to acquire_timeout_seconds, then 204 No Content',
    tag: 'browser_pools',
    params: S.IdParamsSchema,
    body: S.AcquirePoolSchema,
    success: { status: 200, body: S.BrowserSessionSchema },
    noContentOnNull: true,
  },
  releasePool: {
    method: 'POST',
    url: '/browser_pools/:id/release',
    auth: 'key',
    summary: 'Release an acquired browser (reuse false: end it; the pool makes a new one)',
    tag: 'browser_pools',
    params: S.IdParamsSchema,
    body: S.ReleasePoolSchema,
    success: NoContent,
  },

  // Filesystem inside a session: writes are PUTs, reads GETs, as Kernel serves them.
  fsCreateDirectory: {
    method: 'PUT',
    url: '/browsers/:id/fs/create_directory',
    auth: 'key',
    summary: 'Create a directory (recursive, idempotent; mode default 755)',
    tag: 'fs',
    params: S.IdParamsSchema,
    body: S.CreateDirectoryBodySchema,
    success: NoContent,
  },
  fsDeleteDirectory: {
    method: 'PUT',
    url: '/browsers/:id/fs/delete_directory',
    auth: 'key',
    summary: 'Delete a directory recursively (succeeds when missing; removes a plain file too)',
    tag: 'fs',
    params: S.IdParamsSchema,
    body: S.FsPathBodySchema,
    success: NoContent,
  },
  fsSetFilePermissions: {
    method: 'PUT',
    url: '/browsers/:id/fs/set_file_permissions',
    auth: 'key',
    summary: 'Set a file mode (owner and group best-effort)',
    tag: 'fs',
    params: S.IdParamsSchema,
    body: S.SetFilePermissionsBodySchema,
    success: NoContent,
  },
  fsDeleteFile: {
    method: 'PUT',
    url: '/browsers/:id/fs/delete_file',
    auth: 'key',
    summary: 'Delete a file',
    tag: 'fs',
    params: S.IdParamsSchema,
    body: S.FsPathBodySchema,
    success: NoContent,
  },
  fsMove: {
    method: 'PUT',
    url: '/browsers/:id/fs/move',
    auth: 'key',
    summary: 'Move or rename a file or directory',
    tag: 'fs',
    params: S.IdParamsSchema,
    body: S.MoveBodySchema,
    success: NoContent,
  },
  fsFileInfo: {
    method: 'GET',
    url: '/browsers/:id/fs/file_info',
    auth: 'key',
    summary: 'Information about a file or directory',
    tag: 'fs',
    params: S.IdParamsSchema,
    querystring: S.FsPathQuerySchema,
    success: { status: 200, body: S.FileInfoSchema },
  },
  fsListFiles: {
    method: 'GET',
    url: '/browsers/:id/fs/list_files',
    auth: 'key',
    summary: 'List a directory',
    tag: 'fs',
    params: S.IdParamsSchema,
    querystring: S.FsPathQuerySchema,
    success: { status: 200, body: Type.Array(S.FileInfoSchema) },
  },
  fsReadFile: {
    method: 'GET',
    url: '/browsers/:id/fs/read_file',
    auth: 'key',
    summary: "Read a file's bytes",
    tag: 'fs',
    params: S.IdParamsSchema,
    querystring: S.FsPathQuerySchema,
    success: { status: 200, body: null },
    produces: 'application/octet-stream',
  },
  fsWriteFile: {
    method: 'PUT',
    url: '/browsers/:id/fs/write_file',
    auth: 'key',
    summary: 'Write a file from the raw request body (created or replaced)',
    tag: 'fs',
    params: S.IdParamsSchema,
    querystring: S.WriteFileQuerySchema,
    success: NoContent,
    consumes: 'application/octet-stream',
  },

  // Computer control: one input action at a time per session (daemon/computer/).
  computerDragMouse: {
    method: 'POST',
    url: '/browsers/:id/computer/drag_mouse',
    auth: 'key',
    summary: 'Drag the mouse along a path with a button held (steps_per_segment relative moves per segment)',
    tag: 'computer',
    params: S.IdParamsSchema,
    body: S.DragMouseSchema,
    success: NoContent,
  },
  computerScroll: {
    method: 'POST',
    url: '/browsers/:id/computer/scroll',
    auth: 'key',
    summary: 'Scroll the mouse wheel at a position: delta_y notches down (negative up), then delta_x right (negative left)',
    tag: 'computer',
    params: S.IdParamsSchema,
    body: S.ScrollSchema,
    success: NoContent,
  },
  computerClickMouse: {
    method: 'POST',
    url: '/browsers/:id/computer/click_mouse',
    auth: 'key',
    summary: 'Click (or press or release) a mouse button at a position',
    tag: 'computer',
    params: S.IdParamsSchema,
    body: S.ClickMouseSchema,
    success: NoContent,
  },
  computerMoveMouse: {
    method: 'POST',
    url: '/browsers/:id/computer/move_mouse',
    auth: 'key',
    summary: 'Move the mouse to a position',
    tag: 'computer',
    params: S.IdParamsSchema,
    body: S.MoveMouseSchema,
    success: NoContent,
  },
  computerTypeText: {
    method: 'POST',
    url: '/browsers/:id/computer/type',
    auth: 'key',
    summary: 'Type text (non-ASCII text is inserted with CDP Input.insertText)',
    tag: 'computer',
    params: S.IdParamsSchema,
    body: S.TypeTextSchema,
    success: NoContent,
  },
  computerPressKey: {
    method: 'POST',
    url: '/browsers/:id/computer/press_key',
    auth: 'key',
    summary: 'Press keys or combinations such as ctrl+t, in order',
    tag: 'computer',
    params: S.IdParamsSchema,
    body: S.PressKeySchema,
    success: NoContent,
  },
  computerScreenshot: {
    method: 'POST',
    url: '/browsers/:id/computer/screenshot',
    auth: 'key',
    summary: "A PNG of the session's screen (headful: the X display; headless: the page), optionally a region",
    tag: 'computer',
    params: S.IdParamsSchema,
    body: S.ScreenshotSchema,
    success: { status: 200, body: null },
    produces: 'image/png',
  },
  computerGetMousePosition: {
    method: 'POST',
    url: '/browsers/:id/computer/get_mouse_position',
    auth: 'key',
    summary: 'Where the mouse is',
    tag: 'computer',
    params: S.IdParamsSchema,
    success: { status: 200, body: S.MousePositionSchema },
  },
  computerBatch: {
    method: 'POST',
    url: '/browsers/:id/computer/batch',
    auth: 'key',
    summary: 'Run actions in order; the first error stops the batch (400 "actions[i] (type): message")',
    tag: 'computer',
    params: S.IdParamsSchema,
    body: S.BatchSchema,
    success: NoContent,
  },
  fsUpload: {
    method: 'POST',
    url: '/browsers/:id/fs/upload',
    auth: 'key',
    summary: 'Upload files (multipart: files[i][file] and files[i][dest_path]); parents are created',
    tag: 'fs',
    params: S.IdParamsSchema,
    success: NoContent,
    consumes: 'multipart/form-data',
  },
  fsDownloadDirZip: {
    method: 'GET',
    url: '/browsers/:id/fs/download_dir_zip',
    auth: 'key',
    summary: "A zip of a directory's contents",
    tag: 'fs',
    params: S.IdParamsSchema,
    querystring: S.FsPathQuerySchema,
    success: { status: 200, body: null },
    produces: 'application/zip',
  },
} as const satisfies Record<string, RouteDef>;

export type Routes = typeof routes;
export type OperationId = keyof Routes;

type StaticOf<T> = T extends TSchema ? Static<T> : undefined;
export type ParamsOf<K extends OperationId> = StaticOf<Routes[K] extends { params: infer P } ? P : undefined>;
export type QueryOf<K extends OperationId> = StaticOf<Routes[K] extends { querystring: infer Q } ? Q : undefined>;
/** Raw bytes in or out: a stream on the daemon's side, a Buffer (or text) on the client's. */
export type RawBody = Readable | Buffer | string;
export type BodyOf<K extends OperationId> = Routes[K] extends { consumes: string }
  ? RawBody
  : StaticOf<Routes[K] extends { body: infer B } ? B : undefined>;
type SuccessOf<K extends OperationId> = Routes[K] extends { produces: string }
  ? RawBody
  : Routes[K]['success']['body'] extends TSchema
    ? Static<Routes[K]['success']['body']>
    : void;
export type ResponseOf<K extends OperationId> = Routes[K] extends { noContentOnNull: true } ? SuccessOf<K> | null : SuccessOf<K>;
