import { randomUUID } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { BadRequestError } from '../../../src/errors.js';
import { devToolsGet, type DevToolsEndpoint } from '../../browser/chromium.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { LiveSession } from '../../sessions/live-session.js';
import type { Telemetry } from '../../features/telemetry/telemetry.js';
import type { OriginCheck, WebsocketLimits } from '../websocket-limits.js';
import type { CdpRelay, HandOver } from './cdp-relay.js';
import { CDP_PATH } from '../../sessions/gateway-paths.js';

export interface GatewayDeps {
  sessions: SessionManager;
  telemetry: Pick<Telemetry, 'record' | 'excludes'>;
  limits: WebsocketLimits;
  origins: OriginCheck;
  relay: Pick<CdpRelay, 'hand'>;
  log: (msg: string, extra?: object) => void;
}

/**
 * The only way into a session's Chromium: checks the origin and the jwt before a byte reaches the
 * browser, opens Chromium's browser websocket with the client's own handshake (its answer goes
 * back unchanged), then hands both sockets to the relay process (cdp-relay.ts), which carries the
 * bytes. Each connection holds the session active while it is open, and ends with it.
 */
export class CdpGateway {
  constructor(private readonly deps: GatewayDeps) {}

  /** Resolves a jwt to its running session, or throws 401/404. */
  sessionFor(jwt: string | undefined | null): Promise<LiveSession> {
    return this.deps.sessions.sessionForToken(jwt, 'cdp');
  }

  /** Chrome's /json/version, pointing webSocketDebuggerUrl at this gateway. */
  async version(jwt: string | undefined, publicWsUrl: string): Promise<Record<string, string>> {
    const session = await this.sessionFor(jwt);
    const res = await devToolsGet(session.chromium, '/json/version');
    if (res.status !== 200) throw new Error(`Chromium's /json/version answered ${res.status}`);
    const body = JSON.parse(res.body.toString()) as Record<string, string>;
    return { ...body, webSocketDebuggerUrl: `${publicWsUrl}${CDP_PATH}?jwt=${jwt}` };
  }

  /** The websocket upgrade of CDP_PATH: refused (throws) before any byte reaches Chromium unless the origin and jwt hold. */
  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> {
    this.deps.origins.check(req.headers.origin);
    const session = await this.sessionFor(url.searchParams.get('jwt'));
    const key = req.headers['sec-websocket-key'];
    if (req.headers['sec-websocket-version'] !== '13' || typeof key !== 'string' || !/^[A-Za-z0-9+/]{22}==$/.test(key)) {
      throw new BadRequestError('not a websocket handshake (Sec-WebSocket-Key and Sec-WebSocket-Version: 13 are required)');
    }
    const admitted = this.deps.limits.admit(session.id);
    let upstream: Socket, accept: string, upstreamHead: Buffer;
    try {
      ({ upstream, accept, upstreamHead } = await openUpstream(session.chromium, key));
    } catch (err) {
      admitted();
      throw err;
    }
    if (socket.destroyed) {
      admitted();
      return void upstream.destroy();
    }
    this.relay(session, { client: socket as Socket, head, upstream, upstreamHead, accept }, admitted);
  }

  private relay(session: LiveSession, handOver: HandOver, admitted: () => void): void {
    const opened = Date.now();
    // Kernel's connection_id: ties a connection's cdp_connect, cdp_command and cdp_disconnect events together.
    const connection_id = randomUUID();
    const { telemetry } = this.deps;
    telemetry.record(session.id, { type: 'cdp_connect', category: 'connection', source: { kind: 'kernel_api' }, data: { connection_id } });
    let cut = () => {};
    let excluded = 0;
    // Cut by the daemon: the session ended, or its browser restarted in place.
    const release = session.hold('cdp', () => cut());
    cut = this.deps.relay.hand(
      handOver,
      (end, messages) => {
        release();
        admitted();
        const reason =
          end === 'client_close' ? end : session.isStopping ? 'context_cancelled' : end === 'cut' ? 'upstream_changed' : 'upstream_error';
        telemetry.record(session.id, {
          type: 'cdp_disconnect',
          category: 'connection',
          source: { kind: 'kernel_api' },
          // message_count: the client's messages (the browser's reach it spliced, unparsed).
          data: { connection_id, duration_ms: Date.now() - opened, message_count: messages, reason, telemetry_excluded: excluded },
        });
      },
      (data) => {
        // Excluded methods (telemetry.browser.control.cdp.excluded_methods) are relayed all the same, only counted.
        if (telemetry.excludes(session.id, data.method)) excluded++;
        else
          telemetry.record(session.id, {
            type: 'cdp_command',
            category: 'control',
            source: { kind: 'kernel_api' },
            data: { ...data, connection_id },
          });
      },
    );
  }
}

/**
 * Opens Chromium's browser websocket with the client's own key, so Chromium's accept value is the
 * client's, over a socket the session's box connected (its DevTools port is on the box's loopback).
 */
async function openUpstream(browser: DevToolsEndpoint, key: string): Promise<{ upstream: Socket; accept: string; upstreamHead: Buffer }> {
  const target = new URL(browser.wsUrl);
  const socket = await browser.connect();
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      createConnection: () => socket as Socket,
      headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Key': key, 'Sec-WebSocket-Version': '13' },
    });
    req.once('upgrade', (res, upstream, upstreamHead) => {
      const accept = res.headers['sec-websocket-accept'];
      if (typeof accept !== 'string') {
        upstream.destroy();
        return reject(new Error('Chromium answered the upgrade without Sec-WebSocket-Accept'));
      }
      resolve({ upstream, accept, upstreamHead });
    });
    req.once('response', (res) => {
      res.resume();
      reject(new Error(`Chromium refused the websocket: HTTP ${res.statusCode}`));
    });
    req.once('error', reject);
    req.end();
  });
}
