import { Readable, Writable } from 'node:stream';

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the program could not be started at all (ENOENT for a missing program). */
  error?: { message: string; code?: string };
}

export interface BoxSpawnOptions {
  env?: Record<string, string>;
  /** Inside the box; / when not given. */
  cwd?: string;
  /** The box's user (the default), or the agent's own uid for the rare program that must not run as the user. */
  user?: 'session' | 'box';
  /** 'pipe': a writable stdin; a string or Buffer: its whole input, then end of file; default: none. */
  stdin?: 'pipe' | string | Buffer;
  /** Output streams to read (each defaults to true). */
  stdout?: boolean;
  stderr?: boolean;
  /** More output descriptors to read (3: a runner's answer, apart from its output). */
  extraFds?: number[];
  /** The session's browser: closed gracefully by the agent if the daemon is gone. */
  role?: 'browser';
}

/** What a box process needs of its box: a way to talk to the agent. */
export interface AgentLink {
  send(msg: object): void;
}

/** A program's writes acknowledged by the agent before more are sent: this much may be on the way. */
const STDIN_WINDOW = 1024 * 1024;

/**
 * One program started inside a box by its agent: its stdin and outputs as streams (their bytes
 * travel over the agent's channel, with flow control both ways), its exit, and its signals. The
 * pid is the box's own (its PID namespace), meaningful only to the agent.
 */
export class BoxProcess {
  pid?: number;
  readonly stdin?: Writable;
  readonly stdout?: Readable;
  readonly stderr?: Readable;
  readonly fds: Record<number, Readable> = {};
  readonly started: Promise<number>;
  readonly exited: Promise<ProcessExit>;
  private resolveStarted!: (pid: number) => void;
  private rejectStarted!: (err: Error) => void;
  private resolveExit!: (exit: ProcessExit) => void;
  private readonly outputs = new Map<number, Readable>();
  private inFlight = 0;
  private readonly waitingWrites: (() => void)[] = [];
  private endAcknowledged?: () => void;
  private done = false;

  constructor(
    readonly id: string,
    private readonly link: AgentLink,
    opts: BoxSpawnOptions,
  ) {
    this.started = new Promise((resolve, reject) => {
      this.resolveStarted = resolve;
      this.rejectStarted = reject;
    });
    this.started.catch(() => {});
    this.exited = new Promise((resolve) => (this.resolveExit = resolve));
    const output = (fd: number) => {
      const stream = new Readable({
        highWaterMark: 256 * 1024,
        read: () => this.link.send({ op: 'hold', id, fd, hold: false }),
      });
      this.outputs.set(fd, stream);
      return stream;
    };
    if (opts.stdout !== false) this.stdout = output(1);
    if (opts.stderr !== false) this.stderr = output(2);
    for (const fd of opts.extraFds ?? []) this.fds[fd] = output(fd);
    if (opts.stdout !== false) this.fds[1] = this.stdout!;
    if (opts.stdin === 'pipe') {
      this.stdin = new Writable({
        highWaterMark: 256 * 1024,
        write: (chunk: Buffer, _enc, cb) => this.write(chunk, false).then(() => cb(), cb),
        final: (cb) => this.write(undefined, true).then(() => cb(), cb),
      });
    }
  }

  /** What the agent says of this process. */
  receive(msg: { op: string; [k: string]: unknown }): void {
    switch (msg.op) {
      case 'spawned':
        this.pid = Number(msg.pid);
        this.resolveStarted(this.pid);
        break;
      case 'error': {
        const error = { message: String(msg.message ?? 'failed'), ...(msg.code ? { code: String(msg.code) } : {}) };
        this.rejectStarted(Object.assign(new Error(error.message), { code: error.code }));
        this.finish({ code: null, signal: null, error });
        break;
      }
      case 'data': {
        const stream = this.outputs.get(Number(msg.fd));
        const data = msg.data as Uint8Array | undefined;
        if (!stream || !(data instanceof Uint8Array)) return;
        if (!stream.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength)))
          this.link.send({ op: 'hold', id: this.id, fd: Number(msg.fd), hold: true });
        break;
      }
      case 'eof':
        this.outputs.get(Number(msg.fd))?.push(null);
        break;
      case 'written':
        if (msg.end) {
          this.endAcknowledged?.();
          break;
        }
        this.inFlight -= Number(msg.bytes) || 0;
        this.waitingWrites.shift()?.();
        break;
      case 'exit':
        this.finish({ code: msg.code === null ? null : Number(msg.code), signal: (msg.signal as NodeJS.Signals | null) ?? null });
        break;
    }
  }

  /** The box ended under the process: it is gone too. */
  boxEnded(): void {
    this.rejectStarted(new Error('the box ended'));
    this.finish({ code: null, signal: 'SIGKILL' });
  }

  get running(): boolean {
    return !this.done;
  }

  /** Signals the process's group (everything it started), or only the process. */
  kill(signal: NodeJS.Signals = 'SIGKILL', group = true): void {
    if (!this.done) this.link.send({ op: 'signal', id: this.id, signal, group });
  }

  private async write(chunk: Buffer | undefined, end: boolean): Promise<void> {
    if (this.done) throw new Error('the process has exited');
    while (this.inFlight >= STDIN_WINDOW) await new Promise<void>((r) => this.waitingWrites.push(r));
    const bytes = chunk?.length ?? 0;
    this.inFlight += bytes;
    if (end) {
      // The end waits for its acknowledgement: the program has seen every byte.
      const acknowledged = new Promise<void>((r) => (this.endAcknowledged = r));
      this.link.send({ op: 'write', id: this.id, data: chunk, end });
      await acknowledged;
      return;
    }
    this.link.send({ op: 'write', id: this.id, data: chunk, end });
  }

  private finish(exit: ProcessExit): void {
    if (this.done) return;
    this.done = true;
    for (const stream of this.outputs.values()) if (!stream.readableEnded) stream.push(null);
    for (const w of this.waitingWrites.splice(0)) w();
    this.endAcknowledged?.();
    this.stdin?.destroy();
    this.resolveExit(exit);
  }
}

/** Reads a box process to its end: its exit and what it wrote (each output kept up to `max` bytes). */
export async function outputOf(
  proc: BoxProcess,
  max = 16 * 1024 * 1024,
): Promise<ProcessExit & { stdout: Buffer; stderr: Buffer; fds: Record<number, Buffer> }> {
  const read = async (stream?: Readable) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    if (!stream) return Buffer.alloc(0);
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (kept >= max) continue;
      const part = chunk.subarray(0, max - kept);
      chunks.push(part);
      kept += part.length;
    }
    return Buffer.concat(chunks);
  };
  const extra = Object.entries(proc.fds).filter(([fd]) => fd !== '1');
  const [stdout, stderr, ...rest] = await Promise.all([read(proc.stdout), read(proc.stderr), ...extra.map(([, s]) => read(s))]);
  const exit = await proc.exited;
  return { ...exit, stdout: stdout!, stderr: stderr!, fds: Object.fromEntries(extra.map(([fd], i) => [Number(fd), rest[i]!])) };
}
