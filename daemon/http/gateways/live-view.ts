import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type { Duplex } from 'node:stream';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import WebSocket, { WebSocketServer, type RawData } from 'ws';
import { ServiceUnavailableError, UnauthorizedError } from '../../../src/errors.js';
import { MAX_VIEWER_MESSAGE, type OriginCheck, type WebsocketLimits } from '../websocket-limits.js';
import type { LiveSession } from '../../sessions/live-session.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { SessionTokens } from '../../sessions/tokens.js';
import type { Telemetry } from '../../features/telemetry/telemetry.js';
import { sleep } from '../../lib/procs.js';
import { liveViewPage, screencastPage } from './live-view-page.js';
import { RfbPacer } from './rfb-pacer.js';
import { Screencast } from './screencast.js';

export const LIVE_PATH = '/browser/live';
/** How long a viewer refused by ws may take to take its close frame before it is cut. */
const VIEWER_CLOSE_MS = 5000;
export const LIVE_WS_PATH = `${LIVE_PATH}/ws`;
const NOVNC_PREFIX = `${LIVE_PATH}/novnc/`;
/** A slow viewer must not make the daemon buffer the screen without bound: past this, stop reading x11vnc. */
const HIGH_WATER = 8 * 1024 * 1024;

const novncRoot = () => dirname(dirname(createRequire(import.meta.url).resolve('@novnc/novnc')));

export interface LiveViewDeps {
  sessions: SessionManager;
  telemetry: Pick<Telemetry, 'record'>;
  tokens: SessionTokens;
  limits: WebsocketLimits;
  origins: OriginCheck;
}

/**
 * Who may frame the viewer page (CSP frame-ancestors): the daemon's own pages and local apps by
 * default, so a foreign site cannot overlay it; RBROWSE_LIVE_FRAME_ANCESTORS (a CSP source list,
 * e.g. "'self' https://app.example.com") for people who embed it elsewhere.
 */
function frameAncestors(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.RBROWSE_LIVE_FRAME_ANCESTORS?.trim();
  return configured || "'self' http://localhost:* http://127.0.0.1:* http://[::1]:*";
}

/**
 * browser_live_view_url: the noVNC page, its status probe, and the websocket that bridges a
 * viewer to the session's x11vnc, inside its box; for a headless session (no display), the same
 * URL shows the page as CDP screencast frames and sends input back over CDP (screencast.ts).
 * Each viewer holds the session active.
 * `readOnly=true` is the server's to enforce: the page moves to the session's read-only jwt (so a
 * shared read-only link cannot be turned back into a controlling one), and a read-only viewer's
 * input never reaches x11vnc.
 */
