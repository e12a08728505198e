import { Type, type Static } from 'typebox';
import { IdParamsSchema } from './schemas.js';
import { NoContent, type RouteDef } from './route-def.js';

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

const ToolMetadataSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 256 }),
  description: Type.String({ maxLength: 64 * 1024 }),
  inputSchema: Type.Record(Type.String(), Type.Unknown()),
  title: Type.Optional(Type.String({ maxLength: 1024 })),
  annotations: Type.Optional(ToolAnnotationsSchema),
  outputSchema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

export const WebmcpToolSchema = Type.Object({
  tool_ref: Type.String({ description: 'Names this live registration for invoke; stale once its document or browser is replaced' }),
  tool: ToolMetadataSchema,
  source: Type.Object({
    frame: Type.Union([Type.Object({ frame_id: Type.Integer(), url: Type.String() }), Type.Null()], {
      description: 'The embedded frame that registered it; null for the top-level page',
    }),
    page_title: Type.String(),
    page_url: Type.String({ description: 'Without its fragment' }),
    tab_id: Type.Integer({ description: 'Numbers tabs in the order they were first seen, for as long as the browser runs' }),
    window_id: Type.Integer(),
    custom: Type.Optional(Type.Object({ id: Type.String(), namespace: Type.String() }, { description: 'A custom tool: which one' })),
    target_id: Type.Optional(Type.String({ description: 'A custom tool: the CDP target id of the tab it is offered on' })),
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

// Custom tools (Kernel's browsers.webmcp.customTools): tools the caller defines in JavaScript,
// offered on every tab whose document or frames match their URL patterns, beside the pages' own.

export const CUSTOM_TOOL_SOURCE_MAX_BYTES = 8_000_000;

export const CustomToolAddSchema = Type.Object(
  {
    namespace: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$',
      description: "The batch's namespace: force_overwrite_namespace replaces every tool in it",
    }),
    source: Type.String({
      minLength: 1,
      maxLength: CUSTOM_TOOL_SOURCE_MAX_BYTES,
      description:
        'JavaScript that evaluates to a non-empty array of definitions: {kind: "page" | "cdp", match: {url_patterns}, tool: {name, description, inputSchema, title?, outputSchema?, annotations?}, execute(input)}. At most 8,000,000 bytes as UTF-8. Executable code, not JSON: only register source you trust',
    }),
    force_overwrite_namespace: Type.Optional(
      Type.Boolean({ description: 'Replace every tool already in the namespace with this batch, atomically' }),
    ),
  },
  { additionalProperties: false },
);
export type CustomToolAddBody = Static<typeof CustomToolAddSchema>;

export const CustomToolDefinitionSchema = Type.Object({
  id: Type.String({ description: 'ct_ and 24 characters' }),
  kind: Type.Union([Type.Literal('page'), Type.Literal('cdp')], {
    description: "page: execute runs in the page; cdp: it runs in the session's REPL runtime, with its helpers, on the tab",
  }),
  match: Type.Object({
    url_patterns: Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
      minItems: 1,
      maxItems: 64,
      description: 'URL patterns (URLPattern syntax, as https://example.com/*); * alone matches every page',
    }),
  }),
  namespace: Type.String(),
  tool: ToolMetadataSchema,
});
export type CustomToolDefinition = Static<typeof CustomToolDefinitionSchema>;

export const CustomToolsSchema = Type.Object({ tools: Type.Array(CustomToolDefinitionSchema) });
export type CustomTools = Static<typeof CustomToolsSchema>;

export const webmcpRoutes = {
  listWebmcpTools: {
    method: 'GET',
    url: '/browsers/:id/webmcp/tools',
    auth: 'key',
    summary: "The WebMCP tools registered now across the session's tabs and frames, each with the tool_ref that invokes it",
    tag: 'webmcp',
    params: IdParamsSchema,
    querystring: Type.Object({
      exclude_custom: Type.Optional(Type.Boolean({ description: "Only the pages' own tools, without custom ones" })),
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
  listWebmcpCustomTools: {
    method: 'GET',
    url: '/browsers/:id/webmcp/custom-tools',
    auth: 'key',
    summary: "The session's custom WebMCP tools: id, kind, namespace, URL patterns and metadata",
    tag: 'webmcp',
    params: IdParamsSchema,
    success: { status: 200, body: CustomToolsSchema },
  },
  addWebmcpCustomTools: {
    method: 'POST',
    url: '/browsers/:id/webmcp/custom-tools',
    auth: 'key',
    summary:
      "Add a namespace's batch of custom tools, atomically (force_overwrite_namespace: replacing the namespace's tools); answers the tools added",
    tag: 'webmcp',
    params: IdParamsSchema,
    body: CustomToolAddSchema,
    success: { status: 201, body: CustomToolsSchema },
  },
  removeWebmcpCustomTool: {
    method: 'DELETE',
    url: '/browsers/:id/webmcp/custom-tools/:tool_id',
    auth: 'key',
    summary: 'Remove one custom tool by its id (an invocation under way goes on)',
    tag: 'webmcp',
    params: Type.Object({ id: IdParamsSchema.properties.id, tool_id: Type.String({ maxLength: 64 }) }),
    success: NoContent,
  },
} as const satisfies Record<string, RouteDef>;
