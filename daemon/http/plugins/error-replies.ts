import type { Duplex } from 'node:stream';
import fp from 'fastify-plugin';
import { ApiError, BadRequestError, NotFoundError } from '../../../src/errors.js';
import { toErrorReply } from '../errors.js';
import { refuseOnSocket } from '../upgrades.js';

/** A refused body up to this size is read and dropped, so its sender gets the answer. */
const DRAIN_REFUSED_BODY_MAX = 64 * 1024 * 1024;

/** Every error as kernel-wire's error body, in one place (daemon/http/errors.ts maps the types). */
export const errorReplies = fp<{ log: (msg: string, extra?: object) => void }>(async (app, deps) => {
  app.setErrorHandler((err, req, reply) => {
    const { status, body, retry, headers } = toErrorReply(err);
    if (status >= 500) deps.log('request failed', { method: req.method, url: req.url, error: String(err), stack: (err as Error).stack });
    if (!retry) reply.header('x-should-retry', 'false');
    if (headers) reply.headers(headers);
    // Fastify refuses a body too large by its length before reading it, and closes the connection:
    // the client, still sending, would see a broken pipe instead of the 413. A body of a size worth
    // reading is read to its end and dropped instead, and the connection kept.
    if (status === 413 && Number(req.headers['content-length']) <= DRAIN_REFUSED_BODY_MAX) reply.removeHeader('connection');
    void reply.code(status).type('application/json').send(body);
  });
  app.setNotFoundHandler(async (req) => {
    throw new NotFoundError(`no route ${req.method} ${req.url.split('?')[0]}`);
  });
});

/**
 * A request Node's HTTP parser refused before any route saw it (headers too large, a malformed
 * request line): answered with kernel-wire's error body, then the connection closes.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable) return void socket.destroy();
  const refusal =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new ApiError(431, 'request_header_fields_too_large', 'the request line and headers exceed 16 KiB')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new ApiError(408, 'request_timeout', 'the request did not arrive in time')
        : new BadRequestError(`malformed HTTP request (${err.code ?? 'parse error'})`);
  refuseOnSocket(socket, refusal);
}
