import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import * as ws from 'ws';
import { BadRequestError } from '../../../src/errors.js';
import { devToolsGet, type DevToolsEndpoint } from '../../browser/chromium.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { LiveSession } from '../../sessions/live-session.js';
import type { Telemetry } from '../../features/telemetry/telemetry.js';
import { ClientFrames } from '../../lib/websocket-client-frames.js';
import { MAX_CLIENT_MESSAGE, TOO_BIG, type OriginCheck, type WebsocketLimits } from '../websocket-limits.js';
import { CDP_PATH } from '../../sessions/gateway-paths.js';

/** ws's frame writer: exported by ws, untyped in @types/ws. */
interface WsFraming {
  Sender: { frame(data: Buffer, o: { fin: boolean; rsv1: boolean; opcode: number; mask: boolean; readOnly: boolean }): Buffer[] };
}
const { Sender } = ws as unknown as WsFraming;

/** How long a connection whose client sent Browser.close waits for the answer before it is cut anyway. */
const CLOSE_ANSWER_MS = 2000;
const OPCODES = { text: 0x1, close: 0x8 } as const;
/** The longest Browser.close command looked for (a command carries its id and maybe a sessionId). */
const BROWSER_CLOSE_MAX = 512;
/** Chromium's answer to any close frame: code 1000, no reason; then it hangs up. */
const CHROMIUM_CLOSE = Buffer.from([0x88, 0x02, 0x03, 0xe8]);
/** How long a refused connection waits for Chromium's close before it is cut anyway. */
const REFUSE_CLOSE_MS = 5000;

export interface GatewayDeps {
  sessions: SessionManager;
  telemetry: Pick<Telemetry, 'record'>;
  limits: WebsocketLimits;
  origins: OriginCheck;
  log: (msg: string, extra?: object) => void;
}

