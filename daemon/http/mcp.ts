import type { FastifyReply, FastifyRequest } from 'fastify';
import { RbrowseClient } from '../../src/client.js';
import { bearer } from './server.js';

/**
 * The daemon's MCP endpoint (streamable HTTP, stateless: a server per request, as the SDK does it
 * for servers that keep nothing between calls). Its tools call this daemon's own API over
 * loopback with the caller's key and project, so keys, projects, limits and the audit log apply
 * to an agent exactly as to any client. The SDK is loaded on the first request: an idle daemon
 * does not carry it.
 */
export function mcpEndpoint(selfUrl: () => string) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    reply.hijack();
    try {
      const [{ StreamableHTTPServerTransport }, { mcpServer }] = await Promise.all([
        import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
        import('../../src/mcp/server.js'),
      ]);
      const namesProject = request.headers['x-kernel-project-id'] !== undefined || request.headers['x-kernel-project'] !== undefined;
      const server = mcpServer(new RbrowseClient(selfUrl(), bearer(request), namesProject ? request.org?.project_id : undefined));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (err) {
      // The transport answers protocol errors itself; anything else ends here, never as a 5xx.
      if (reply.raw.headersSent) return void reply.raw.destroy();
      reply.raw.writeHead(503, { 'content-type': 'application/json' });
      reply.raw.end(JSON.stringify({ code: 'service_unavailable', message: `the MCP endpoint failed: ${(err as Error)?.message ?? err}` }));
    }
  };
}
