import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { Worker } from 'node:worker_threads';

/**
 * Starts the long-lived processes of sessions (Chromium, Xvfb, its window manager, x11vnc) from a
 * worker thread. libuv's spawn forks the daemon and then blocks until the child has exec'd; on a
 * machine busy launching browsers the child waits for a CPU, and the daemon's event loop (every
 * API request, every CDP relay) waited with it: 100+ ms per launch under the load bench. In the
 * worker only the worker waits. Output, exit and errors come back as messages.
 */

/** What callers use of a child: a ChildProcess's shape, minus what needs the process object. */
export class OffThreadChild extends EventEmitter {
  pid?: number;
  /** stdio[i] for every 'pipe' the spawn asked for (fd 3 too, as Xvfb's -displayfd uses). */
  readonly stdio: (PassThrough | null)[];

  constructor(stdio: ('ignore' | 'pipe')[]) {
    super();
    this.stdio = stdio.map((s) => (s === 'pipe' ? new PassThrough() : null));
  }

  get stdout(): PassThrough | null {
    return this.stdio[1] ?? null;
  }

  get stderr(): PassThrough | null {
    return this.stdio[2] ?? null;
  }
}

export interface OffThreadSpawnOptions {
  env: Record<string, string>;
  detached?: boolean;
  /** stdin is always ignored: nothing started this way reads input. */
  stdio: ('ignore' | 'pipe')[];
}

type FromWorker =
  | { type: 'spawned'; id: number; pid: number }
  | { type: 'data'; id: number; fd: number; data: Uint8Array }
  | { type: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null }
  | { type: 'error'; id: number; message: string; code?: string };

const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { spawn } = require('node:child_process');
parentPort.on('message', (m) => {
  const fail = (e) => parentPort.postMessage({ type: 'error', id: m.id, message: e.message, code: e.code });
  let child;
  try {
    child = spawn(m.command, m.args, { env: m.env, detached: m.detached, stdio: m.stdio });
  } catch (e) {
    return fail(e);
  }
  child.once('error', fail);
  if (child.pid === undefined) return;
  parentPort.postMessage({ type: 'spawned', id: m.id, pid: child.pid });
  child.stdio.forEach((stream, fd) => {
    if (!stream || fd === 0) return;
    stream.on('data', (data) => parentPort.postMessage({ type: 'data', id: m.id, fd, data }));
  });
  child.once('exit', (code, signal) => parentPort.postMessage({ type: 'exit', id: m.id, code, signal }));
  child.unref();
});
`;

class Spawner {
  private worker?: Worker;
  private next = 0;
  private readonly children = new Map<number, { child: OffThreadChild; spawned: (pid: number) => void; failed: (err: Error) => void }>();

  private start(): Worker {
    const worker = new Worker(WORKER_SOURCE, { eval: true });
    worker.on('message', (m: FromWorker) => this.receive(m));
    worker.on('error', (err) => this.lost(err));
    worker.on('exit', () => this.lost(new Error('the spawner thread exited')));
    return worker;
  }

  /** The thread keeps the process alive exactly while a child it started runs (or is starting). */
  private held(): void {
    if (this.children.size) this.worker?.ref();
    else this.worker?.unref();
  }

  /** The worker died (it should not): what it was starting fails, and the next spawn starts a new one. */
  private lost(err: Error): void {
    this.worker = undefined;
    for (const [id, entry] of this.children) {
      entry.failed(err);
      entry.child.emit('error', err);
      this.children.delete(id);
    }
  }

  spawn(command: string, args: string[], opts: OffThreadSpawnOptions): Promise<OffThreadChild> {
    const stdio: ('ignore' | 'pipe')[] = ['ignore', ...opts.stdio.slice(1)];
    const child = new OffThreadChild(stdio);
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.children.set(id, {
        child,
        spawned: (pid) => {
          child.pid = pid;
          resolve(child);
        },
        failed: reject,
      });
      this.worker ??= this.start();
      this.held();
      this.worker.postMessage({ id, command, args, env: opts.env, detached: opts.detached ?? false, stdio });
    });
  }

  private receive(m: FromWorker): void {
    const entry = this.children.get(m.id);
    if (!entry) return;
    const { child } = entry;
    switch (m.type) {
      case 'spawned':
        entry.spawned(m.pid);
        break;
      case 'data':
        child.stdio[m.fd]?.write(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength));
        break;
      case 'exit':
        this.children.delete(m.id);
        this.held();
        for (const s of child.stdio) s?.end();
        child.emit('exit', m.code, m.signal);
        break;
      case 'error': {
        const err = Object.assign(new Error(m.message), { code: m.code });
        if (child.pid === undefined) {
          this.children.delete(m.id);
          this.held();
          entry.failed(err);
        } else child.emit('error', err);
        break;
      }
    }
  }
}

const spawner = new Spawner();

/** Starts a process from the spawner thread; resolves once it runs (it has a pid). */
export function spawnOffThread(command: string, args: string[], opts: OffThreadSpawnOptions): Promise<OffThreadChild> {
  return spawner.spawn(command, args, opts);
}
