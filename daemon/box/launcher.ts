import { fork, spawn, type ChildProcess } from 'node:child_process';
import { PassThrough, type Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { runnerScript } from '../lib/node-runner.js';
import { markedEnv } from '../lib/procs.js';

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
      resolve({
        pid: child.pid!,
        stderr: child.stderr!,
        fds: Object.fromEntries(pipes.filter((fd) => fd !== 2).map((fd) => [fd, child.stdio[fd] as Readable])),
        exited,
      }),
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

/** What the launcher needs to start one box (built by daemon/box/box-spec.ts). */
export interface BoxSpec {
  /** setpriv ... bwrap --args 6 -- <the agent's command line>; the rest of bubblewrap's arguments go over fd 6. */
  argv: string[];
  bwrapArgs: string[];
  env: Record<string, string>;
  /** Contents of files bubblewrap copies in (--ro-bind-data), on fds 7, 8, ... in order. */
  files: string[];
  /** Host paths the launcher opens and hands to bubblewrap as descriptors, on the fds after the files'. */
  bindFds: string[];
  uidMap?: string;
  gidMap?: string;
  /** Single-uid boxes of a daemon that is not root must deny setgroups before their gid map. */
  denySetgroups?: boolean;
  /** cgroup.procs files the box's init joins before anything in it runs. */
  cgroupProcs?: string[];
  /** The box's disk: a tmpfs mounted by the launcher (as root), its root `uid`:`rootGid` 0710, its directories `uid`:`gid`. */
  disk?: { mount: boolean; dir: string; bytes: number; uid: number; gid: number; rootGid: number; layout: { path: string; mode: number }[] };
  /** The box's user-mode network: pasta, attached to the box's namespaces by pid. */
  pasta?: { command: string; args: string[] };
}

/** What a box tells the daemon through the launcher. */
export interface BoxEvents {
  message(msg: any, handle?: unknown): void;
  /** bubblewrap (and so the whole box) exited without being stopped. */
  exit(info: { code: number | null; signal: NodeJS.Signals | null; stderr: string }): void;
  stderr?(data: Buffer): void;
  network?(info: { ok: boolean; message?: string; pid?: number }): void;
}

type BoxMessage =
  | { type: 'box-started'; box: string; pid: number; childPid: number }
  | { type: 'box-error'; box: string; message: string }
  | { type: 'box-msg'; box: string; msg: unknown }
  | { type: 'box-exit'; box: string; code: number | null; signal: NodeJS.Signals | null; stderr: string }
  | { type: 'box-stderr'; box: string; data: Uint8Array }
  | { type: 'box-network'; box: string; ok: boolean; message?: string; pid?: number }
  | { type: 'box-stopped'; box: string };

type Message =
  | BoxMessage
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
  private readonly boxes = new Map<
    string,
    { events: BoxEvents; started?: { resolve: (p: { pid: number; childPid: number }) => void; reject: (e: Error) => void }; stopped?: () => void }
  >();
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

  /**
   * Starts a box (see launcher.mjs): resolves once its user namespace has its maps and it runs,
   * with the pid of its bubblewrap (on the host) and of its init; the agent's own 'ready' comes
   * later as a message.
   */
  startBox(id: string, spec: BoxSpec, events: BoxEvents): Promise<{ pid: number; childPid: number }> {
    if (this.closed) return Promise.reject(new Error('the daemon is stopping'));
    const helper = this.ensureHelper();
    return new Promise((resolve, reject) => {
      this.boxes.set(id, { events, started: { resolve, reject } });
      helper.send({ type: 'box-start', box: id, spec });
    });
  }

  /** A message (and a descriptor) for a box's agent. */
  sendToBox(id: string, msg: object, handle?: unknown): void {
    if (!this.boxes.has(id) || !this.helper) return;
    try {
      this.helper.send({ type: 'box-send', box: id, msg }, handle as never);
    } catch {
      // The launcher is gone: lost() ends the box.
    }
  }

  /** Kills a box (everything in it) and its network; its disk is unmounted unless kept for a later save. */
  stopBox(id: string, keepDisk = false): Promise<void> {
    const box = this.boxes.get(id);
    if (!box || !this.helper) return Promise.resolve();
    return new Promise((resolve) => {
      box.stopped = resolve;
      this.helper!.send({ type: 'box-stop', box: id, keepDisk });
    });
  }

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
    const helper = fork(runnerScript('box', 'launcher.mjs'), [], {
      execArgv: ['--max-semi-space-size=1'],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      env: { ...process.env, ...markedEnv(this.opts.home, 'launcher') },
    });
    helper.on('message', (m: Message, handle: unknown) => this.receive(m, handle));
    helper.once('exit', (code, signal) => this.lost(helper, code, signal));
    // An IPC write to a helper that just died: its 'exit' settles what was pending.
    helper.on('error', () => {});
    this.helper = helper;
    return helper;
  }

  private receiveBox(m: BoxMessage, handle: unknown): void {
    const box = this.boxes.get(m.box);
    if (!box) {
      (handle as { close?: () => void } | undefined)?.close?.();
      return;
    }
    switch (m.type) {
      case 'box-started':
        box.started?.resolve({ pid: m.pid, childPid: m.childPid });
        box.started = undefined;
        break;
      case 'box-error':
        box.started?.reject(new Error(m.message));
        box.started = undefined;
        break;
      case 'box-msg':
        box.events.message(m.msg, handle);
        break;
      case 'box-stderr':
        box.events.stderr?.(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength));
        break;
      case 'box-network':
        box.events.network?.({ ok: m.ok, message: m.message, pid: m.pid });
        break;
      case 'box-exit':
        box.started?.reject(new Error(`the box exited at its start (${m.signal ?? m.code}): ${m.stderr.trim()}`));
        box.started = undefined;
        this.boxes.delete(m.box);
        box.events.exit({ code: m.code, signal: m.signal, stderr: m.stderr });
        break;
      case 'box-stopped':
        this.boxes.delete(m.box);
        box.stopped?.();
        break;
    }
  }

  private receive(m: Message, handle?: unknown): void {
    if (m.type.startsWith('box-')) return this.receiveBox(m as BoxMessage, handle);
    const c = this.children.get((m as { id: number }).id);
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
    // Its boxes died with it (bubblewrap's --die-with-parent).
    for (const [id, box] of this.boxes) {
      this.boxes.delete(id);
      box.started?.reject(new Error('the browser launcher exited'));
      if (box.stopped) box.stopped();
      else box.events.exit({ code: null, signal: 'SIGKILL', stderr: 'the launcher exited' });
    }
  }
}
