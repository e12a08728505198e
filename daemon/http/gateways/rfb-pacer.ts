/**
 * Paces a live-view viewer to the session's refresh rate by holding back its incremental
 * FramebufferUpdateRequests: an RFB server sends one update per request, and noVNC asks again
 * as soon as it has drawn the last one, so the interval between forwarded requests bounds the
 * frames a viewer gets. x11vnc itself then runs with short poll intervals and answers within a
 * refresh interval, which is what lets the rate reach the cap rather than half of it.
 *
 * Only the client-to-server direction is read, message by message (RFB 3.3/3.7/3.8, RFC 6143
 * section 7.5). Anything this parser does not know switches it to pass-through for the rest of
 * the connection: a viewer is never broken, it is merely no longer paced. A read-only viewer's
 * input (keys, pointer, clipboard, screen size) is dropped here, whatever its page claims; one
 * whose messages cannot be read is cut off instead of passed through.
 */

const FBUR = 3;
/** What a read-only viewer may not send: KeyEvent, PointerEvent, ClientCutText, QEMU's key event, SetDesktopSize. */
const INPUT = new Set([4, 5, 6, 248, 251]);

/** Fixed sizes of client messages by type; undefined sizes are computed from the header. */
const FIXED: Record<number, number> = {
  0: 20, // SetPixelFormat
  3: 10, // FramebufferUpdateRequest
  4: 8, // KeyEvent
  5: 6, // PointerEvent
  150: 10, // EnableContinuousUpdates
  250: 4, // xvp
};

/** The byte length of the client message at the start of `buf`, or 0 when more bytes are needed, or -1 when unknown. */
export function clientMessageLength(buf: Buffer): number {
  if (buf.length < 1) return 0;
  const type = buf[0]!;
  const fixed = FIXED[type];
  if (fixed !== undefined) return buf.length >= fixed ? fixed : 0;
  switch (type) {
    case 2: // SetEncodings: u8 type, u8 pad, u16 count, count * s32
      return buf.length < 4 ? 0 : need(buf, 4 + 4 * buf.readUInt16BE(2));
    case 6: {
      // ClientCutText: u8 type, 3 pad, s32 length (negative: extended clipboard, |length| bytes)
      if (buf.length < 8) return 0;
      return need(buf, 8 + Math.abs(buf.readInt32BE(4)));
    }
    case 251: // SetDesktopSize: u8 type, pad, u16 w, u16 h, u8 screens, pad, screens * 16
      return buf.length < 8 ? 0 : need(buf, 8 + 16 * buf[6]!);
    case 248: // QEMU client message: subtype 0 is the extended key event (12 bytes)
      if (buf.length < 2) return 0;
      return buf[1] === 0 ? need(buf, 12) : -1;
    default:
      return -1;
  }
}

function need(buf: Buffer, length: number): number {
  return buf.length >= length ? length : 0;
}

type Phase = 'version' | 'security' | 'init' | 'messages' | 'passthrough' | 'refused';

export class RfbPacer {
  private phase: Phase = 'version';
  private pending: Buffer = Buffer.alloc(0);
  private heldRequest?: Buffer;
  private timer?: NodeJS.Timeout;
  /** When the next incremental request may go. It advances by one interval per request, from at
   * most one interval back, so a frame that came late may be followed by a quicker one (the average
   * keeps to the rate) but no more than one: over any second at most rate + 1 updates. */
  private nextDueAt = Number.NEGATIVE_INFINITY;

  /**
   * @param intervalMs least time between two forwarded incremental update requests
   * @param forward writes bytes on to the server, in order
   */
  constructor(
    private readonly intervalMs: number,
    private readonly forward: (bytes: Buffer) => void,
    private readonly opts: { readOnly?: boolean; unreadable?: () => void; now?: () => number } = {},
  ) {}

  private now(): number {
    return this.opts.now ? this.opts.now() : performance.now();
  }

  /** Bytes from the viewer. */
  push(chunk: Buffer): void {
    if (this.phase === 'passthrough') {
      this.forward(chunk);
      return;
    }
    if (this.phase === 'refused') return;
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: Buffer[] = [];
    for (;;) {
      const length = this.nextLength();
      if (length === 0) break;
      if (length < 0) {
        if (this.opts.readOnly) {
          this.phase = 'refused';
          this.pending = Buffer.alloc(0);
          this.opts.unreadable?.();
          break;
        }
        this.phase = 'passthrough';
        out.push(this.pending);
        this.pending = Buffer.alloc(0);
        break;
      }
      const message = this.pending.subarray(0, length);
      this.pending = this.pending.subarray(length);
      if (this.opts.readOnly && this.phase === 'messages' && INPUT.has(message[0]!)) continue;
      if (this.phase === 'messages' && message[0] === FBUR && message[1] === 1 && !this.due()) {
        // Only the newest matters: it asks for the same screen.
        this.heldRequest = Buffer.from(message);
        this.schedule();
        continue;
      }
      if (this.phase === 'messages' && message[0] === FBUR) {
        this.sent();
        this.heldRequest = undefined;
      }
      out.push(message);
      this.advance(message);
    }
    if (out.length) this.forward(out.length === 1 ? out[0]! : Buffer.concat(out));
  }

  /** Stops the pending timer (the connection closed). */
  close(): void {
    clearTimeout(this.timer);
    this.heldRequest = undefined;
  }

  private due(): boolean {
    return this.now() >= this.nextDueAt;
  }

  private sent(): void {
    const now = this.now();
    // The first request earns no catch-up: nothing was late yet.
    const from = this.nextDueAt === Number.NEGATIVE_INFINITY ? now : Math.max(this.nextDueAt, now - this.intervalMs);
    this.nextDueAt = from + this.intervalMs;
  }

  private schedule(): void {
    if (this.timer) return;
    const wait = Math.max(0, this.nextDueAt - this.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const request = this.heldRequest;
      if (!request) return;
      this.heldRequest = undefined;
      this.sent();
      this.forward(request);
    }, wait);
  }

  /** The length of the next unit of the client's stream in the current phase. */
  private nextLength(): number {
    const buf = this.pending;
    switch (this.phase) {
      case 'version':
        return buf.length >= 12 ? 12 : 0;
      case 'security':
      case 'init':
        return buf.length >= 1 ? 1 : 0;
      case 'messages':
        return clientMessageLength(buf);
      case 'refused':
        return 0;
      default:
        return -1;
    }
  }

  private advance(unit: Buffer): void {
    if (this.phase === 'version') {
      // RFB 3.3 has the server choose the security type, so the client sends no choice byte.
      this.phase = unit.toString('latin1', 4, 11) === '003.003' ? 'init' : 'security';
    } else if (this.phase === 'security') {
      // Only "None" carries no further client bytes before ClientInit; anything else is not paced
      // (nor, for a read-only viewer, let through).
      this.phase = unit[0] === 1 ? 'init' : this.opts.readOnly ? 'refused' : 'passthrough';
      if (this.phase === 'refused') this.opts.unreadable?.();
    } else if (this.phase === 'init') {
      this.phase = 'messages';
    }
  }
}
