import { randomUUID } from 'node:crypto';
import { Socket } from 'node:net';
import type { BoxEvents, BoxSpec } from './launcher.js';
import { descendants } from '../lib/proc-tree.js';
import { BoxProcess, type BoxSpawnOptions, type ProcessExit } from './box-process.js';

/** How the daemon reaches its launcher's boxes (ProcessLauncher). */
export interface BoxHost {
  startBox(id: string, spec: BoxSpec, events: BoxEvents): Promise<{ pid: number; childPid: number }>;
  sendToBox(id: string, msg: object, handle?: unknown): void;
  stopBox(id: string, keepDisk?: boolean): Promise<void>;
}

/** A connection made inside a box to a host loopback port: the daemon connects it on the host. */
/** A connection a box accepted on a forwarded port, with the box it came from (its id). */
export type ForwardedConnection = (socket: Socket, port: number, family: 4 | 6, boxId: string) => void;

/** How long the agent may take from its box's start to its first word. */
const READY_TIMEOUT_MS = 30_000;

export interface BoxExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** Stopped on purpose (stop()), not died. */
  stopped: boolean;
}

type Pending = { resolve: (v: any) => void; reject: (e: Error) => void };

/**
 * One box, as the daemon holds it: its agent (the only way in) and what it started, connected or
 * listens on. Everything a session or app runs is in it; stop() ends all of it at once.
 */
export class Box {
  private readonly processes = new Map<string, BoxProcess>();
  private readonly requests = new Map<string, Pending>();
  private readonly listeners = new Map<string, (socket: Socket) => void>();
  private resolveExit!: (exit: BoxExit) => void;
  readonly exited: Promise<BoxExit>;
  private ended = false;
  private stopping?: Promise<void>;
  private ready?: Pending;
  /** bubblewrap's pid on the host (the box's processes are its descendants). */
  hostPid = 0;
  /** Set once pasta failed: the box has no route out (its loopback forwards still work). */
  networkError?: string;
  /** pasta's pid on the host (the box's network, outside it). */
  networkPid?: number;
  /** The uid slot of a per-box-uid box: a crashed daemon's successor reads its disk with the same uids. */
  uidSlot?: number;

  private constructor(
    readonly id: string,
    private readonly host: BoxHost,
    private readonly onForwarded: ForwardedConnection,
    private readonly log: (msg: string, extra?: object) => void,
  ) {
    this.exited = new Promise((resolve) => (this.resolveExit = resolve));
  }

  /** Starts a box and waits for its agent. */
  static async start(
    host: BoxHost,
    spec: BoxSpec,
    opts: { onForwarded: ForwardedConnection; log: (msg: string, extra?: object) => void; id?: string },
  ): Promise<Box> {
    const box = new Box(opts.id ?? randomUUID(), host, opts.onForwarded, opts.log);
    let stderr = '';
    const ready = new Promise<void>((resolve, reject) => (box.ready = { resolve, reject }));
    const timer = setTimeout(
      () => box.ready?.reject(new Error(`the box's agent did not start in ${READY_TIMEOUT_MS / 1000} s: ${stderr.trim()}`)),
      READY_TIMEOUT_MS,
    );
    try {
      const { pid } = await host.startBox(box.id, spec, {
        message: (msg, handle) => box.receive(msg, handle),
        exit: (info) => box.died(info),
        stderr: (data) => {
          stderr = (stderr + data.toString()).slice(-4000);
        },
        network: (info) => {
          if (info.ok) box.networkPid = info.pid;
          if (!info.ok) {
            box.networkError = info.message ?? 'pasta stopped';
            opts.log('box network unavailable', { box: box.id, error: box.networkError });
          }
        },
      });
      box.hostPid = pid;
      await ready;
    } catch (err) {
      await box.stop();
      throw err;
    } finally {
      clearTimeout(timer);
    }
    return box;
  }

  get isStopped(): boolean {
    return this.ended;
  }

  /** Starts a program inside the box (as its user unless asked otherwise). */
  spawn(argv: string[], opts: BoxSpawnOptions = {}): BoxProcess {
    const id = randomUUID();
    const proc = new BoxProcess(id, { send: (msg) => this.send(msg) }, opts);
    if (this.ended) {
      proc.boxEnded();
      return proc;
    }
    this.processes.set(id, proc);
    void proc.exited.then(() => this.processes.delete(id));
    const [file, ...args] = argv;
    this.send({
      op: 'spawn',
      id,
      file,
      args,
      env: opts.env ?? {},
      cwd: opts.cwd,
      user: opts.user ?? 'session',
      stdin: opts.stdin === 'pipe',
      ...(opts.stdin !== undefined && opts.stdin !== 'pipe' ? { input: Buffer.from(opts.stdin) } : {}),
      stdout: opts.stdout !== false,
      stderr: opts.stderr !== false,
      extraFds: opts.extraFds ?? [],
      role: opts.role,
    });
    return proc;
  }

