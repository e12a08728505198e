/**
 * Reads a websocket client's byte stream frame by frame without taking it apart, so a relay can
 * pass the client's own masked frames on unchanged (RFC 6455 section 5.2) and still know where
 * each one starts. ws's Receiver, which the CDP gateway used, unmasks and gathers every message
 * whole, and its Sender masks it again: the gateway measured 1.16x a Node TCP splice that way and
 * 1.07x this way (npm run bench, medians of 6 alternating runs). No maintained library reads frame
 * headers while leaving the bytes alone, so this does, checking what ws's Receiver checks of a
 * client's frames.
 *
 * What a scan holds back: an incomplete header (at most 14 bytes) and an incomplete small text
 * message that must be seen whole (`inspectUpTo`). Everything else is passed on as it arrives.
 */

/** Why a scan stopped: what comes after it in the stream was not passed on. */
export type ScanStop<T> =
  /** A close frame was passed on: the client is done sending. */
  | { kind: 'close' }
  /** `inspect` claimed a message: it and all after it were held back. */
  | { kind: 'claimed'; value: T }
  /** The stream breaks the protocol or a limit: close with this code (1002 or 1009). */
  | { kind: 'refuse'; code: number; reason: string };

export interface ScanResult<T> {
  /** Bytes to pass on unchanged, in order (a prefix of what the scan was given and held). */
  forward: Buffer;
  stop?: ScanStop<T>;
}

export interface ClientFrameOptions<T> {
  /** The largest message (the sum of its fragments) a client may send; past it the scan refuses with 1009. */
  maxMessage: number;
  /** Whole text messages of at most this many bytes are unmasked and shown to `inspect`. */
  inspectUpTo: number;
  /** Looks at such a message (unmasked; the buffer is reused afterwards): a value claims it. */
  inspect(text: Buffer): T | undefined;
}

const OPCODE = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;
const EMPTY = Buffer.alloc(0);

export class ClientFrames<T> {
  /** Bytes held back from the last scan: an incomplete header or small text message. */
  private held: Buffer = EMPTY;
  /** Payload bytes of the frame being passed on that have not arrived yet. */
  private remaining = 0;
  /** Bytes so far of a fragmented message in progress, or -1 when none is. */
  private fragmented = -1;
  private readonly scratch: Buffer;
  private stopped = false;
  /** Whole data messages seen so far. */
  messages = 0;

  constructor(private readonly o: ClientFrameOptions<T>) {
    this.scratch = Buffer.allocUnsafe(o.inspectUpTo);
  }

