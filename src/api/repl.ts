import { Type, type Static } from 'typebox';
import { IdParamsSchema } from './schemas.js';
import type { RouteDef } from './route-def.js';

// The browser REPL (Kernel's browsers.repl in its newest SDKs): JavaScript in a persistent Node
// runtime beside the session's browser, with browser helpers; output comes back as ordered text
// and image items.

export const ReplSchema = Type.Object(
  {
    code: Type.String({
      maxLength: 8 * 1024 * 1024,
      description:
        'JavaScript run in the persistent runtime: top-level bindings persist, top-level await and dynamic import() work, static imports do not. Expression values are not returned: print with repl.write(...), console methods or repl.emitImage(...). May be empty only with reset',
    }),
    reset: Type.Optional(Type.Boolean({ description: 'End the current REPL and start a fresh one, then run code' })),
    timeout_sec: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 300,
        default: 60,
        description: 'After this many seconds the REPL is stopped (repl_terminated) and the call fails',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ReplBody = Static<typeof ReplSchema>;

const ReplTextContentSchema = Type.Object({
  type: Type.Literal('text'),
  channel: Type.Union([Type.Literal('write'), Type.Literal('stdout'), Type.Literal('stderr')], {
    description: 'write: repl.write; stdout: console.log, info, debug; stderr: console.warn, error',
  }),
  text: Type.String(),
});
const ReplImageContentSchema = Type.Object({
  type: Type.Literal('image'),
  mime_type: Type.String(),
  data_b64: Type.String(),
});

export const ReplResultSchema = Type.Object({
  repl_id: Type.String({ description: 'The runtime that ran the code: the same from call to call until a reset, a timeout or a crash' }),
  success: Type.Boolean(),
  content: Type.Optional(Type.Array(Type.Union([ReplTextContentSchema, ReplImageContentSchema]), { description: 'The output, in order' })),
  content_truncated: Type.Optional(Type.Boolean({ description: 'Output beyond 256 KiB of text or 16 MiB of images (8 MiB each) was dropped' })),
  duration_ms: Type.Optional(Type.Integer()),
  error: Type.Optional(Type.String()),
  stack: Type.Optional(Type.String()),
  repl_terminated: Type.Optional(
    Type.Boolean({ description: 'This call ended the REPL (timeout, crash): the next one starts a fresh one with a new repl_id' }),
  ),
});
export type ReplResult = Static<typeof ReplResultSchema>;

export const replRoutes = {
  runRepl: {
    method: 'POST',
    url: '/browsers/:id/repl',
    auth: 'key',
    summary:
      "Run JavaScript in the session's persistent REPL (a Node runtime in the session's box, with browser helpers): its ordered text and image output",
    tag: 'repl',
    params: IdParamsSchema,
    body: ReplSchema,
    success: { status: 200, body: ReplResultSchema },
  },
} as const satisfies Record<string, RouteDef>;
