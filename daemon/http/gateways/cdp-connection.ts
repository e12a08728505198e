import type { Socket } from 'node:net';
import * as ws from 'ws';
import { ClientFrames, HOLD_REFUSED, type HoldBudget } from '../../lib/websocket-client-frames.js';
import { MAX_CLIENT_MESSAGE, TOO_BIG } from '../websocket-limits.js';
import { closingCommand } from './browser-close.js';
import { type CdpCommandData, controlMethod, describeCommand } from './cdp-commands.js';

/** ws's frame writer: exported by ws, untyped in @types/ws. */
interface WsFraming {
  Sender: { frame(data: Buffer, o: { fin: boolean; rsv1: boolean; opcode: number; mask: boolean; readOnly: boolean }): Buffer[] };
}
const { Sender } = ws as unknown as WsFraming;

/** How long a connection whose client sent Browser.close waits for the answer before it is cut anyway. */
const CLOSE_ANSWER_MS = 2000;
const OPCODES = { text: 0x1, close: 0x8 } as const;
/** The close code of a command the gateway does not let through (RFC 6455 section 7.4.1). */
const POLICY = 1008;
/** Text messages up to this size in one frame (nearly every command) are looked at without being held. */
const INSPECT_IN_PLACE = 4096;
/** Chromium's answer to any close frame: code 1000, no reason; then it hangs up. */
const CHROMIUM_CLOSE = Buffer.from([0x88, 0x02, 0x03, 0xe8]);
/** How long a refused connection waits for Chromium's close before it is cut anyway. */
const REFUSE_CLOSE_MS = 5000;

/** How a relayed connection ended: its client left, the browser's side broke, or the daemon cut it. */
export type CdpConnectionEnd = 'client_close' | 'upstream_error' | 'cut';

export interface CdpConnection {
  /** Ends both sides now (the session ended, or its browser restarted in place). */
  cut(): void;
}

/**
 * Relays one CDP websocket whose handshake both sides have done: `client` (after `head`, what the
 * client sent past its handshake) to `upstream` (Chromium's browser endpoint). The browser's
 * frames go to the client as a plain byte splice (no frame is parsed: that is where the traffic
 * is). The client's own frames pass on unchanged too, their headers read as they go by
 * (lib/websocket-client-frames.ts), so a client's Browser.close (or Browser.crash), however it is
 * framed, padded, escaped or wrapped, ends just this connection, never the session
 * (browser-close.ts), and a message past Chromium's limit is refused (1009) before its bytes are.
 * A text message longer than `INSPECT_IN_PLACE` or in fragments is held until it is whole, within
 * `hold`, the relay's budget. `closed` is told once, with the client's message count;
 * `command`, of each browser-control command the client sends (cdp-commands.ts).
 */
export function relayCdp(
  client: Socket,
  upstream: Socket,
  head: Buffer,
  hold: HoldBudget,
  closed: (end: CdpConnectionEnd, messages: number) => void,
  command?: (data: CdpCommandData) => void,
): CdpConnection {
  let done = false;
  let clientClosing = false;
  /** Set once the client was refused (1009, 1002): the bytes that end the connection. */
  let refusal: ((tail: Buffer) => Buffer) | undefined;
  // The text may be a scratch buffer the next message overwrites: it is read here and now.
  const inspect = command
    ? (text: Buffer) => {
        const method = controlMethod(text);
        const data = method && describeCommand(text, method);
        if (data) command(data);
        return closingCommand(text);
      }
    : closingCommand;
  const frames = new ClientFrames({ maxMessage: MAX_CLIENT_MESSAGE, inspectUpTo: INSPECT_IN_PLACE, inspect, hold });
  const closeBoth = (end: CdpConnectionEnd = 'client_close') => {
    if (done) return;
    done = true;
    frames.release();
    client.destroy();
    upstream.destroy();
    closed(end, frames.messages);
  };
  upstream.setNoDelay(true);
  client.setNoDelay(true);
  upstream.pipe(client);

  /** Writes what the scan passed on in one segment where it can; false when the socket is full. */
  const writeAll = (pieces: Buffer[]): boolean => {
    if (pieces.length === 1) return upstream.write(pieces[0]!);
    upstream.cork();
    let flushed = true;
    for (const piece of pieces) flushed = upstream.write(piece);
    upstream.uncork();
    return flushed;
  };
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
   * Refuses the client (a message too big, a broken frame), between two of its frames: the
   * browser's side is closed with a close frame, and Chromium's answering close (always 1000, then
   * it hangs up) reaches the client carrying this code and reason instead. The browser's frames
   * before it pass unchanged; nothing more of the client's is passed on.
   */
  const refuse = (code: number, reason: string) => {
    if (done || refusal) return;
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
  /**
   * A client's Browser.close must not end the session (Kernel semantics): Chromium answers it as a
   * harmless Browser.getVersion with the same id (so the answer arrives in order, through the
   * splice), and once it has passed, only this connection is closed.
   */
  const endOnAnswer = (close: { id: number; sessionId?: string }) => {
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
  };
  const onData = (chunk: Buffer) => {
    const { forward, stop } = frames.scan(chunk);
    if (forward.length && !writeAll(forward)) {
      client.pause();
      upstream.once('drain', () => client.resume());
    }
    if (!stop) return;
    if (stop.kind === 'claimed') {
      if (stop.value.kind === 'flat') return endOnAnswer(stop.value);
      return refuse(POLICY, 'Browser.close and Browser.crash end only this connection, never the session');
    }
    if (stop.kind === 'refuse') {
      if (stop.code !== TOO_BIG) return refuse(1002, `malformed websocket frame: ${stop.reason}`);
      return refuse(
        TOO_BIG,
        stop.reason === HOLD_REFUSED.reason
          ? stop.reason
          : `a message of the client passed ${MAX_CLIENT_MESSAGE / 2 ** 20} MiB (Chromium's own limit)`,
      );
    }
    // The client's close went to Chromium, whose answering close frame reaches the client through the splice.
    clientClosing = true;
    client.pause();
  };
  client.on('data', onData);
  if (head.length) onData(head);
  client.on('close', () => closeBoth());
  // The daemon's sockets allow half-open connections, so a client that only ends its side (a
  // process that exits without a close frame: the FIN its kernel sends) never fires 'close', and
  // Chromium kept its connection, with any auto-attach that pauses new targets for a debugger
  // that is gone. A websocket does not half-close: after its close frame Chromium's answer gets a
  // moment to pass, otherwise both end now.
  client.on('end', () => (clientClosing ? setTimeout(() => closeBoth(), CLOSE_ANSWER_MS).unref() : closeBoth()));
  upstream.on('close', () => {
    // A refusal ends the client itself, once its last bytes are written.
    if (refusal) return;
    closeBoth(clientClosing ? 'client_close' : 'upstream_error');
  });
  client.on('error', () => closeBoth());
  upstream.on('error', () => closeBoth('upstream_error'));
  return { cut: () => closeBoth('cut') };
}
