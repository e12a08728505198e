import { ForbiddenError, RateLimitError } from '../../src/errors.js';

/**
 * The largest message a client may send over CDP or BiDi: Chromium's own DevTools server drops a
 * connection whose message passes 100 MB, so nothing larger could ever have worked.
 */
export const MAX_CLIENT_MESSAGE = 100 * 1024 * 1024;
/** A live viewer sends keys, pointer moves and clipboard text: small messages only. */
export const MAX_VIEWER_MESSAGE = 1024 * 1024;
/** ws's own caps on a message's pieces (its server's defaults): many tiny frames cost more than their bytes. */
export const RECEIVER_CAPS = { maxBufferedChunks: 256 * 1024, maxFragments: 16 * 1024 };
/** The close code of a message too big to take (RFC 6455 section 7.4.1). */
export const TOO_BIG = 1009;

export interface WebsocketLimitsConfig {
  /** Websockets of one session at once (CDP, BiDi and live viewers together). */
  perSession: number;
  /** Websockets at once in all. */
  total: number;
  /** Bytes of unfinished client messages the daemon holds for all websockets together. */
  bufferBytes: number;
}

const positive = (value: string | undefined, fallback: number): number => {
  const n = Number(value);
  return value !== undefined && value !== '' && Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback;
};

export function websocketLimitsFromEnv(maxConnections: number, env: NodeJS.ProcessEnv = process.env): WebsocketLimitsConfig {
  return {
    perSession: positive(env.RBROWSE_SESSION_WEBSOCKETS, 64),
    // Each websocket holds a second descriptor (its way into the box): half the connections.
    total: positive(env.RBROWSE_MAX_WEBSOCKETS, Math.max(16, Math.floor(maxConnections / 2))),
    bufferBytes: positive(env.RBROWSE_WEBSOCKET_BUFFER_BYTES, 256 * 1024 * 1024),
  };
}

/** ws's Receiver, as far as what it holds of the message in progress goes (fields of ws 8; test/websocket-limits.test.ts checks they exist). */
interface ReceiverState {
  _totalPayloadLength: number;
  _bufferedBytes: number;
}

/**
 * The websockets of every gateway together: how many each session and the daemon have open, and
 * the bytes of client messages not yet complete (BiDi and the live view hold a message whole
 * before it is passed on; the CDP gateway's relay, a process of its own, keeps a budget of the
 * same size for the long text messages it holds). A connection that would pass the budget is
 * refused with 1009, whatever its own message's size.
 */
export class WebsocketLimits {
  private readonly open = new Map<string, number>();
  private total = 0;
  private held = 0;

  constructor(readonly config: WebsocketLimitsConfig) {}

  /** Counts a websocket of the session from now on: the returned release ends it. Throws 429 past a cap. */
  admit(sessionId: string): () => void {
    const mine = this.open.get(sessionId) ?? 0;
    if (mine >= this.config.perSession) {
      throw new RateLimitError(`the session has ${this.config.perSession} websockets open (RBROWSE_SESSION_WEBSOCKETS); close one first`, 1);
    }
    if (this.total >= this.config.total) {
      throw new RateLimitError(`the daemon has ${this.config.total} websockets open (RBROWSE_MAX_WEBSOCKETS); try again shortly`, 1);
    }
    this.open.set(sessionId, mine + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const n = (this.open.get(sessionId) ?? 1) - 1;
      if (n > 0) this.open.set(sessionId, n);
      else this.open.delete(sessionId);
    };
  }

  /**
   * Follows what one connection's receiver holds (call after each chunk it took). It counts a
   * frame's declared length as soon as its header arrives, so a huge message is refused before
   * its bytes are. Returns false when the daemon would hold more than its budget: refuse the
   * connection (1009), then call release().
   */
  tracker(receiver: unknown): { update(): boolean; release(): void } {
    const state = receiver as ReceiverState;
    let mine = 0;
    return {
      update: () => {
        const now = Math.max(state._totalPayloadLength || 0, state._bufferedBytes || 0);
        this.held += now - mine;
        mine = now;
        return this.held <= this.config.bufferBytes;
      },
      release: () => {
        this.held -= mine;
        mine = 0;
      },
    };
  }

  stats(): { websockets: number; held_bytes: number } {
    return { websockets: this.total, held_bytes: this.held };
  }
}

/**
 * The Origin check of Chromium's DevTools server (--remote-allow-origins): a websocket from a web
 * page carries an Origin and is refused unless that origin was allowed (RBROWSE_REMOTE_ALLOW_ORIGINS,
 * comma-separated, `*` for any); clients outside a browser send none and pass.
 */
export class OriginCheck {
  private readonly allowed: Set<string>;
  private readonly any: boolean;

  constructor(env: NodeJS.ProcessEnv = process.env) {
    const list = (env.RBROWSE_REMOTE_ALLOW_ORIGINS ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase().replace(/\/+$/, ''))
      .filter(Boolean);
    this.any = list.includes('*');
    this.allowed = new Set(list);
  }

  /** Throws 403 when a gateway must not take this connection. `sameOrigin`: the daemon's own pages (the live view) pass. */
  check(origin: string | undefined, opts: { host?: string; sameOrigin?: boolean } = {}): void {
    if (origin === undefined || this.any) return;
    const o = origin.trim().toLowerCase();
    if (this.allowed.has(o)) return;
    if (opts.sameOrigin && opts.host && (o === `http://${opts.host.toLowerCase()}` || o === `https://${opts.host.toLowerCase()}`)) return;
    throw new ForbiddenError(
      `Rejected an incoming WebSocket connection from the ${origin} origin. Set RBROWSE_REMOTE_ALLOW_ORIGINS=${origin} to allow connections from this origin, or RBROWSE_REMOTE_ALLOW_ORIGINS=* to allow all origins.`,
    );
  }
}
