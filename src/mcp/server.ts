import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { RbrowseClient } from '../client.js';
import { VERSION } from '../version.js';
import { callTool, tools } from './tools.js';

const INSTRUCTIONS = `rbrowse runs real Chromium browsers on this machine, as Kernel's cloud does.
Start one with create_browser (headless: true for speed, false for a live view a person can watch),
drive it with browser_repl (a persistent JavaScript REPL with page helpers), execute_playwright_code
(page, context and browser in scope) or the computer_* tools,
look with take_screenshot, and end it with delete_browser. Sessions end by themselves after
timeout_seconds (default 60) without a connected client.`;

/**
 * An MCP server whose tools act through `client` (the daemon's HTTP API, with the caller's key):
 * the stdio server of `rbrowse mcp` and the daemon's /mcp endpoint are the same server over two
 * transports. The low-level Server takes the tools' JSON Schemas as they are, which are the
 * route schemas themselves (src/mcp/tools.ts), rather than a second copy written in zod.
 */
export function mcpServer(client: RbrowseClient): Server {
  const server = new Server({ name: 'rbrowse', version: VERSION }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations })),
  }));
  server.setRequestHandler(
    CallToolRequestSchema,
    async (req): Promise<CallToolResult> => ({ ...(await callTool(client, req.params.name, req.params.arguments ?? {})) }),
  );
  return server;
}
