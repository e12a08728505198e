import http from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import { RequestError, Server } from 'proxy-chain';
import type { Box } from '../../box/box.js';
import { hostConnectionCapsFromEnv } from '../../box/host-ports.js';
import { guardedLookup, refusedAddress, type ReachPolicy } from '../../lib/reach.js';
import type { Upstream } from './upstream.js';

/**
 * Sockets to targets and upstreams, kept alive between requests; replaced whenever the route
 * changes. TLS is only ever spoken to an upstream of protocol https (Chromium tunnels its own), and
 * its certificate must match the upstream's name: without `servername`, Node would check it
 * against the Host header, which names the target.
 */
function newAgents(upstream?: Upstream) {
  const servername = upstream && (isIP(upstream.host) ? '' : upstream.host);
  return {
    http: new http.Agent({ keepAlive: true }),
    https: new https.Agent({ keepAlive: true, ...(servername !== undefined ? { servername } : {}) }),
  };
}

/**
 * A session's own HTTP proxy, which Chromium is launched with (--proxy-server). It listens on the
 * loopback of the session's box, and nowhere else: the box's agent hands each connection to the
 * daemon, where this forwarder sends each request direct or through the current upstream, adding
 * the upstream's credentials itself. Chromium never sees them and never shows an auth prompt, no
 * other session or local user can use them, and the upstream can change under a running browser.
 */
export class SessionForwarder {
  private upstream?: Upstream;
  private agents = newAgents();
  private readonly server: Server;
  private listener?: { port: number; close(): void };

  private constructor(policy: ReachPolicy) {
    // It connects on the host's network for the session: only where the session itself may reach
    // (no host loopback when it is closed to sessions, never link-local or metadata addresses),
    // each name resolved once and connected to as checked.
    // proxy-chain types it as dns.lookup itself; it only ever calls it, as net.connect does.
    const lookup = guardedLookup(policy) as unknown as typeof import('node:dns').lookup;
    this.server = new Server({
      prepareRequestFunction: ({ hostname }) => {
        const upstream = this.upstream && !this.upstream.bypasses(hostname) ? this.upstream : undefined;
        // An address is connected to without a lookup: checked here, as a name is in the lookup.
        const target = upstream ? (upstream.trusted ? undefined : upstream.host) : hostname;
        const bare = target?.replace(/^\[(.*)\]$/, '$1');
        const refused = bare && isIP(bare) ? refusedAddress(bare, policy) : undefined;
        // proxy-chain tells its own errors by their name, which bundling may have changed.
        if (refused) throw Object.assign(new RequestError(`rbrowse: ${refused}`, 403), { name: 'RequestError' });
        return {
          upstreamProxyUrl: upstream?.url ?? null,
          httpAgent: this.agents.http,
          httpsAgent: this.agents.https,
          ...(upstream?.trusted ? {} : { dnsLookup: lookup }),
        };
      },
    });
  }

  static async start(box: Box, policy: ReachPolicy, maxConnections = hostConnectionCapsFromEnv().perBox): Promise<SessionForwarder> {
    const forwarder = new SessionForwarder(policy);
    let open = 0;
    // proxy-chain's own http.Server serves it: connections are emitted to it, it never listens.
    // Each holds descriptors of the daemon's: a session has its share of them, no more.
    forwarder.listener = await box.listen(0, (socket: Socket) => {
      if (open >= maxConnections) return void socket.destroy();
      open++;
      socket.once('close', () => open--);
      forwarder.server.server.emit('connection', socket);
    });
    return forwarder;
  }

  /** The --proxy-server value; loopback hosts stay direct (Chromium's implicit bypass), reaching the host's through the box. */
  get proxyServer(): string {
    return `http://127.0.0.1:${this.listener!.port}`;
  }

  get routedThroughUpstream(): boolean {
    return this.upstream !== undefined;
  }

  /**
   * Routes every new request through `upstream` (undefined: direct). Open connections are closed,
   * so neither Chromium's kept-alive sockets and tunnels nor ours keep using the old route.
   */
  route(upstream: Upstream | undefined): void {
    this.upstream = upstream;
    const old = this.agents;
    this.agents = newAgents(upstream);
    this.server.closeConnections();
    old.http.destroy();
    old.https.destroy();
  }

  async close(): Promise<void> {
    this.listener?.close();
    this.server.closeConnections();
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
