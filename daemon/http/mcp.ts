import type { FastifyReply, FastifyRequest } from 'fastify';
import { RbrowseClient } from '../../src/client.js';

/**
 * The daemon's MCP endpoint (streamable HTTP, stateless: a server per request, as the SDK does it
 * for servers that keep nothing between calls). Its tools call this daemon's own API over
 * loopback with the caller's key and project, so keys, projects, limits and the audit log apply
 * to an agent exactly as to any client. The SDK is loaded on the first request: an idle daemon
 * does not carry it.
 */
export function mcpEndpoint(selfUrl: () => string) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const [{ StreamableHTTPServerTransport }, { mcpServer }] = await Promise.all([
      import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
      import('../../src/mcp/server.js'),
    ]);
    const key = /^Bearer\s+(\S+)/i.exec(request.headers.authorization ?? '')?.[1];
    const namesProject = request.headers['x-kernel-project-id'] !== undefined || request.headers['x-kernel-project'] !== undefined;
    const client = new RbrowseClient(selfUrl(), key, namesProject ? request.org?.project_id : undefined);
    const server = mcpServer(client);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  };
}