/**
 * The only way into a session's Chromium: checks the jwt before a byte reaches the browser, then
 * relays the connection. The client's own handshake is passed on to Chromium, whose answer goes
 * back unchanged, so the browser-to-client direction is a plain byte splice (no frame is parsed:
 * that is where the traffic is). The client-to-browser direction passes the client's own frames
 * on unchanged too, its frame headers read as they go by (lib/websocket-client-frames.ts), so a
 * client's Browser.close can end just that connection, never the session, a message past
 * Chromium's limit is refused before its bytes are, and the daemon holds no message: at most an
 * incomplete small command. Each connection holds the session active while it is open.
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
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    if (upstreamHead.length) socket.write(upstreamHead);
    try {
      this.relay(session, socket, upstream, head, admitted);
    } catch (err) {
      // Past the 101 an HTTP error answer would corrupt the stream: the connection just ends.
      admitted();
      socket.destroy();
      upstream.destroy();
      this.deps.log('cdp relay failed', { session: session.id, error: String(err), stack: (err as Error).stack });
    }
  }

  private relay(session: LiveSession, client: Duplex, upstream: Socket, head: Buffer, admitted: () => void): void {
    let closed = false;
    const opened = Date.now();
    let clientClosing = false;
    /** Set once the daemon refused the client (1009, 1002): the bytes that end the connection. */
    let refusal: ((tail: Buffer) => Buffer) | undefined;
    this.deps.telemetry.record(session.id, { type: 'cdp_connect', category: 'connection', source: { kind: 'kernel_api' } });
    const frames = new ClientFrames({ maxMessage: MAX_CLIENT_MESSAGE, inspectUpTo: BROWSER_CLOSE_MAX, inspect: browserClose });
    const closeBoth = (reason: 'client_close' | 'upstream_changed' | 'upstream_error' | 'context_cancelled' = 'client_close') => {
      if (closed) return;
      closed = true;
      release();
      admitted();
      client.destroy();
      upstream.destroy();
      this.deps.telemetry.record(session.id, {
        type: 'cdp_disconnect',
        category: 'connection',
        source: { kind: 'kernel_api' },
        // message_count: the client's messages (the browser's reach it spliced, unparsed).
        data: { duration_ms: Date.now() - opened, message_count: frames.messages, reason },
      });
    };
    // Cut by the daemon: the session ended, or its browser restarted in place.
    const release = session.hold('cdp', () => closeBoth(session.isStopping ? 'context_cancelled' : 'upstream_changed'));
    upstream.setNoDelay(true);
    (client as Socket).setNoDelay?.(true);
    upstream.pipe(client);

    const send = (data: Buffer, opcode: number) => {
      const frame = Sender.frame(data, { fin: true, rsv1: false, opcode, mask: true, readOnly: false });
      // Header and (masked in place) payload leave in one segment, without copying them together.
      upstream.cork();
      let flushed = true;
      for (const part of frame) flushed = upstream.write(part);
      upstream.uncork();
      if (!flushed) {
        client.pause();
        upstream.once('drain', () => client.resume());
      }
    };
    /**
     * Refuses the client (a message too big, a broken frame), between two of its frames:
     * the browser's side is closed with a close frame, and Chromium's answering close (always
     * 1000, then it hangs up) reaches the client carrying this code and reason instead. The
     * browser's frames before it pass unchanged; nothing more of the client's is passed on.
     */
    const refuse = (code: number, reason: string) => {
      if (closed || refusal) return;
      // The rest of what the client sends is read and dropped: closing with its bytes unread would
      // reset the connection, and the client would never see the close frame saying why.
      client.off('data', onData);
      client.on('data', () => {});
      client.resume();
      const close = Buffer.concat(
        Sender.frame(Buffer.concat([Buffer.from([code >> 8, code & 0xff]), Buffer.from(reason)]), {
          fin: true,
          rsv1: false,
          opcode: OPCODES.close,
          mask: false,
          readOnly: false,
        }),
      );
      refusal = (tail) => (tail.equals(CHROMIUM_CLOSE) ? close : tail);
      upstream.unpipe(client);
      let tail: Buffer = Buffer.alloc(0);
      upstream.on('data', (chunk: Buffer) => {
        const all = tail.length ? Buffer.concat([tail, chunk]) : chunk;
        if (all.length > CHROMIUM_CLOSE.length) client.write(all.subarray(0, all.length - CHROMIUM_CLOSE.length));
        tail = all.subarray(Math.max(0, all.length - CHROMIUM_CLOSE.length));
      });
      upstream.resume();
      upstream.once('end', () => {
        const last = refusal!(tail);
        tail = Buffer.alloc(0);
        // The client answers the close and hangs up (its 'close' ends both), or the timer below does.
        client.end(last);
      });
      send(Buffer.from([code >> 8, code & 0xff]), OPCODES.close);
      setTimeout(() => closeBoth('client_close'), REFUSE_CLOSE_MS).unref();
    };
    const onData = (chunk: Buffer) => {
      const { forward, stop } = frames.scan(chunk);
      if (forward.length && !upstream.write(forward)) {
        client.pause();
        upstream.once('drain', () => client.resume());
      }
      if (!stop) return;
      if (stop.kind === 'claimed') return this.endOnAnswer(stop.value, upstream, client, send, closeBoth);
      if (stop.kind === 'refuse') {
        return stop.code === TOO_BIG
          ? refuse(TOO_BIG, `a message of the client passed ${MAX_CLIENT_MESSAGE / 2 ** 20} MiB (Chromium's own limit)`)
          : refuse(1002, `malformed websocket frame: ${stop.reason}`);
      }
      // The client's close went to Chromium, whose answering close frame reaches the client through the splice.
      clientClosing = true;
      client.pause();
    };
    client.on('data', onData);
    if (head.length) onData(head);
    client.on('close', () => closeBoth());
    // The HTTP server's sockets allow half-open connections, so a client that only ends its side (a
    // process that exits without a close frame: the FIN its kernel sends) never fires 'close', and
    // Chromium kept its connection, with any auto-attach that pauses new targets for a debugger
    // that is gone. A websocket does not half-close: after its close frame Chromium's answer gets a
    // moment to pass, otherwise both end now.
    client.on('end', () => (clientClosing ? setTimeout(() => closeBoth(), CLOSE_ANSWER_MS).unref() : closeBoth()));
    upstream.on('close', () => {
      // A refusal ends the client itself, once its last bytes are written.
      if (refusal) return;
      closeBoth(session.isStopping ? 'context_cancelled' : clientClosing ? 'client_close' : 'upstream_error');
    });
    client.on('error', () => closeBoth());
    upstream.on('error', () => closeBoth('upstream_error'));
  }

  /**
   * A client's Browser.close must not end the session (Kernel semantics): Chromium answers it as a
   * harmless Browser.getVersion with the same id (so the answer arrives in order, through the
   * splice), and once it has passed, only this connection is closed.
   */
  private endOnAnswer(
    close: { id: number; sessionId?: string },
    upstream: Socket,
    client: Duplex,
    send: (data: Buffer, opcode: number) => void,
    closeBoth: () => void,
  ): void {
    client.pause();
    const marker = Buffer.from(`{"id":${close.id},`);
    const timer = setTimeout(closeBoth, CLOSE_ANSWER_MS);
    const watch = (chunk: Buffer) => {
      if (!chunk.includes(marker)) return;
      upstream.off('data', watch);
      clearTimeout(timer);
      // After this chunk is written: the answer has reached the client.
      client.end(() => closeBoth());
    };
    upstream.on('data', watch);
    send(
      Buffer.from(JSON.stringify({ id: close.id, method: 'Browser.getVersion', ...(close.sessionId ? { sessionId: close.sessionId } : {}) })),
      OPCODES.text,
    );
  }
}

/** A Buffer, not a string: Buffer.includes() encodes a string needle afresh on every call. */
const BROWSER_CLOSE_METHOD = Buffer.from('"Browser.close"');

/** The id (and session) of a Browser.close command; the substring test keeps JSON.parse off the hot path. */
function browserClose(data: Buffer): { id: number; sessionId?: string } | undefined {
  if (!data.includes(BROWSER_CLOSE_METHOD)) return undefined;
  try {
    const msg = JSON.parse(data.toString('utf8')) as { id?: unknown; method?: unknown; sessionId?: unknown };
    if (msg.method !== 'Browser.close' || typeof msg.id !== 'number') return undefined;
    return { id: msg.id, ...(typeof msg.sessionId === 'string' ? { sessionId: msg.sessionId } : {}) };
  } catch {
    return undefined;
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
