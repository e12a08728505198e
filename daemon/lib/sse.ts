import { PassThrough, type Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';

export const HEARTBEAT_MS = 15_000;

/** One server-sent event: kernel-wire wants an `event` field in every JSON. */
export type StreamEvent = { event: string } & Record<string, unknown>;

/**
 * A text/event-stream body in kernel-wire's shape: only `data: <json>` blocks, heartbeats as
 * `sse_heartbeat` events (a comment-only keepalive breaks the Go SDK of the `kernel` CLI).
 * Return `open(reply)` from a route whose `produces` is text/event-stream; the stream closes when
 * `end()` is called (a terminal state) or the client goes away (`onClose`).
 */
export class EventStream {
  private readonly body = new PassThrough();
  private readonly heartbeat: NodeJS.Timeout;
  private readonly closeListeners: (() => void)[] = [];
  private ended = false;

  /**
   * `comments`: heartbeats are comment lines, for streams whose every data frame must be one of
   * their records (telemetry, as Kernel documents it), where an `sse_heartbeat` object would be
   * read as one.
   */
  constructor(opts: { heartbeatMs?: number; comments?: boolean } = {}) {
    this.heartbeat = setInterval(
      () => (opts.comments ? this.write(': keepalive\n\n') : this.send({ event: 'sse_heartbeat', timestamp: new Date().toISOString() })),
      opts.heartbeatMs ?? HEARTBEAT_MS,
    );
    this.heartbeat.unref();
    this.body.once('close', () => this.finish());
  }

  get closed(): boolean {
    return this.ended;
  }

  /**
   * A route's stream: `fill` subscribes it to what it follows; if that throws (a 404), the stream
   * is ended and the error answered instead, so no heartbeat timer is left behind.
   */
  static async serve(
    reply: FastifyReply,
    fill: (stream: EventStream) => void | Promise<void>,
    opts?: { heartbeatMs?: number; comments?: boolean },
  ): Promise<Readable> {
    const stream = new EventStream(opts);
    try {
      await fill(stream);
    } catch (err) {
      stream.end();
      throw err;
    }
    return stream.open(reply);
  }

  /** The body to return from the handler, with the headers that keep proxies from buffering it. */
  open(reply: FastifyReply): Readable {
    reply.header('cache-control', 'no-cache');
    reply.header('x-accel-buffering', 'no');
    // Node holds the response head back until the first body byte: a stream with nothing to say
    // yet (a quiet log, a watch) would leave its client waiting for the first heartbeat.
    reply.raw.once('pipe', () => reply.raw.flushHeaders());
    return this.body;
  }

  send(event: StreamEvent): void {
    this.write(`data: ${JSON.stringify(event)}\n\n`);
  }

  /** A record of a stream with ids (telemetry): `id:` lets a client resume with Last-Event-ID. JSON given as a string is sent as it is. */
  sendRecord(id: number, record: object | string): void {
    this.write(`id: ${id}\ndata: ${typeof record === 'string' ? record : JSON.stringify(record)}\n\n`);
  }

  private write(frame: string): void {
    if (!this.ended) this.body.write(frame);
  }

  /** Ends the stream (after a terminal event); the listeners run once. */
  end(): void {
    if (this.ended) return;
    this.body.end();
    this.finish();
  }

  /** Runs when the stream ends, by end() or because the client hung up. */
  onClose(listener: () => void): void {
    if (this.ended) listener();
    else this.closeListeners.push(listener);
  }

  private finish(): void {
    if (this.ended && this.closeListeners.length === 0) return;
    this.ended = true;
    clearInterval(this.heartbeat);
    for (const listener of this.closeListeners.splice(0)) listener();
  }
}
