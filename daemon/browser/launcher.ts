import { fork, spawn, type ChildProcess } from 'node:child_process';
import { PassThrough, type Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { runnerScript } from '../process/node-runner.js';
import { markedEnv } from './procs.js';

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A child started detached (its own process group); stdin ignored, stderr and the asked descriptors piped. */
export interface LaunchedChild {
  pid: number;
  stderr: Readable;
  /** The other piped descriptors by number: 1 (stdout), 3 and up. */
  fds: Record<number, Readable>;
  exited: Promise<ExitInfo>;
}

/** Starts a detached child; rejects when it could not be started at all (a missing binary). */
export type Spawner = (command: string, args: string[], env: Record<string, string>, opts?: { pipes?: number[] }) => Promise<LaunchedChild>;

/** The descriptors piped to the daemon: stderr always, and those asked for. */
const pipesOf = (opts?: { pipes?: number[] }) => [...new Set([2, ...(opts?.pipes ?? [])])].sort();

/** The plain way, from the calling process: for tests and tools that launch a browser alone. */
export const spawnHere: Spawner = (command, args, env, opts) =>
  new Promise((resolve, reject) => {
    const pipes = pipesOf(opts);
    const stdio = Array.from({ length: Math.max(3, ...pipes.map((fd) => fd + 1)) }, (_, fd) => (pipes.includes(fd) ? 'pipe' : 'ignore'));
    const child = spawn(command, args, { env, detached: true, stdio: stdio as ('pipe' | 'ignore')[] });
    const exited = new Promise<ExitInfo>((done) => child.once('exit', (code, signal) => done({ code, signal })));
    child.once('error', reject);
    child.once('spawn', () =>
      resolve({ pid: child.pid!, stderr: child.stderr!, fds: Object.fromEntries(pipes.filter((fd) => fd !== 2).map((fd) => [fd, child.stdio[fd] as Readable])), exited }),
    );
  });

/** Runs a short command (xrandr, xprop) through a spawner to its end: its exit code and output. */
export async function runToEnd(
  spawn: Spawner,
  command: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ exitCode: number | null; stdout: string; stderr: string }> {
  const child = await spawn(command, args, env, { pipes: [1] });
  const out = { stdout: '', stderr: '' };
  child.fds[1]!.on('data', (d: Buffer) => (out.stdout += d));
  child.stderr.on('data', (d: Buffer) => (out.stderr += d));
  const [{ code }] = await Promise.all([child.exited, finished(child.fds[1]!).catch(() => {}), finished(child.stderr).catch(() => {})]);
  return { exitCode: code, ...out };
}

type Message =
  | { id: number; type: 'spawned'; pid: number }
  | { id: number; type: 'error'; message: string; code?: string }
  | { id: number; type: 'data'; fd: number; data: Uint8Array }
  | { id: number; type: 'closed'; fd: number }
  | { id: number; type: 'exit'; code: number | null; signal: NodeJS.Signals | null };

interface Pending {
  started?: { resolve: (c: LaunchedChild) => void; reject: (e: Error) => void };
  pid?: number;
  streams: Map<number, PassThrough>;
  exit: (e: ExitInfo) => void;
  exited: Promise<ExitInfo>;
  hasExited?: boolean;
}

/**
 * Forks the sessions' long-lived processes (Chromium, Xvfb, its window manager, x11vnc) from a
 * helper process (launcher.mjs) instead of the daemon: libuv's spawn() blocks the calling event
 * loop until the child has exec'd, which on two busy cores took up to 140 ms per browser, with
 * every API request waiting behind it. The helper is started on first use and again after it
 * died; a helper that dies takes its children with it (killed, reported as exited), since nothing
 * would report their exit any more. It carries the home's marker, so a daemon's restart reaps one
 * a crashed daemon left (it ends by itself once the daemon's IPC channel closes).
 */
export class ProcessLauncher {
  private helper?: ChildProcess;
  private next = 0;
  private readonly children = new Map<number, Pending>();
  private closed = false;

  constructor(private readonly opts: { home: string; log?: (msg: string, extra?: object) => void }) {}

  readonly spawn: Spawner = (command, args, env, opts) => {
    if (this.closed) return Promise.reject(new Error('the daemon is stopping'));
    const helper = this.ensureHelper();
    const id = ++this.next;
    const pipes = pipesOf(opts);
    let exit!: (e: ExitInfo) => void;
    const exited = new Promise<ExitInfo>((resolve) => (exit = resolve));
    return new Promise<LaunchedChild>((resolve, reject) => {
      this.children.set(id, { started: { resolve, reject }, streams: new Map(pipes.map((fd) => [fd, new PassThrough()])), exit, exited });
      helper.send({ id, command, args, env, pipes });
    });
  };

  /** The helper's pid while it runs. */
  get pid(): number | undefined {
    return this.helper?.pid;
  }

  /** Ends the helper (the children it started are the sessions', which stop them). */
  close(): void {
    this.closed = true;
    this.helper?.disconnect();
  }

  private ensureHelper(): ChildProcess {
    if (this.helper) return this.helper;
    const helper = fork(runnerScript('browser', 'launcher.mjs'), [], {
      execArgv: ['--max-semi-space-size=1'],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      env: { ...process.env, ...markedEnv(this.opts.home, 'launcher') },
    });
    helper.on('message', (m: Message) => this.receive(m));
    helper.once('exit', (code, signal) => this.lost(helper, code, signal));
    // An IPC write to a helper that just died: its 'exit' settles what was pending.
    helper.on('error', () => {});
    this.helper = helper;
    return helper;
  }

  private receive(m: Message): void {
    const c = this.children.get(m.id);
    if (!c) return;
    switch (m.type) {
      case 'spawned': {
        c.pid = m.pid;
        const fds = Object.fromEntries([...c.streams].filter(([fd]) => fd !== 2));
        c.started?.resolve({ pid: m.pid, stderr: c.streams.get(2)!, fds, exited: c.exited });
        c.started = undefined;
        break;
      }
      case 'error':
        c.started?.reject(Object.assign(new Error(m.message), { code: m.code }));
        c.started = undefined;
        // The child never ran: no exit will come.
        c.exit({ code: null, signal: null });
        for (const s of c.streams.values()) s.end();
        this.children.delete(m.id);
        break;
      case 'data':
        c.streams.get(m.fd)?.write(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength));
        break;
      case 'closed':
        c.streams.get(m.fd)?.end();
        this.forgetIfDone(m.id, c);
        break;
      case 'exit':
        c.hasExited = true;
        c.exit({ code: m.code, signal: m.signal });
        this.forgetIfDone(m.id, c);
        break;
    }
  }

  /** Forgets a child once it has exited and all its pipes are closed. */
  private forgetIfDone(id: number, c: Pending): void {
    if (c.hasExited && [...c.streams.values()].every((s) => s.writableEnded)) this.children.delete(id);
  }

  private lost(helper: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.helper === helper) this.helper = undefined;
    if (!this.closed) this.opts.log?.('the browser launcher exited; its browsers are stopped', { code, signal });
    for (const [id, c] of this.children) {
      if (c.pid !== undefined) {
        try {
          process.kill(-c.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      c.started?.reject(new Error('the browser launcher exited'));
      for (const s of c.streams.values()) s.end();
      c.exit({ code: null, signal: 'SIGKILL' });
      this.children.delete(id);
    }
  }
}
