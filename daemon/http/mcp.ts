import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RbrowseClient } from '../../src/client.js';
import type { Exchange, ExchangeBody } from '../../src/http-exchange.js';
import { newId } from '../../src/ids.js';
import {
  DEFAULT_TOOL_GROUPS,
  SESSION_ID_SCHEMA,
  TOOL_GROUPS,
  tools as kernelTools,
  type McpTool,
  type ToolContext,
  type ToolGroup,
} from '../../src/mcp/tools.js';
import { PAGE_TOOLS, pageToolsOf } from '../in-session/page-tools/page-tools.js';
import type { Scope } from '../org/projects.js';
import type { SessionManager } from '../sessions/manager.js';
import { bearer } from './server.js';

/** How long a connection whose stream closed (its client gone, or reconnecting) is waited for. */
const STREAM_GRACE_MS = 60_000;

/** Playwright MCP's tools left out: its code runner duplicates execute_playwright_code (which takes TypeScript too). */
const PAGE_TOOLS_LEFT_OUT = new Set(['browser_run_code_unsafe']);
/** Its less used tools, in the page-more group (asked for by name): the rest of the loop fits an agent's context with room. */
const PAGE_MORE = new Set(['browser_resize', 'browser_emulate_media', 'browser_drop', 'browser_find', 'browser_network_request', 'browser_drag']);

export interface McpSettings {
  /** An HTTP MCP connection with no request and no open stream for this long has ended (RBROWSE_MCP_IDLE_SECONDS). */
  idleMs: number;
  /** Connections an organization may have at once (RBROWSE_MCP_MAX_CONNECTIONS). */
  maxPerOrg: number;
}

/**
 * A request into the daemon's own server, with no socket between: the tools' API calls, with the
 * caller's key, go through authentication, validation, limits and the audit log as any other
 * request does, and share nothing with another caller's.
 */
function injected(app: FastifyInstance) {
  return async (url: URL, o: { method: string; headers: Record<string, string>; body?: ExchangeBody }): Promise<Exchange> => {
    if (o.body !== undefined && typeof o.body !== 'string' && !Buffer.isBuffer(o.body)) throw new Error('an MCP tool sends JSON or bytes only');
    const res = await app.inject({
      method: o.method as 'GET',
      url: `${url.pathname}${url.search}`,
      headers: o.headers,
      ...(o.body !== undefined ? { payload: o.body } : {}),
    });
    return { status: res.statusCode, headers: res.headers as Exchange['headers'], body: res.rawPayload };
  };
}

/** What an MCP client calls itself (its initialize request), fit for a session name. */
const clientNameOf = (body: unknown): string => {
  const info = (body as { params?: { clientInfo?: { name?: unknown } } } | undefined)?.params?.clientInfo;
  const name = typeof info?.name === 'string' ? info.name : 'client';
  return (
    name
      .replace(/[\u0000-\u001f/]+/g, ' ')
      .trim()
      .slice(0, 60) || 'client'
  );
};

/** One MCP connection (an MCP session of streamable HTTP): the sessions it made and holds, its own among them. */
class McpConnection {
  readonly id = newId();
  lastSeen = Date.now();
  /** Open GET streams: while one is, the connection is alive whatever its silence. */
  streams = 0;
  /** It has kept a stream open (the stdio relay does): once its last one closes, it is given a short grace only. */
  streamed = false;
  private own?: Promise<string>;
  private readonly holds = new Map<string, () => void>();
  private readonly kept = new Set<string>();
  /** Sessions whose Playwright MCP it has driven. */
  private readonly driven = new Set<string>();
  private ended = false;
  transport!: StreamableHTTPServerTransport;
  server!: Server;

  constructor(
    readonly scope: Scope,
    readonly clientName: string,
    readonly client: RbrowseClient,
    private readonly sessions: SessionManager,
    readonly groups: ReadonlySet<ToolGroup>,
  ) {}

  get context(): ToolContext {
    return {
      client: this.client,
      session: (named) => (typeof named === 'string' && named ? Promise.resolve(named) : this.ownSession()),
      made: (id) => this.hold(id),
      keep: (id) => void this.kept.add(id),
    };
  }

