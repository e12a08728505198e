import { Type, type Static } from 'typebox';
import { IdParamsSchema } from './schemas.js';
import type { RouteDef } from './route-def.js';

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
});
export type PlaywrightExecuteResult = Static<typeof PlaywrightExecuteResultSchema>;

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
} as const satisfies Record<string, RouteDef>;
