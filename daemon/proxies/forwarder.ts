import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { Server } from 'proxy-chain';
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
 * A session's own HTTP proxy on 127.0.0.1, which Chromium is launched with (--proxy-server). It
 * sends each request direct or through the current upstream, adding the upstream's credentials
 * itself: Chromium never sees them and never shows an auth prompt, and the upstream can change
 * under a running browser.
 */
export class SessionForwarder {
  private upstream?: Upstream;
  private agents = newAgents();
  private readonly server: Server;

  private constructor() {
    this.server = new Server({
      host: '127.0.0.1',
      port: 0,
      prepareRequestFunction: ({ hostname }) => {
        const upstream = this.upstream && !this.upstream.bypasses(hostname) ? this.upstream : undefined;
        return { upstreamProxyUrl: upstream?.url ?? null, httpAgent: this.agents.http, httpsAgent: this.agents.https };
      },
    });
  }

  static async start(): Promise<SessionForwarder> {
    const forwarder = new SessionForwarder();
    await forwarder.server.listen();
    return forwarder;
  }

  /** The --proxy-server value; loopback hosts stay direct (Chromium's implicit bypass). */
  get proxyServer(): string {
    return `http://127.0.0.1:${this.server.port}`;
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
    await this.server.close(true);
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