  /** This connection's own session, made on first use (from standby), named for its client. */
  private ownSession(): Promise<string> {
    const current = this.own;
    if (current) {
      return current.then(async (id) => {
        if (this.sessions.liveSession(id) && !this.sessions.liveSession(id)!.isStopping) return id;
        // Gone under the connection (deleted, its browser exited): said once; the next call makes a new one.
        this.own = undefined;
        const seen = await this.client.call('getBrowser', { params: { id }, query: { include_deleted: true } }).catch(() => undefined);
        throw new Error(
          `this connection's session ${id} ${seen?.deleted_at ? `ended at ${seen.deleted_at}` : 'ended'}; the next call starts a new one (or give a session_id)`,
        );
      });
    }
    this.own = this.client
      .call('createBrowser', { body: { headless: true, name: `mcp ${this.clientName} ${this.id.slice(0, 8)}` } })
      .then((browser) => {
        this.hold(browser.session_id);
        return browser.session_id;
      });
    this.own.catch(() => (this.own = undefined));
    return this.own;
  }

  private hold(id: string): void {
    if (this.ended || this.holds.has(id)) return;
    const live = this.sessions.liveSession(id);
    if (!live) return;
    this.holds.set(
      id,
      live.hold('agent', () => this.holds.delete(id)),
    );
  }

  /** A page tool of Playwright MCP on a session this connection's key sees. */
  async page(name: string, args: Record<string, unknown>, named: unknown) {
    const id = await this.context.session(named);
    // The API's own answer says whether the key sees the session (and how it ended if it has).
    const visible = await this.client.call('getBrowser', { params: { id } });
    this.driven.add(visible.session_id);
    return this.sessions.withSession(this.scope, visible.session_id, (s) =>
      pageToolsOf(s).call(this.id, this.sessions.view.cdpUrlInBox(s.record), name, args),
    );
  }

  /** Whether it has ended by going quiet: no stream open, and no request for the idle time (a minute, once its stream closed). */
  quietFor(now: number, idleMs: number): boolean {
    return this.streams === 0 && now - this.lastSeen > (this.streamed ? Math.min(idleMs, STREAM_GRACE_MS) : idleMs);
  }

  /** The connection ends: what it holds is let go, its own session (unless kept) ends with it. */
  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    const own = await this.own?.catch(() => undefined);
    for (const release of this.holds.values()) release();
    this.holds.clear();
    for (const id of this.driven) {
      const live = this.sessions.liveSession(id);
      if (live) await pageToolsOf(live).release(this.id);
    }
    if (own && !this.kept.has(own) && this.sessions.liveSession(own)) await this.sessions.end(own, 'agent_ended');
    await this.server?.close().catch(() => {});
  }
}

/**
 * The daemon's MCP endpoint (streamable HTTP, /mcp, behind the API key) and the stdio server's
 * other end (`rbrowse mcp` relays to it): Kernel's API as tools, with the caller's key, and
 * Playwright MCP's page tools on each connection's own session. A connection lasts while its
 * client keeps a stream open or calls within the idle time, or until its DELETE; the sessions it
 * made count as held meanwhile (their inactivity timeout starts when it ends), and its own
 * session ends with it unless the agent kept it.
 */
