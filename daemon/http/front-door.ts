import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { isIP, type Socket } from 'node:net';
import { type ApiError, ForbiddenError, RateLimitError, ServiceUnavailableError } from '../../src/errors.js';
import { refuseOnSocket } from './upgrades.js';

/** What the daemon's HTTP server allows a client before it is cut off (RBROWSE_* to change each). */
export interface FrontDoorLimits {
  /** From a connection's first byte (or its previous request's end) to the end of the headers. */
  headersTimeoutMs: number;
  /** For a whole request to arrive, body included (a 4 GiB upload over loopback takes seconds). */
  requestTimeoutMs: number;
  /** An idle kept-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Open connections in all (websockets included): the rest of the descriptors are the daemon's own. */
  maxConnections: number;
  /** Open connections from one address. */
  maxConnectionsPerClient: number;
}

/** The process's limit of open descriptors, as the kernel enforces it now. */
function openFileLimit(): number {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (m) return Number(m[1]);
  } catch {
    // Not Linux: assume the common default.
  }
  return 1024;
}

const positive = (value: string | undefined, fallback: number): number => {
  const n = Number(value);
  return value !== undefined && value !== '' && Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback;
};

export function frontDoorLimits(env: NodeJS.ProcessEnv = process.env): FrontDoorLimits {
  // A connection costs one descriptor (a websocket two: its upstream); a quarter of the limit leaves
  // the rest for state writes, boxes, browsers' sockets and logs however many clients come.
  const byDescriptors = Math.max(64, Math.floor(openFileLimit() / 4));
  const maxConnections = positive(env.RBROWSE_MAX_CONNECTIONS, Math.min(4096, byDescriptors));
  return {
    headersTimeoutMs: positive(env.RBROWSE_HEADERS_TIMEOUT_MS, 10_000),
    requestTimeoutMs: positive(env.RBROWSE_REQUEST_TIMEOUT_MS, 300_000),
    keepAliveTimeoutMs: positive(env.RBROWSE_KEEP_ALIVE_TIMEOUT_MS, 10_000),
    maxConnections,
    maxConnectionsPerClient: Math.min(maxConnections, positive(env.RBROWSE_MAX_CONNECTIONS_PER_CLIENT, maxConnections)),
  };
}

/**
 * Node's HTTP server with the front door's timeouts. Node checks headers and request timeouts on
 * an interval (30 s by default); once a second keeps a slow client's cut-off near its limit.
 */
export function createFrontDoorServer(limits: FrontDoorLimits, handler: RequestListener): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: 1000,
    },
    handler,
  );
  return server;
}

interface Connection {
  socket: Socket;
  client: string;
  /** Requests in progress on it; 0 while it waits for one (new, or kept alive between requests). */
  busy: number;
  upgraded: boolean;
}

/**
 * Caps open connections in all and per client address, keeping room for clients that use the API.
 * At the cap, a new connection takes the place of one that waits without a request in progress:
 * first one that sent part of a request and stalls (a flood's), then one that never carried a
 * request, longest-waiting first, then a kept-alive connection between requests (its client
 * reconnects, as after its keep-alive timeout). One in the middle of a request or a websocket is
 * never cut for a newcomer: with all of them busy, the newcomer is refused with 503 (429 past its
 * address's cap).
 *
 * A connection the daemon has read nothing of may still carry a client's request (a loaded
 * daemon accepts a flood's connections in one go before it reads any), so one cut before it
 * carried a request is answered 503 with Retry-After, never left to hang up; and a request
 * already on its way on a cut or refused connection is never run: its client was told to retry.
 */
export class ConnectionGuard {
  private readonly connections = new Map<Socket, Connection>();
  /** Waiting connections that never carried a request, then kept-alive ones; each longest-waiting first (a Set keeps insertion order). */
  private readonly fresh = new Set<Connection>();
  private readonly idle = new Set<Connection>();
  private readonly perClient = new Map<string, number>();
  private evicted = 0;
  private refused = 0;

  constructor(private readonly limits: FrontDoorLimits) {}

  /** Open now; waiting for a request; closed to make room for a newcomer; refused since the start. */
  stats(): { open: number; waiting: number; evicted: number; refused: number } {
    return { open: this.connections.size, waiting: this.fresh.size + this.idle.size, evicted: this.evicted, refused: this.refused };
  }

  /**
   * The server's request handler behind the guard: a request on a connection it refused or cut
   * (its client has its 503 already; the connection closes once it is read) is never run. Node
   * parses a request that came with the connection even after the refusal was written.
   */
  serving(handler: RequestListener): RequestListener {
    return (req: IncomingMessage, res: ServerResponse) => {
      const c = this.connections.get(req.socket as Socket);
      if (!c) return;
      c.busy++;
      this.fresh.delete(c);
      this.idle.delete(c);
      res.once('close', () => {
        c.busy--;
        if (c.busy === 0 && !c.upgraded && this.connections.has(c.socket)) this.idle.add(c);
      });
      handler(req, res);
    };
  }

