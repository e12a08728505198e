import http from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import { Server } from 'proxy-chain';
import type { Box } from '../../box/box.js';
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

  private constructor() {
    this.server = new Server({
      prepareRequestFunction: ({ hostname }) => {
        const upstream = this.upstream && !this.upstream.bypasses(hostname) ? this.upstream : undefined;
        return { upstreamProxyUrl: upstream?.url ?? null, httpAgent: this.agents.http, httpsAgent: this.agents.https };
      },
    });
  }

  static async start(box: Box): Promise<SessionForwarder> {
    const forwarder = new SessionForwarder();
    // proxy-chain's own http.Server serves it: connections are emitted to it, it never listens.
    forwarder.listener = await box.listen(0, (socket: Socket) => forwarder.server.server.emit('connection', socket));
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
