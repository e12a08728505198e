import { Type, type Static } from 'typebox';
import { IdParamsSchema } from './schemas.js';
import type { RouteDef } from './route-def.js';

// WebMCP (Kernel's browsers.webmcp): the tools pages register with `navigator.modelContext` or
// declare with form attributes, found across every tab and frame, and invoked through Chromium's
// WebMCP DevTools domain. In the newest SDKs' shapes.

const ToolAnnotationsSchema = Type.Object(
  {
    autosubmit: Type.Optional(Type.Boolean()),
    consequentialHint: Type.Optional(Type.Boolean()),
    destructiveHint: Type.Optional(Type.Boolean()),
    idempotentHint: Type.Optional(Type.Boolean()),
    openWorldHint: Type.Optional(Type.Boolean()),
    readOnlyHint: Type.Optional(Type.Boolean()),
    untrustedContentHint: Type.Optional(Type.Boolean()),
  },
  { description: "The page's own hints: untrusted, not enforced" },
);

export const WebmcpToolSchema = Type.Object({
  tool_ref: Type.String({ description: 'Names this live registration for invoke; stale once its document or browser is replaced' }),
  tool: Type.Object({
    name: Type.String(),
    description: Type.String(),
    inputSchema: Type.Record(Type.String(), Type.Unknown()),
    title: Type.Optional(Type.String()),
    annotations: Type.Optional(ToolAnnotationsSchema),
    outputSchema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  }),
  source: Type.Object({
    frame: Type.Union([Type.Object({ frame_id: Type.Integer(), url: Type.String() }), Type.Null()], {
      description: 'The embedded frame that registered it; null for the top-level page',
    }),
    page_title: Type.String(),
    page_url: Type.String({ description: 'Without its fragment' }),
    tab_id: Type.Integer({ description: 'Numbers tabs in the order they were first seen, for as long as the browser runs' }),
    window_id: Type.Integer(),
  }),
});
export type WebmcpTool = Static<typeof WebmcpToolSchema>;

export const WebmcpToolsSchema = Type.Object({ tools: Type.Array(WebmcpToolSchema) });
export type WebmcpTools = Static<typeof WebmcpToolsSchema>;

export const WebmcpInvokeSchema = Type.Object(
  {
    tool_ref: Type.String({ minLength: 1, maxLength: 512 }),
    input: Type.Record(Type.String(), Type.Unknown(), { description: "The tool's input, at most 1 MiB as JSON" }),
    timeout_sec: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 600, default: 60, description: 'How long to wait for its result; after that the outcome is unknown' }),
    ),
  },
  { additionalProperties: false },
);
export type WebmcpInvokeBody = Static<typeof WebmcpInvokeSchema>;

export const WebmcpInvocationSchema = Type.Object({
  invocation_id: Type.String(),
  status: Type.Union([Type.Literal('completed'), Type.Literal('canceled'), Type.Literal('error'), Type.Literal('awaiting_submission')], {
    description: 'awaiting_submission: a declarative form was filled in but not submitted (it has no autosubmit); submit it yourself',
  }),
  output: Type.Optional(Type.Unknown({ description: "The page's output: untrusted" })),
  error_text: Type.Optional(Type.String()),
});
export type WebmcpInvocation = Static<typeof WebmcpInvocationSchema>;

export const webmcpRoutes = {
  listWebmcpTools: {
    method: 'GET',
    url: '/browsers/:id/webmcp/tools',
    auth: 'key',
    summary: "The WebMCP tools registered now across the session's tabs and frames, each with the tool_ref that invokes it",
    tag: 'webmcp',
    params: IdParamsSchema,
    querystring: Type.Object({
      exclude_custom: Type.Optional(Type.Boolean({ description: "Only the pages' own tools (rbrowse has no custom tools, so always so)" })),
    }),
    success: { status: 200, body: WebmcpToolsSchema },
  },
  invokeWebmcpTool: {
    method: 'POST',
    url: '/browsers/:id/webmcp/invoke',
    auth: 'key',
    summary:
      'Invoke the tool a tool_ref names and wait for its result. A tab or frame gone, or no result within timeout_sec, after the tool started: 504 outcome_unknown (never retried)',
    tag: 'webmcp',
    params: IdParamsSchema,
    body: WebmcpInvokeSchema,
    success: { status: 200, body: WebmcpInvocationSchema },
  },
} as const satisfies Record<string, RouteDef>;