  /** Admits the server's connections. A websocket handshake on one it refused or cut finds its socket ended (UpgradeRouter). */
  attach(server: Server): void {
    server.on('connection', (socket: Socket) => this.admit(socket));
    server.on('upgrade', (req: IncomingMessage) => {
      const c = this.connections.get(req.socket as Socket);
      if (!c) return;
      c.upgraded = true;
      this.fresh.delete(c);
      this.idle.delete(c);
    });
  }

  private admit(socket: Socket): void {
    const client = socket.remoteAddress ?? 'unknown';
    const fromClient = this.perClient.get(client) ?? 0;
    if (fromClient >= this.limits.maxConnectionsPerClient && !this.evictWaiting(client)) {
      return this.refuse(
        socket,
        new RateLimitError(`too many open connections from ${client} (${this.limits.maxConnectionsPerClient}); close idle ones`, 1),
      );
    }
    if (this.connections.size >= this.limits.maxConnections && !this.evictWaiting()) {
      return this.refuse(socket, this.overloaded(`the daemon has ${this.limits.maxConnections} open connections, all busy; try again shortly`));
    }
    const c: Connection = { socket, client, busy: 0, upgraded: false };
    this.connections.set(socket, c);
    this.fresh.add(c);
    // Counted again: an eviction above may have freed a place of this client's.
    this.perClient.set(client, (this.perClient.get(client) ?? 0) + 1);
    socket.once('close', () => this.forget(c));
  }

  /**
   * Closes a waiting connection (of one client, when named): the longest-waiting that never
   * carried a request and sent part of one, else the longest-waiting one that never carried a
   * request, else the longest-idle kept-alive one. False when none waits.
   */
  private evictWaiting(client?: string): boolean {
    const tiers: [Set<Connection>, (c: Connection) => boolean][] = [
      // One that sent part of a request and stalls goes before one the daemon has not read yet,
      // whatever their ages: on a saturated loop a client's request can sit unread for long, and
      // cutting it would drop a real client while a flood's idle connection waits.
      [this.fresh, (c) => c.socket.bytesRead > 0],
      [this.fresh, () => true],
      [this.idle, () => true],
    ];
    for (const [set, eligible] of tiers) {
      for (const c of set) {
        if ((client !== undefined && c.client !== client) || !eligible(c)) continue;
        this.evicted++;
        // Its 'close' comes on a later tick: its place is counted free now.
        this.forget(c);
        // One between requests closes as after its keep-alive timeout; one whose request may
        // be on its way is told to retry (a websocket handshake cut silently reaches its client as
        // a bare 'socket hang up').
        if (set === this.idle) c.socket.destroy();
        else refuseOnSocket(c.socket, this.overloaded('the connection was closed for a newer one before it carried a request; send it again'));
        return true;
      }
    }
    return false;
  }

  private overloaded(message: string): ApiError {
    return Object.assign(new ServiceUnavailableError(message), { headers: { 'retry-after': '1' } });
  }

  private forget(c: Connection): void {
    if (!this.connections.delete(c.socket)) return;
    this.fresh.delete(c);
    this.idle.delete(c);
    const n = (this.perClient.get(c.client) ?? 1) - 1;
    if (n > 0) this.perClient.set(c.client, n);
    else this.perClient.delete(c.client);
  }

  private refuse(socket: Socket, err: ApiError): void {
    this.refused++;
    socket.on('error', () => socket.destroy());
    refuseOnSocket(socket, err);
  }
}

/** Names that always mean this machine: a DNS name pointing elsewhere (rebinding) is not one of them. */
function isLoopbackName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

/**
 * The Host header check against DNS rebinding: a page on a foreign name that resolves to
 * 127.0.0.1 must not reach the API. IP literals, localhost (and *.localhost), the host the daemon
 * listens on and the names in RBROWSE_ALLOWED_HOSTS (comma-separated; `*` turns the check off)
 * are served.
 */
export class HostCheck {
  private readonly names: Set<string>;
  private readonly any: boolean;

  constructor(configuredHost: string, env: NodeJS.ProcessEnv = process.env) {
    const extra = (env.RBROWSE_ALLOWED_HOSTS ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean);
    this.any = extra.includes('*');
    this.names = new Set([configuredHost.toLowerCase(), ...extra]);
  }

  allows(header: string | undefined): boolean {
    // HTTP/1.0 clients may send none; nothing names a foreign site then.
    if (this.any || header === undefined || header === '') return true;
    const host = hostnameOf(header);
    if (host === undefined) return false;
    return isIP(host) !== 0 || isLoopbackName(host) || this.names.has(host);
  }

  refusal(header: string | undefined): ApiError {
    return new ForbiddenError(
      `the Host ${JSON.stringify(header)} is not this daemon's: use 127.0.0.1 or localhost, or add the name to RBROWSE_ALLOWED_HOSTS`,
    );
  }
}

/** The name of a Host header without its port ([::1]:7331 -> ::1), lower-cased; undefined when malformed. */
function hostnameOf(header: string): string | undefined {
  const h = header.trim().toLowerCase();
  const m = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(h) ?? /^([a-z0-9.-]+)(?::\d{1,5})?$/.exec(h);
  return m?.[1]?.replace(/\.$/, '');
}