export class McpEndpoint {
  private readonly connections = new Map<string, McpConnection>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly deps: { sessions: SessionManager; log: (msg: string, extra?: object) => void },
    private readonly settings: McpSettings,
  ) {
    this.sweeper = setInterval(() => void this.sweep(), Math.min(5000, Math.max(250, settings.idleMs / 4)));
    this.sweeper.unref();
  }

  /** The tools a connection has: every group, or those named in `tools` (comma-separated). */
  private toolsFor(conn: McpConnection): McpTool[] {
    const page: McpTool[] = PAGE_TOOLS.filter((t) => !PAGE_TOOLS_LEFT_OUT.has(t.name)).map((t) => ({
      name: t.name,
      description: t.description ?? '',
      group: PAGE_MORE.has(t.name) ? 'page-more' : 'page',
      // Its own schema, with a session to act on; its $schema line is left out (nothing reads it, every tool repeats it).
      inputSchema: (({ $schema: _, ...schema }) => ({ ...schema, properties: { ...(schema.properties ?? {}), session_id: SESSION_ID_SCHEMA } }))(
        t.inputSchema,
      ),
      annotations: t.annotations ?? {},
      pageContent: true,
      run: async (_ctx, input) => {
        const { session_id, ...args } = input;
        return (await conn.page(t.name, args, session_id)) as Awaited<ReturnType<McpTool['run']>>;
      },
    }));
    return [...kernelTools, ...page].filter((t) => conn.groups.has(t.group));
  }

  private groupsOf(request: FastifyRequest): Set<ToolGroup> {
    const asked = (request.query as { tools?: string } | undefined)?.tools;
    if (!asked) return new Set(DEFAULT_TOOL_GROUPS);
    return new Set(
      asked
        .split(',')
        .map((g) => g.trim())
        .filter((g): g is ToolGroup => (TOOL_GROUPS as readonly string[]).includes(g)),
    );
  }

  readonly handle = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const scope = request.org!;
    const sessionId = request.headers['mcp-session-id'];
    const fail = (status: number, code: string, message: string) => reply.code(status).send({ code, message });
    if (typeof sessionId === 'string') {
      const conn = this.connections.get(sessionId);
      // Another organization's connection is not there for this key.
      if (!conn || conn.scope.id !== scope.id)
        return fail(404, 'not_found', `MCP session ${sessionId} not found (it ended, or was never this key's): initialize a new one`);
      conn.lastSeen = Date.now();
      reply.hijack();
      if (request.method === 'GET') {
        conn.streams++;
        conn.streamed = true;
        reply.raw.on('close', () => {
          conn.streams--;
          conn.lastSeen = Date.now();
        });
      }
      await this.serve(conn, request, reply);
      if (request.method === 'DELETE') await this.close(conn);
      return;
    }
    if (request.method !== 'POST' || (request.body as { method?: string } | undefined)?.method !== 'initialize') {
      return fail(400, 'bad_request', 'an MCP session starts with an initialize request (POST, no Mcp-Session-Id)');
    }
    const mine = [...this.connections.values()].filter((c) => c.scope.org_id === scope.org_id).length;
    if (mine >= this.settings.maxPerOrg) {
      return fail(
        429,
        'rate_limited',
        `the organization has ${mine} MCP connections open (RBROWSE_MCP_MAX_CONNECTIONS); end one (DELETE /mcp) or wait for one to go idle`,
      );
    }
    reply.hijack();
    const [{ StreamableHTTPServerTransport }, { mcpServer }] = await Promise.all([
      import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
      import('../../src/mcp/server.js'),
    ]);
    const namesProject = request.headers['x-kernel-project-id'] !== undefined || request.headers['x-kernel-project'] !== undefined;
    const client = new RbrowseClient('http://rbrowse.local', bearer(request), namesProject ? scope.project_id : undefined, injected(request.server));
    const conn = new McpConnection(scope, clientNameOf(request.body), client, this.deps.sessions, this.groupsOf(request));
    conn.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => conn.id,
      enableJsonResponse: true,
      onsessioninitialized: () => void this.connections.set(conn.id, conn),
    });
    conn.server = mcpServer(conn.context, this.toolsFor(conn));
    await conn.server.connect(conn.transport);
    await this.serve(conn, request, reply);
  };

  private async serve(conn: McpConnection, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    try {
      await conn.transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (err) {
      // The transport answers protocol errors itself; anything else ends here, never as a 5xx.
      if (reply.raw.headersSent) return void reply.raw.destroy();
      reply.raw.writeHead(503, { 'content-type': 'application/json' });
      reply.raw.end(JSON.stringify({ code: 'service_unavailable', message: `the MCP endpoint failed: ${(err as Error)?.message ?? err}` }));
    }
  }

  private async close(conn: McpConnection): Promise<void> {
    if (!this.connections.delete(conn.id)) return;
    await conn.end().catch((err: unknown) => this.deps.log('MCP connection end failed', { connection: conn.id, error: String(err) }));
  }

  /** Connections silent past the idle time with no stream open have ended. */
  private async sweep(): Promise<void> {
    const now = Date.now();
    for (const conn of [...this.connections.values()]) {
      if (conn.quietFor(now, this.settings.idleMs)) await this.close(conn);
    }
  }

  /** The daemon stops: every connection ends (its sessions end with the daemon anyway). */
  async stop(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.connections.values()].map((c) => this.close(c)));
  }
}
