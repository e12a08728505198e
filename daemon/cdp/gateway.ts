import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { request } from 'undici';
import WebSocket, { WebSocketServer, type RawData } from 'ws';
import type { SessionManager } from '../sessions/manager.js';
import type { LiveSession } from '../sessions/live-session.js';

export const CDP_PATH = '/browser/cdp';
/** Screenshots of large viewports are tens of MB of base64; ws's 100 MiB default is too tight for traces. */
const MAX_PAYLOAD = 512 * 1024 * 1024;

export interface GatewayDeps {
  sessions: SessionManager;
  log: (msg: string, extra?: object) => void;
}

/**
 * The only way into a session's Chromium: checks the jwt before a byte reaches the browser, then
 * relays websocket frames both ways. Each connection holds the session active while it is open.
 */
export class CdpGateway {
  // Frames are relayed, not read: validating their UTF-8 on the way through is wasted work.
  private readonly wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: MAX_PAYLOAD,
    skipUTF8Validation: true,
  });

  constructor(private readonly deps: GatewayDeps) {}

  /** Resolves a jwt to its running session, or throws 401/404. */
  sessionFor(jwt: string | undefined | null): Promise<LiveSession> {
    return this.deps.sessions.sessionForToken(jwt, 'cdp');
  }

  /** Chrome's /json/version, pointing webSocketDebuggerUrl at this gateway. */
  async version(jwt: string | undefined, publicWsUrl: string): Promise<Record<string, string>> {
    const session = await this.sessionFor(jwt);
    const res = await request(`${session.chromium.httpOrigin}/json/version`);
    const body = (await res.body.json()) as Record<string, string>;
    return { ...body, webSocketDebuggerUrl: `${publicWsUrl}${CDP_PATH}?jwt=${jwt}` };
  }

  /** The websocket upgrade of CDP_PATH: refused (throws) before any byte reaches Chromium unless the jwt holds. */
  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> {
    const session = await this.sessionFor(url.searchParams.get('jwt'));
    const upstream = new WebSocket(session.chromium.wsUrl, {
      perMessageDeflate: false,
      maxPayload: MAX_PAYLOAD,
      skipUTF8Validation: true,
    });
    await new Promise<void>((resolve, reject) => {
      upstream.once('open', resolve);
      upstream.once('error', reject);
    });
    if (socket.destroyed) {
      upstream.terminate();
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (client) => this.relay(session, client, upstream));
  }

  private relay(session: LiveSession, client: WebSocket, upstream: WebSocket): void {
    const release = session.hold('cdp', () => client.close(1001, 'browser session ended'));
    const closeBoth = () => {
      release();
      if (client.readyState !== WebSocket.CLOSED) client.terminate();
      if (upstream.readyState !== WebSocket.CLOSED) upstream.terminate();
    };
    client.on('message', (data: RawData, isBinary: boolean) => {
      if (!isBinary && interceptBrowserClose(data as Buffer, client)) return;
      if (upstream.readyState === WebSocket.OPEN) upstream.send(data, { binary: isBinary });
    });
    upstream.on('message', (data: RawData, isBinary: boolean) => {
      if (client.readyState === WebSocket.OPEN) client.send(data, { binary: isBinary });
    });
    client.on('close', closeBoth);
    upstream.on('close', closeBoth);
    client.on('error', closeBoth);
    upstream.on('error', closeBoth);
  }
}

/**
 * A client's Browser.close must not end the session (Kernel semantics): answer it as Chromium
 * would and drop only that client's connection. The substring test keeps JSON.parse off the hot path.
 */
function interceptBrowserClose(data: Buffer, client: WebSocket): boolean {
  if (data.length > 512 || !data.includes('"Browser.close"')) return false;
  let msg: { id?: number; method?: string; sessionId?: string };
  try {
    msg = JSON.parse(data.toString('utf8'));
  } catch {
    return false;
  }
  if (msg.method !== 'Browser.close') return false;
  client.send(JSON.stringify({ id: msg.id, result: {}, ...(msg.sessionId ? { sessionId: msg.sessionId } : {}) }), () =>
    client.close(1000, 'Browser.close ends this connection, not the session'),
  );
  return true;
}