export class LiveView {
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: MAX_VIEWER_MESSAGE });
  private readonly frameAncestors = frameAncestors();

  constructor(private readonly deps: LiveViewDeps) {}

  /** The running headful session a live-view jwt (or its read-only one) names, or 401/404. */
  async sessionFor(jwt: string | undefined | null): Promise<{ session: LiveSession; readOnly: boolean }> {
    const claims = (await this.deps.tokens.verify(jwt, 'view')) ? 'view' : 'live';
    return { session: await this.deps.sessions.sessionForToken(jwt, claims), readOnly: claims === 'view' };
  }

  async register(app: FastifyInstance): Promise<void> {
    // The viewer's scripts are a public library; a browser cannot send a Bearer header for them.
    app.addHook('onRoute', (route) => {
      if (route.url.startsWith(NOVNC_PREFIX)) route.config = { ...route.config, auth: 'none' };
    });
    await app.register(fastifyStatic, { root: novncRoot(), prefix: NOVNC_PREFIX, decorateReply: false, index: false });
    const jwtQuery = { querystring: { type: 'object', properties: { jwt: { type: 'string' }, readOnly: { type: 'string' } } } };
    app.get(LIVE_PATH, { config: { auth: 'session-jwt' }, schema: { ...jwtQuery, hide: true } }, async (req, reply) => {
      const query = req.query as { jwt?: string; readOnly?: string };
      const { session, readOnly } = await this.sessionFor(query.jwt);
      if (query.readOnly === 'true' && !readOnly) {
        // The read-only page runs on the read-only jwt only: the address bar no longer holds the controlling one.
        const next = new URLSearchParams(req.url.split('?')[1] ?? '');
        next.set('jwt', this.deps.sessions.view.viewToken(session.id)!);
        return reply.header('cache-control', 'no-store').redirect(`${LIVE_PATH}?${next}`, 303);
      }
      return reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('content-security-policy', `frame-ancestors ${this.frameAncestors}`)
        .header('referrer-policy', 'no-referrer')
        .send(session.display ? liveViewPage(NOVNC_PREFIX) : screencastPage());
    });
    app.get(`${LIVE_PATH}/status`, { config: { auth: 'session-jwt' }, schema: { ...jwtQuery, hide: true } }, async (req) => {
      const jwt = (req.query as { jwt?: string }).jwt;
      const claims = (await this.deps.tokens.verify(jwt, 'live')) ?? (await this.deps.tokens.verify(jwt, 'view'));
      if (!claims) throw new UnauthorizedError('missing or invalid jwt');
      return { state: this.deps.sessions.liveSession(claims.id) ? 'active' : 'ended' };
    });
  }

  /** The viewer's websocket: checked, then bridged byte for byte to x11vnc (RFB over binary frames). */
  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> {
    // The viewer page is the daemon's own: its websocket comes from the same origin.
    this.deps.origins.check(req.headers.origin, { host: req.headers.host, sameOrigin: true });
    const { session, readOnly: viewToken } = await this.sessionFor(url.searchParams.get('jwt'));
    const readOnly = viewToken || url.searchParams.get('readOnly') === 'true';
    if (!session.display) return this.screencast(req, socket, head, session, readOnly);
    // Between an x11vnc exit and its restart there is nothing to bridge to; the viewer retries.
    const server = session.vncServer;
    if (!server) throw new ServiceUnavailableError('the live view is restarting');
    const vnc = await connectWithRetry(server).catch(() => {
      throw new ServiceUnavailableError('the live view is restarting');
    });
    let admitted: () => void;
    try {
      admitted = this.deps.limits.admit(session.id);
    } catch (err) {
      vnc.destroy();
      throw err;
    }
    if (socket.destroyed) {
      admitted();
      vnc.destroy();
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (viewer) => this.bridge(session, viewer, vnc, readOnly, admitted));
  }

  /** A headless session's viewer: the page as screencast frames, input back over CDP. */
  private screencast(req: IncomingMessage, socket: Duplex, head: Buffer, session: LiveSession, readOnly: boolean): void {
    const admitted = this.deps.limits.admit(session.id);
    if (socket.destroyed) return admitted();
    this.wss.handleUpgrade(req, socket, head, (viewer) => {
      const leave = this.viewing(session, viewer, admitted);
      let cast: Screencast | undefined;
      let gone = false;
      const end = () => {
        if (gone) return;
        gone = true;
        cast?.close();
        leave();
      };
      viewer.on('close', end);
      viewer.on('error', () => {
        end();
        setTimeout(() => viewer.terminate(), VIEWER_CLOSE_MS).unref();
      });
      Screencast.start(session, viewer, readOnly).then(
        (started) => {
          cast = started;
          if (gone) started.close();
        },
        () => {
          // The browser is restarting or going: the page reconnects, or learns the session ended.
          end();
          viewer.close(1011, 'the live view could not start');
        },
      );
    });
  }

  /** A viewer has connected: it holds the session and is told when it ends; the returned function says it left. */
  private viewing(session: LiveSession, viewer: WebSocket, admitted: () => void): () => void {
    const hold = session.hold('viewer', () => viewer.close(1001, 'browser session ended'));
    // data.session_id names the viewer's connection, as Kernel's does.
    const connection = randomUUID();
    const opened = Date.now();
    const source = { kind: 'kernel_api' } as const;
    this.deps.telemetry.record(session.id, { type: 'live_view_connect', category: 'connection', source, data: { session_id: connection } });
    return () => {
      this.deps.telemetry.record(session.id, {
        type: 'live_view_disconnect',
        category: 'connection',
        source,
        data: { session_id: connection, duration_ms: Date.now() - opened },
      });
      hold();
      admitted();
    };
  }

  private bridge(session: LiveSession, viewer: WebSocket, vnc: Socket, readOnly: boolean, admitted: () => void): void {
    const release = this.viewing(session, viewer, admitted);
    // The refresh rate caps the frames a viewer gets (a resize drops viewers, so it cannot change under one).
    const pacer = new RfbPacer(1000 / session.record.viewport.refresh_rate, (bytes) => vnc.write(bytes), {
      readOnly,
      // A read-only viewer whose messages cannot be read one by one is not let through unfiltered.
      unreadable: () => closeBoth(),
    });
    let closed = false;
    /** `hard`: the viewer is cut at once; else ws finishes the close it began (its code says why). */
    const closeBoth = (hard = true) => {
      // Once: the vnc socket's own close, which follows, must not cut a viewer left to finish.
      if (closed) return;
      closed = true;
      release();
      pacer.close();
      vnc.destroy();
      if (viewer.readyState === WebSocket.CLOSED) return;
      if (hard) viewer.terminate();
      else setTimeout(() => viewer.terminate(), VIEWER_CLOSE_MS).unref();
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
    vnc.on('close', () => closeBoth());
    vnc.on('error', () => closeBoth());
    viewer.on('close', () => closeBoth());
    // ws has begun closing with the code that says why (1009 for a message too big) and reads
    // the rest of the viewer's bytes meanwhile: cutting it now would lose that close frame.
    viewer.on('error', () => closeBoth(false));
  }
}

/**
 * x11vnc accepts on its Unix socket from one thread: on a loaded machine a connect can fail while
 * it is busy. A few tries a moment apart before a 503 (the viewer page would retry; a raw client
 * would not).
 */
async function connectWithRetry(server: { connect(): Promise<Socket> }, tries = 4): Promise<Socket> {
  for (let i = 1; ; i++) {
    try {
      return await server.connect();
    } catch (err) {
      if (i >= tries) throw err;
      await sleep(250 * i);
    }
  }
}
