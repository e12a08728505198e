import { Type, type Static } from 'typebox';
import { IdParamsSchema } from './schemas.js';
import { NoContent, type RouteDef } from './route-def.js';

// Playwright execution (Kernel's browsers.playwright.execute): code run against the session's
// browser in a process of its own.

export const PlaywrightExecuteSchema = Type.Object(
  {
    code: Type.String({
      minLength: 1,
      maxLength: 1024 * 1024,
      description: 'TypeScript or JavaScript, the body of an async function given `page`, `context` and `browser`; what it returns is `result`',
    }),
    timeout_sec: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600, default: 60, description: 'Killed after this many seconds (default 60)' })),
    executor: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$',
        description:
          "The executor to run in: calls on one run one at a time, on different ones at once; a named one owns a tab of its own ('page'), opened by its first call. 'default' (or none): the active tab",
      }),
    ),
  },
  { additionalProperties: false },
);
export type PlaywrightExecuteBody = Static<typeof PlaywrightExecuteSchema>;

export const PlaywrightExecuteResultSchema = Type.Object({
  success: Type.Boolean(),
  result: Type.Optional(Type.Unknown({ description: 'The returned value as JSON (null for none)' })),
  error: Type.Optional(Type.String()),
  stdout: Type.Optional(Type.String()),
  stderr: Type.Optional(Type.String({ description: "The code's own output to stderr, then the error's stack" })),
  tab: Type.Optional(
    Type.Object(
      { created: Type.Boolean({ description: 'This call opened the tab' }), target_id: Type.String({ description: "The tab's CDP target id" }) },
      { description: "The tab 'page' was bound to (absent when the call failed before)" },
    ),
  ),
});
export type PlaywrightExecuteResult = Static<typeof PlaywrightExecuteResultSchema>;

export const ExecutorSchema = Type.Object(
  {
    name: Type.String(),
    busy: Type.Boolean({ description: 'A call runs on it now' }),
    created_at: Type.String({ format: 'date-time' }),
    last_used_at: Type.String({ format: 'date-time', description: 'When its last call started (its creation before any)' }),
    target_id: Type.Optional(Type.String({ description: "A named executor's tab, while it is open" })),
    url: Type.Optional(Type.String({ description: "That tab's URL" })),
  },
  { description: 'A Playwright executor of the session' },
);
export type Executor = Static<typeof ExecutorSchema>;

export const ExecutorListSchema = Type.Object({
  executors: Type.Array(ExecutorSchema, { description: 'The default executor, then the named ones' }),
});
export type ExecutorList = Static<typeof ExecutorListSchema>;

export const ExecutorParamsSchema = Type.Object({ id: IdParamsSchema.properties.id, name: Type.String({ minLength: 1, maxLength: 64 }) });

export const playwrightRoutes = {
  playwrightExecute: {
    method: 'POST',
    url: '/browsers/:id/playwright/execute',
    auth: 'key',
    summary:
      "Run Playwright code against the session's browser, in a process of its own inside the session (a loop or a crash ends only it; the timeout kills it): {success, result, error, stdout, stderr}",
    tag: 'playwright',
    params: IdParamsSchema,
    body: PlaywrightExecuteSchema,
    success: { status: 200, body: PlaywrightExecuteResultSchema },
  },
  listPlaywrightExecutors: {
    method: 'GET',
    url: '/browsers/:id/playwright/executors',
    auth: 'key',
    summary: "The session's Playwright executors: the default one, then the named ones, each busy or not, with its tab",
    tag: 'playwright',
    params: IdParamsSchema,
    success: { status: 200, body: ExecutorListSchema },
  },
  deletePlaywrightExecutor: {
    method: 'DELETE',
    url: '/browsers/:id/playwright/executors/:name',
    auth: 'key',
    summary:
      'Stop an executor: a call running on it fails; a named one is removed (its tab closed unless close_tab=false), the default one restarted',
    tag: 'playwright',
    params: ExecutorParamsSchema,
    querystring: Type.Object({ close_tab: Type.Optional(Type.Boolean({ default: true })) }),
    success: NoContent,
  },
} as const satisfies Record<string, RouteDef>;
