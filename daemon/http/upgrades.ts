import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError, NotFoundError } from '../../src/errors.js';

export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer, url: URL) => Promise<void>;

/** How long a refused client may take to read its answer before its connection is cut. */
const REFUSED_LINGER_MS = 1000;

/**
 * Answers on a raw socket (a refused websocket upgrade, a request the HTTP parser refused) with
 * the kernel-wire error body, then closes.
 */
export function refuseOnSocket(socket: Duplex, err: ApiError): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(err.toBody());
  // An overload (429, 503) may be retried; anything else is the request's own fault.
  const retry = err.status === 429 || err.status === 503;
  const extra = Object.entries(err.headers ?? {})
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? 'Error'}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n${retry ? '' : 'x-should-retry: false\r\n'}${extra}Connection: close\r\n\r\n${body}`,
  );
  // end() waits for the client to close its side: one that never does (a flood's) would keep the
  // descriptor. It has a moment to read the answer.
  setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
}

/**
 * The HTTP server has one 'upgrade' event; this sends each websocket path to its owner (CDP
 * gateway, live view) and refuses everything else with a kernel-wire error.
 */
export class UpgradeRouter {
  private readonly routes = new Map<string, UpgradeHandler>();

  constructor(
    private readonly log: (msg: string, extra?: object) => void,
    private readonly hosts: { allows(header: string | undefined): boolean; refusal(header: string | undefined): ApiError },
  ) {}

  add(path: string, handler: UpgradeHandler): this {
    this.routes.set(path, handler);
    return this;
  }

  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      // Answered already: the connection guard refused it, or cut it for a newcomer (front-door.ts).
      if (socket.writableEnded || socket.destroyed) return;
      socket.on('error', () => socket.destroy());
      const url = new URL(req.url ?? '/', 'http://localhost');
      const handler = this.routes.get(url.pathname.replace(/\/+$/, ''));
      const run = !this.hosts.allows(req.headers.host)
        ? Promise.reject(this.hosts.refusal(req.headers.host))
        : handler
          ? handler(req, socket, head, url)
          : Promise.reject(new NotFoundError(`no websocket endpoint at ${url.pathname}`));
      run.catch((err) => {
        if (!(err instanceof ApiError)) this.log('websocket upgrade failed', { path: url.pathname, error: String(err) });
        refuseOnSocket(socket, err instanceof ApiError ? err : new ApiError(502, 'bad_gateway', 'browser unreachable'));
      });
    });
  }
}