  /** A socket connected inside the box: a TCP port on its loopback, or a Unix socket path. */
  connect(target: { port: number; host?: string } | { unix: string }): Promise<Socket> {
    return this.request<Socket>({ op: 'connect', ...target });
  }

  /** Listens inside the box (on its loopback); each connection is handed to onSocket here. */
  async listen(port: number, onSocket: (socket: Socket) => void, host = '127.0.0.1'): Promise<{ port: number; close(): void }> {
    const id = randomUUID();
    this.listeners.set(id, onSocket);
    try {
      const { port: bound } = await this.request<{ port: number }>({ op: 'listen', port, host }, id);
      return { port: bound, close: () => (this.listeners.delete(id), this.send({ op: 'unlisten', id })) };
    } catch (err) {
      this.listeners.delete(id);
      throw err;
    }
  }

  /** The host's loopback ports the box reaches as its own (the whole set, each time). */
  forward(ports: number[]): void {
    this.send({ op: 'forward', ports });
  }

  /** CPU and memory of a process of the box and everything it started. */
  usage(proc: BoxProcess): Promise<{ cpuSeconds: number; rssBytes: number }> {
    return this.request<{ cpu_seconds: number; rss_bytes: number }>({ op: 'usage', proc: proc.id }).then((u) => ({
      cpuSeconds: Number(u.cpu_seconds) || 0,
      rssBytes: Number(u.rss_bytes) || 0,
    }));
  }

  /** The browser's DevTools endpoint, which the agent closes gracefully should the daemon die. */
  setBrowser(proc: BoxProcess, port: number, path: string): void {
    this.send({ op: 'browser', id: proc.id, port, path });
  }

  /** The host pids of everything in the box, and of its network (CPU priority of a standby box). */
  async hostPids(): Promise<number[]> {
    if (!this.hostPid) return [];
    return [this.hostPid, ...(await descendants(this.hostPid)), ...(this.networkPid ? [this.networkPid] : [])];
  }

  /** Ends everything in the box; its disk stays mounted when kept (a profile still to be saved from it). */
  stop(opts: { keepDisk?: boolean } = {}): Promise<void> {
    this.stopping ??= (async () => {
      await this.host.stopBox(this.id, opts.keepDisk);
      this.died({ code: null, signal: 'SIGKILL', stderr: '' }, true);
    })();
    return this.stopping;
  }

  private send(msg: object): void {
    if (!this.ended) this.host.sendToBox(this.id, msg);
  }

  private request<T>(msg: object, id: string = randomUUID()): Promise<T> {
    if (this.ended) return Promise.reject(new Error('the box has ended'));
    return new Promise<T>((resolve, reject) => {
      this.requests.set(id, { resolve, reject });
      this.send({ ...msg, id });
    });
  }

  private receive(msg: { op?: string; id?: string; [k: string]: unknown }, handle: unknown): void {
    if (!msg || typeof msg !== 'object') return;
    const socket = () => new Socket({ handle: handle as never, readable: true, writable: true });
    switch (msg.op) {
      case 'ready':
        this.ready?.resolve(undefined);
        this.ready = undefined;
        return;
      case 'forwarded':
        if (handle) this.onForwarded(socket(), Number(msg.port), msg.family === 6 ? 6 : 4, this.id);
        return;
      case 'accepted': {
        const onSocket = this.listeners.get(String(msg.id));
        if (handle && onSocket) onSocket(socket());
        else (handle as { close?: () => void } | undefined)?.close?.();
        return;
      }
    }
    const id = String(msg.id);
    const request = this.requests.get(id);
    if (request) {
      this.requests.delete(id);
      if (msg.op === 'error') request.reject(Object.assign(new Error(String(msg.message)), { code: msg.code }));
      else if (msg.op === 'socket' && handle) request.resolve(socket());
      else request.resolve(msg);
      return;
    }
    this.processes.get(id)?.receive(msg as { op: string });
  }

  private died(info: Omit<BoxExit, 'stopped'>, stopped = false): void {
    if (this.ended) return;
    this.ended = true;
    // pasta outlives the namespace it served (it does not notice it is gone): a box that died
    // with its launcher takes its network along here.
    if (this.networkPid) {
      try {
        process.kill(this.networkPid, 'SIGKILL');
      } catch {
        // Gone with the launcher already.
      }
    }
    if (!stopped) this.log('box exited', { box: this.id, code: info.code, signal: info.signal, stderr: info.stderr.slice(-500) });
    this.ready?.reject(new Error(`the box exited before its agent started: ${info.stderr.trim() || info.signal || info.code}`));
    for (const r of this.requests.values()) r.reject(new Error('the box has ended'));
    this.requests.clear();
    for (const p of this.processes.values()) p.boxEnded();
    this.processes.clear();
    this.resolveExit({ ...info, stopped });
  }
}

export type { BoxProcess, BoxSpawnOptions, ProcessExit };
