import { type ChildProcess, fork } from 'node:child_process';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { CdpCommandData } from './cdp-commands.js';
import type { CdpConnectionEnd } from './cdp-connection.js';

/** The daemon's messages to the relay process; a socket rides with `upstream` and `client`. */
export type RelayMessage =
  /** Chromium's side, its handshake done; `head`: what Chromium sent past its 101. */
  | { op: 'upstream'; id: number; head: Uint8Array }
  /** The client's side, to be answered with `accept`; `head`: what the client sent past its handshake; `commands`: report its control commands. */
  | { op: 'client'; id: number; head: Uint8Array; accept: string; commands: boolean }
  | { op: 'cut'; id: number };

export type RelayReport =
  | { op: 'closed'; id: number; end: CdpConnectionEnd; messages: number }
  /** A browser-control command the client sent (telemetry's cdp_command). */
  | { op: 'command'; id: number; data: CdpCommandData };

export interface HandOver {
  /** The client's socket as the HTTP server's upgrade left it, and what it sent past its handshake. */
  client: Socket;
  head: Buffer;
  /** Chromium's browser endpoint, its handshake done with the client's key, and what it sent past it. */
  upstream: Socket;
  upstreamHead: Buffer;
  /** Chromium's Sec-WebSocket-Accept for the client's key. */
  accept: string;
}

/** The relay process's script, built beside the daemon's bundle (tsup's `cdp-relay` entry): the daemon runs only from it. */
const RELAY_SCRIPT = fileURLToPath(new URL('./cdp-relay.js', import.meta.url));

/**
 * Relays the CDP gateway's connections from a process of its own. In the daemon, relaying cost
 * 115-135 µs of CPU per CDP call against 80-98 µs for a bare splice process: Node's stream and
 * event code runs slower in a large process (more inline-cache misses), and every message waited
 * behind whatever the API was doing. The daemon still does everything but the bytes: the jwt,
 * origin and limits checks, Chromium's handshake, telemetry, the session's hold; then it hands
 * both sockets over (descriptor passing, as the boxes' agents hand their sockets to the daemon)
 * and keeps no copy. It cuts a connection when its session ends and hears of every end.
 *
 * The process starts with the daemon and again after it died (its connections are reported ended
 * then: the descriptors died with it). It starts nothing and holds nothing but connections, and it
 * ends, cutting them, as soon as the daemon's IPC channel closes, which the kernel does at the
 * daemon's exit however it dies: no marker is needed to reap it.
 */
export class CdpRelay {
  private helper?: ChildProcess;
  private next = 0;
  private readonly open = new Map<
    number,
    { client: Socket; closed: (end: CdpConnectionEnd, messages: number) => void; command?: (data: CdpCommandData) => void; cut?: boolean }
  >();
  private closed = false;

  constructor(private readonly opts: { log?: (msg: string, extra?: object) => void }) {}

  /** Starts the process ahead of the first connection, so no client's connect waits for it. */
  start(): void {
    if (!this.closed) this.ensureHelper();
  }

  /** The process's pid while it runs. */
  get pid(): number | undefined {
    return this.helper?.pid;
  }

  /**
   * Hands a connection over; `closed` is told once when it ends. The sockets are the relay's from
   * here: nothing of the daemon may read or write them. `command` hears of each browser-control
   * command the client sends. Returns the connection's cut.
   */
  hand(c: HandOver, closed: (end: CdpConnectionEnd, messages: number) => void, command?: (data: CdpCommandData) => void): () => void {
    const helper = this.closed ? undefined : this.ensureHelper();
    if (!helper?.connected) {
      // Stopping, or the relay just died ('exit' starts the next): the connection ends here.
      c.client.destroy();
      c.upstream.destroy();
      queueMicrotask(() => closed(this.closed ? 'cut' : 'upstream_error', 0));
      return () => {};
    }
    const id = ++this.next;
    this.open.set(id, { client: c.client, closed, ...(command ? { command } : {}) });
    // Whatever either socket read past its handshake before now goes along: nothing more can be
    // on its way (a client sends nothing before the 101 it has not got yet, nor Chromium before a command).
    // The channel is open, so a send that fails failed writing (the relay died under it): Node has
    // detached the socket and closed its descriptor, and destroying it would count it off the
    // server a second time.
    const failed = (err: Error | null) => {
      if (err) this.ended(id, 'upstream_error', 0);
    };
    helper.send({ op: 'upstream', id, head: withBuffered(c.upstream, c.upstreamHead) } satisfies RelayMessage, c.upstream, {}, failed);
    helper.send(
      { op: 'client', id, head: withBuffered(c.client, c.head), accept: c.accept, commands: command !== undefined } satisfies RelayMessage,
      c.client,
      {},
      failed,
    );
    return () => {
      const open = this.open.get(id);
      if (!open || open.cut) return;
      // However it ends from here (the browser may close before the cut arrives), the daemon ended it.
      open.cut = true;
      if (this.helper === helper) helper.send({ op: 'cut', id } satisfies RelayMessage, undefined, {}, () => {});
    };
  }

  /** Ends the process (its connections were cut with their sessions first). */
  close(): void {
    this.closed = true;
    this.helper?.disconnect();
  }

  private ended(id: number, end: CdpConnectionEnd, messages: number): void {
    const c = this.open.get(id);
    if (!c) return;
    this.open.delete(id);
    // Node detached the handed-over socket (the server stopped counting it then) and never ends
    // it: the front door, which counts open connections, hears of its end here.
    c.client.emit('close', false);
    c.closed(c.cut ? 'cut' : end, messages);
  }

  private ensureHelper(): ChildProcess {
    if (this.helper) return this.helper;
    const helper = fork(RELAY_SCRIPT, [], {
      execArgv: ['--max-semi-space-size=1'],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    helper.on('message', (m: RelayReport) => {
      if (m.op === 'closed') this.ended(m.id, m.end, m.messages);
      else if (m.op === 'command') this.open.get(m.id)?.command?.(m.data);
    });
    helper.once('exit', (code, signal) => {
      if (this.helper === helper) this.helper = undefined;
      if (!this.closed) this.opts.log?.('the CDP relay exited; its connections ended', { code, signal });
      for (const id of [...this.open.keys()]) this.ended(id, 'upstream_error', 0);
    });
    // A send to a relay that just died: its 'exit' ends what it held.
    helper.on('error', () => {});
    this.helper = helper;
    return helper;
  }
}

/** `head` and whatever the socket has read but nobody consumed yet. */
function withBuffered(socket: Socket, head: Buffer): Buffer {
  const more: Buffer[] = [];
  for (let chunk: Buffer | null; (chunk = socket.read() as Buffer | null) !== null; ) more.push(chunk);
  return more.length ? Buffer.concat([head, ...more]) : head;
}
