import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type { Duplex } from 'node:stream';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import WebSocket, { WebSocketServer, type RawData } from 'ws';
import { ServiceUnavailableError, UnauthorizedError } from '../../src/errors.js';
import type { LiveSession } from '../sessions/live-session.js';
import type { SessionManager } from '../sessions/manager.js';
import type { SessionTokens } from '../tokens.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { liveViewPage } from './page.js';
import { RfbPacer } from './rfb-pacer.js';

export const LIVE_PATH = '/browser/live';
export const LIVE_WS_PATH = `${LIVE_PATH}/ws`;
const NOVNC_PREFIX = `${LIVE_PATH}/novnc/`;
/** A slow viewer must not make the daemon buffer the screen without bound: past this, stop reading x11vnc. */
const HIGH_WATER = 8 * 1024 * 1024;

const novncRoot = () => dirname(dirname(createRequire(import.meta.url).resolve('@novnc/novnc')));

export interface LiveViewDeps {
  sessions: SessionManager;
  telemetry: Pick<Telemetry, 'record'>;
  tokens: SessionTokens;
}

/**
 * browser_live_view_url: the noVNC page, its status probe, and the websocket that bridges a
 * viewer to the session's x11vnc, inside its box. Each viewer holds the session active.
 */
export class LiveView {
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });

  constructor(private readonly deps: LiveViewDeps) {}

  /** The running headful session a live-view jwt names, or 401/404. */
  sessionFor(jwt: string | undefined | null): Promise<LiveSession> {
    return this.deps.sessions.sessionForToken(jwt, 'live');
  }

  async register(app: FastifyInstance): Promise<void> {
    // The viewer's scripts are a public library; a browser cannot send a Bearer header for them.
    app.addHook('onRoute', (route) => {
      if (route.url.startsWith(NOVNC_PREFIX)) route.config = { ...route.config, auth: 'none' };
    });
    await app.register(fastifyStatic, { root: novncRoot(), prefix: NOVNC_PREFIX, decorateReply: false, index: false });
    const jwtQuery = { querystring: { type: 'object', properties: { jwt: { type: 'string' }, readOnly: { type: 'string' } } } };
    app.get(LIVE_PATH, { config: { auth: 'session-jwt' }, schema: { ...jwtQuery, hide: true } }, async (req, reply) => {
      await this.sessionFor((req.query as { jwt?: string }).jwt);
      return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(liveViewPage(NOVNC_PREFIX));
    });
    app.get(`${LIVE_PATH}/status`, { config: { auth: 'session-jwt' }, schema: { ...jwtQuery, hide: true } }, async (req) => {
      const claims = await this.deps.tokens.verify((req.query as { jwt?: string }).jwt, 'live');
      if (!claims) throw new UnauthorizedError('missing or invalid jwt');
      return { state: this.deps.sessions.liveSession(claims.id) ? 'active' : 'ended' };
    });
  }

  /** The viewer's websocket: checked, then bridged byte for byte to x11vnc (RFB over binary frames). */
  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> {
    const session = await this.sessionFor(url.searchParams.get('jwt'));
    // Between an x11vnc exit and its restart there is nothing to bridge to; the viewer retries.
    const server = session.vncServer;
    if (!server) throw new ServiceUnavailableError('the live view is restarting');
    const vnc = await server.connect().catch(() => {
      throw new ServiceUnavailableError('the live view is restarting');
    });
    if (socket.destroyed) {
      vnc.destroy();
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (viewer) => this.bridge(session, viewer, vnc));
  }

  private bridge(session: LiveSession, viewer: WebSocket, vnc: Socket): void {
    const release = session.hold('viewer', () => viewer.close(1001, 'browser session ended'));
    // data.session_id names the viewer's connection, as Kernel's does.
    const connection = randomUUID();
    const opened = Date.now();
    const source = { kind: 'kernel_api' } as const;
    this.deps.telemetry.record(session.id, { type: 'live_view_connect', category: 'connection', source, data: { session_id: connection } });
    // The refresh rate caps the frames a viewer gets (a resize drops viewers, so it cannot change under one).
    const pacer = new RfbPacer(1000 / session.record.viewport.refresh_rate, (bytes) => vnc.write(bytes));
    let closed = false;
    const closeBoth = () => {
      if (!closed) {
        closed = true;
        this.deps.telemetry.record(session.id, {
          type: 'live_view_disconnect',
          category: 'connection',
          source,
          data: { session_id: connection, duration_ms: Date.now() - opened },
        });
      }
      release();
      pacer.close();
      vnc.destroy();
      if (viewer.readyState !== WebSocket.CLOSED) viewer.terminate();
    };
    let paused = false;
    vnc.on('data', (chunk: Buffer) => {
      viewer.send(chunk, { binary: true }, () => {
        if (paused && viewer.bufferedAmount < HIGH_WATER / 2) {
          paused = false;
          vnc.resume();
        }
      });
      if (viewer.bufferedAmount > HIGH_WATER) {
        paused = true;
        vnc.pause();
      }
    });
    viewer.on('message', (data: RawData) => pacer.push(data as Buffer));
    vnc.on('close', closeBoth);
    vnc.on('error', closeBoth);
    viewer.on('close', closeBoth);
    viewer.on('error', closeBoth);
  }
}