  /** Scans the next chunk of the stream. After a stop, nothing more is read. */
  scan(chunk: Buffer): ScanResult<T> {
    if (this.stopped) return { forward: EMPTY };
    const buf = this.held.length ? Buffer.concat([this.held, chunk]) : chunk;
    this.held = EMPTY;
    let pos = 0;
    while (pos < buf.length) {
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, buf.length - pos);
        pos += n;
        this.remaining -= n;
        continue;
      }
      const frame = readHeader(buf, pos);
      if (!frame) break;
      if (frame.refuse) return this.stop(buf, pos, { kind: 'refuse', ...frame.refuse });
      const broken = this.check(frame);
      if (broken) return this.stop(buf, pos, { kind: 'refuse', ...broken });
      const end = pos + frame.headerLength + frame.length;
      if (frame.opcode === OPCODE.close) {
        if (end > buf.length) break;
        return this.stop(buf, end, { kind: 'close' });
      }
      if (frame.opcode === OPCODE.text && frame.fin && frame.length <= this.o.inspectUpTo) {
        if (end > buf.length) break;
        this.messages++;
        const claim = this.o.inspect(unmask(buf, pos + frame.headerLength, frame.length, frame.mask, this.scratch));
        if (claim !== undefined) return this.stop(buf, pos, { kind: 'claimed', value: claim });
        pos = end;
        continue;
      }
      if (frame.opcode < OPCODE.close && frame.fin) this.messages++;
      pos += frame.headerLength;
      this.remaining = frame.length;
    }
    // Copied: a subarray would keep the whole chunk alive for the few bytes held.
    if (pos < buf.length) this.held = Buffer.from(buf.subarray(pos));
    return { forward: pos === buf.length ? buf : buf.subarray(0, pos) };
  }

  /** What the protocol forbids of this frame here, as ws's Receiver checks a client's frames. */
  private check(frame: Header): { code: number; reason: string } | undefined {
    const { opcode, fin, length } = frame;
    if (opcode >= OPCODE.close) {
      if (!fin || length > 125) return { code: 1002, reason: 'a control frame must be whole and at most 125 bytes' };
      return undefined;
    }
    if (opcode === OPCODE.continuation) {
      if (this.fragmented < 0) return { code: 1002, reason: 'a continuation frame with no message to continue' };
      this.fragmented += length;
    } else {
      if (this.fragmented >= 0) return { code: 1002, reason: 'a new message before the last one ended' };
      this.fragmented = length;
    }
    if (this.fragmented > this.o.maxMessage) return { code: 1009, reason: `a message passed ${this.o.maxMessage} bytes` };
    if (fin) this.fragmented = -1;
    return undefined;
  }

  private stop(buf: Buffer, at: number, stop: ScanStop<T>): ScanResult<T> {
    this.stopped = true;
    this.held = EMPTY;
    return { forward: buf.subarray(0, at), stop };
  }
}

interface Header {
  /** Set alone when the frame cannot be taken: why. */
  refuse?: { code: number; reason: string };
  fin: boolean;
  opcode: number;
  length: number;
  headerLength: number;
  /** Where the masking key starts. */
  mask: number;
}

/** Why a frame cannot be taken, shaped as a Header so the scan's checks of it stay monomorphic. */
const refused = (code: number, reason: string): Header => ({ refuse: { code, reason }, fin: false, opcode: 0, length: 0, headerLength: 0, mask: 0 });

/** The frame header at `pos`, undefined while it is incomplete, or why it cannot be taken. */
function readHeader(buf: Buffer, pos: number): Header | undefined {
  if (buf.length - pos < 2) return undefined;
  const b0 = buf[pos]!;
  const b1 = buf[pos + 1]!;
  const opcode = b0 & 0x0f;
  // No extension was negotiated (the gateway offers Chromium none), so no RSV bit may be set.
  if (b0 & 0x70) return refused(1002, 'RSV bits set with no extension negotiated');
  if (!(opcode <= OPCODE.binary || (opcode >= OPCODE.close && opcode <= OPCODE.pong))) {
    return refused(1002, `invalid opcode ${opcode}`);
  }
  if (!(b1 & 0x80)) return refused(1002, 'a client frame must be masked');
  let length = b1 & 0x7f;
  let at = pos + 2;
  if (length === 126) {
    if (buf.length - at < 2) return undefined;
    length = buf.readUInt16BE(at);
    at += 2;
  } else if (length === 127) {
    if (buf.length - at < 8) return undefined;
    const high = buf.readUInt32BE(at);
    // Past 2^53 - 1 the length cannot be held exactly; no message that large is taken anyway.
    if (high > 0x1fffff) return refused(1009, 'a frame longer than 2^53 - 1 bytes');
    length = high * 2 ** 32 + buf.readUInt32BE(at + 4);
    at += 8;
  }
  if (buf.length - at < 4) return undefined;
  return { refuse: undefined, fin: (b0 & 0x80) !== 0, opcode, length, headerLength: at + 4 - pos, mask: at };
}

/** The payload at `start` unmasked into `into` (which must be large enough): a view of `into`. */
function unmask(buf: Buffer, start: number, length: number, mask: number, into: Buffer): Buffer {
  for (let i = 0; i < length; i++) into[i] = buf[start + i]! ^ buf[mask + (i & 3)]!;
  return into.subarray(0, length);
}
