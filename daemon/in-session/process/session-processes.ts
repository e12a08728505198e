import { randomUUID } from 'node:crypto';
import { addAbortListener } from 'node:events';
import { constants } from 'node:os';
import type { ProcessExecBody, ProcessExecResult, ProcessSpawnBody, ProcessSpawnResult, ProcessStatus } from '../../../src/api/process.js';
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError, RateLimitError } from '../../../src/errors.js';
import type { Box, BoxProcess, ProcessExit } from '../../box/box.js';
import { outputOf } from '../../box/box-process.js';
import { BOX_USER } from '../../box/box-spec.js';
import { sessionPath } from '../fs/paths.js';
import type { EventStream } from '../../lib/sse.js';
import { boxEnv } from '../../box/box-env.js';
import type { LiveSession, ServiceKind } from '../../sessions/live-session.js';

/** What exec keeps of each output stream; the rest is read and dropped, so the process never blocks on a full pipe. */
const EXEC_OUTPUT_MAX = 16 * 1024 * 1024;
/** What a spawned process's stream replays to a late subscriber; older output is dropped first. */
const REPLAY_MAX = 8 * 1024 * 1024;
/** Input waiting for a process that does not read it; beyond this a stdin request is refused rather than left hanging. */
const STDIN_PENDING_MAX = 1024 * 1024;
/** Processes at once per session, and exited ones kept for their status and output. */
const RUNNING_MAX = 64;
const EXITED_KEPT = 64;
/** After timeout_sec: TERM, then KILL this much later. Exit code 124, as coreutils' timeout reports. */
const KILL_GRACE_MS = 2000;
const TIMEOUT_EXIT = 124;

const SIGNALS = { TERM: 'SIGTERM', KILL: 'SIGKILL', INT: 'SIGINT', HUP: 'SIGHUP' } as const satisfies Record<string, NodeJS.Signals>;

/** One shell word, for the command line `script` hands to the shell on a pseudo-terminal. */
const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

export interface SessionProcessesDeps {
  box: Box;
  display?: number;
  /** Marks the session active while a process runs; returns the release. */
  hold: () => () => void;
}

type Output = { stream: 'stdout' | 'stderr'; data: Buffer };

/** One process started in the session. */
class SessionProcess {
  readonly id = randomUUID();
  readonly startedAt = new Date();
  exitCode: number | null = null;
  private timedOut = false;
  private readonly replay: Output[] = [];
  private replayBytes = 0;
  private readonly subscribers = new Set<EventStream>();
  readonly exited: Promise<number>;

  constructor(
    private readonly child: BoxProcess,
    private readonly box: Box,
    readonly tty: boolean,
    timeoutSec: number | null | undefined,
  ) {
    // A process that closed its input (or exited) makes a later write fail; that is the client's answer, not a crash.
    child.stdin?.on('error', () => {});
    for (const stream of ['stdout', 'stderr'] as const) child[stream]?.on('data', (data: Buffer) => this.output({ stream, data }));
    let graceTimer: NodeJS.Timeout | undefined;
    const timer = timeoutSec
      ? setTimeout(() => {
          this.timedOut = true;
          graceTimer = expire(child);
        }, timeoutSec * 1000)
      : undefined;
    this.exited = child.exited.then((r) => {
      clearTimeout(timer);
      clearTimeout(graceTimer);
      if (r.error) this.output({ stream: 'stderr', data: Buffer.from(`${startError(r.error)}\n`) });
      const code = this.timedOut ? TIMEOUT_EXIT : exitCodeOf(r);
      this.exitCode = code;
      for (const s of this.subscribers) {
        s.send({ event: 'exit', exit_code: code });
        s.end();
      }
      this.subscribers.clear();
      return code;
    });
  }

  /** Its pid in the session's box. */
  get pid(): number {
    return this.child.pid ?? 0;
  }

  get running(): boolean {
    return this.exitCode === null;
  }

  private output(out: Output): void {
    const event = { event: 'output', stream: out.stream, data_b64: out.data.toString('base64') };
    for (const s of this.subscribers) s.send(event);
    this.replay.push(out);
    this.replayBytes += out.data.length;
    while (this.replayBytes > REPLAY_MAX) this.replayBytes -= this.replay.shift()!.data.length;
  }

  /** Everything written so far, then live output, then the exit event (at once for one that exited). */
  subscribe(stream: EventStream): void {
    for (const out of this.replay) stream.send({ event: 'output', stream: out.stream, data_b64: out.data.toString('base64') });
    if (!this.running) {
      stream.send({ event: 'exit', exit_code: this.exitCode });
      stream.end();
      return;
    }
    this.subscribers.add(stream);
    stream.onClose(() => this.subscribers.delete(stream));
  }

  async write(data: Buffer): Promise<number> {
    const stdin = this.child.stdin;
    if (!this.running || !stdin || stdin.destroyed || !stdin.writable) throw new ConflictError(`process ${this.id} has exited or closed its input`);
    if (stdin.writableLength + data.length > STDIN_PENDING_MAX) {
      throw new ConflictError(`process ${this.id} is not reading its input (${stdin.writableLength} bytes still waiting)`);
    }
    stdin.write(data);
    return data.length;
  }

  async signal(name: keyof typeof SIGNALS): Promise<void> {
    if (this.running) this.child.kill(SIGNALS[name]);
  }

  /**
   * Resizes the pseudo-terminal: stty, in the box, on the terminal the program holds (the stdin
   * of script's child, found through the box's /proc).
   */
  async resize(rows: number, cols: number): Promise<void> {
    if (!this.tty) throw new BadRequestError(`process ${this.id} has no pseudo-terminal (spawn it with allocate_tty)`);
    if (!this.running) throw new ConflictError(`process ${this.id} has exited`);
    const script =
      'for d in /proc/[0-9]*; do [ "$(cat "$d/stat" 2>/dev/null | cut -d" " -f4)" = "$1" ] || continue; t=$(readlink "$d/fd/0"); case "$t" in /dev/pts/*) exec stty -F "$t" rows "$2" cols "$3";; esac; done; exit 1';
    const r = await outputOf(this.box.spawn(['sh', '-c', script, 'resize', String(this.pid), String(rows), String(cols)]));
    if (r.code !== 0) throw new ConflictError(`process ${this.id}: its terminal is gone`);
  }

  async status(): Promise<ProcessStatus> {
    const usage = this.running ? await this.box.usage(this.child).catch(() => ({ cpuSeconds: 0, rssBytes: 0 })) : { cpuSeconds: 0, rssBytes: 0 };
    const seconds = Math.max((Date.now() - this.startedAt.getTime()) / 1000, 0.001);
    return {
      state: this.running ? 'running' : 'exited',
      exit_code: this.exitCode,
      cpu_pct: Math.round((usage.cpuSeconds / seconds) * 1000) / 10,
      mem_bytes: usage.rssBytes,
    };
  }
}

/** timeout_sec ran out: TERM to the program's group, then KILL KILL_GRACE_MS later (the caller clears that timer if it exits first). */
function expire(child: BoxProcess): NodeJS.Timeout {
  child.kill('SIGTERM');
  return setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS).unref();
}

/** As a shell reports it: the exit code, or 128+N for a program killed by signal N; 127 and 126 for one that could not start. */
function exitCodeOf(r: ProcessExit): number {
  if (r.error) return r.error.code === 'ENOENT' ? 127 : 126;
  if (r.code !== null) return r.code;
  const n = r.signal ? constants.signals[r.signal] : undefined;
  return n ? 128 + n : 255;
}

/** The 400 of an exec or spawn whose program could not be started: no such program, or not one the session user may run. */
function notStarted(body: ProcessExecBody, error: { message: string; code?: string }): BadRequestError {
  const missing = body.cwd ? `no such program in the session, or no directory ${body.cwd}` : 'no such program in the session';
  const why = error.code === 'ENOENT' ? missing : error.code === 'EACCES' ? 'not executable by the session user' : (error.code ?? error.message);
  return BadRequestError.field('command', `${body.command}: ${why}`);
}

/** What a shell would print for a program that could not be started (never the names of rbrowse's own tools). */
function startError(error: { message: string; code?: string }): string {
  const program = /^spawn (\S+)/.exec(error.message)?.[1] ?? 'the command';
  if (error.code === 'ENOENT') return `${program}: command not found`;
  if (error.code === 'EACCES') return `${program}: permission denied`;
  return `${program}: ${error.code ?? error.message}`;
}

/**
 * The processes of one session (Kernel's browsers.process): each runs in the session's
 * namespace (the same bubblewrap wrap as its browser and the filesystem API, so it sees the
 * session's files and nothing of the host's), as the session's user, in a process group of its
 * own; it keeps the session active while it runs and is killed when the session ends.
 */
export class SessionProcesses {
  private readonly processes = new Map<string, SessionProcess>();
  private readonly helpers = new Set<BoxProcess>();
  private closed = false;

  constructor(private readonly deps: SessionProcessesDeps) {}

  /** Runs a command to its end; the client hanging up kills it. */
  async exec(body: ProcessExecBody, abort: AbortSignal): Promise<ProcessExecResult> {
    const r = await this.runToEnd(body, { abort, refuseMissing: true });
    return { exit_code: r.exitCode, stdout_b64: r.stdout.toString('base64'), stderr_b64: r.stderr.toString('base64'), duration_ms: r.durationMs };
  }

  /**
   * Runs a program to its end (exec, and the daemon's own helpers such as the Playwright runner):
   * `input` is its whole stdin (none otherwise: a program reading it sees the end at once), and
   * with `resultPipe` it may write a result on fd 3, apart from its output.
   */
  async runToEnd(
    body: ProcessExecBody,
    opts: { abort: AbortSignal; input?: string; resultPipe?: boolean; refuseMissing?: boolean },
  ): Promise<{ exitCode: number; timedOut: boolean; stdout: Buffer; stderr: Buffer; result: Buffer; durationMs: number }> {
    const started = Date.now();
    const child = this.start(body, { tty: false, input: opts.input ?? '', extraFds: opts.resultPipe ? [3] : undefined });
    const release = this.deps.hold();
    // Also when the client left before this: an abort that came already still kills it.
    const aborted = addAbortListener(opts.abort, () => child.kill('SIGKILL'));
    let timedOut = false;
    let graceTimer: NodeJS.Timeout | undefined;
    const timer = body.timeout_sec
      ? setTimeout(() => {
          timedOut = true;
          graceTimer = expire(child);
        }, body.timeout_sec * 1000)
      : undefined;
    try {
      const done = await outputOf(child, EXEC_OUTPUT_MAX);
      if (opts.refuseMissing && done.error) throw notStarted(body, done.error);
      const stderr = done.error ? Buffer.concat([done.stderr, Buffer.from(`${startError(done.error)}\n`)]) : done.stderr;
      return {
        exitCode: timedOut ? TIMEOUT_EXIT : exitCodeOf(done),
        timedOut,
        stdout: done.stdout,
        stderr,
        result: done.fds[3] ?? Buffer.alloc(0),
        durationMs: Date.now() - started,
      };
    } finally {
      clearTimeout(timer);
      clearTimeout(graceTimer);
      aborted[Symbol.dispose]();
      release();
    }
  }

  /** Starts a process; answers once it runs (its pid known), or once it could not start (it then shows as exited, 127). */
  async spawn(body: ProcessSpawnBody): Promise<ProcessSpawnResult> {
    const running = [...this.processes.values()].filter((p) => p.running).length;
    if (running >= RUNNING_MAX) throw new RateLimitError(`this session already runs ${running} processes`, 5);
    const tty = body.allocate_tty === true;
    const child = this.start(body, { tty, rows: body.rows ?? 24, cols: body.cols ?? 80 });
    const proc = new SessionProcess(child, this.deps.box, tty, body.timeout_sec);
    this.processes.set(proc.id, proc);
    const release = this.deps.hold();
    void proc.exited.then(() => {
      release();
      this.forgetOldExited();
    });
    const failed = await child.started.then(
      () => undefined,
      (err: { message: string; code?: string }) => err,
    );
    // Kernel answers a program that cannot start with an error, not a process that ran.
    if (failed && !tty) {
      this.processes.delete(proc.id);
      throw notStarted(body, failed);
    }
    return { process_id: proc.id, pid: proc.pid, started_at: proc.startedAt.toISOString() };
  }

  get(processId: string): SessionProcess {
    const proc = this.processes.get(processId);
    if (!proc) throw new NotFoundError(`process ${processId} not found in this session`);
    return proc;
  }

  /**
   * A long-running program of the daemon's own in the session (an fs watch's inotifywait, the
   * BiDi mapper, the REPL's runtime): in the box as the session's user like the rest, not shown
   * among the session's processes, killed when the session ends. `stdin`: the daemon writes to it
   * (else it is closed at once); `extraFds`: more outputs it answers on.
   */
  helper(argv: string[], opts: { stdin?: boolean; extraFds?: number[] } = {}): BoxProcess {
    const [command, ...args] = argv;
    const child = this.start({ command: command!, args }, { tty: false, input: opts.stdin ? undefined : '', extraFds: opts.extraFds });
    this.helpers.add(child);
    void child.exited.then(() => this.helpers.delete(child));
    return child;
  }

  /** Kills every process (the session is ending) and waits for them. */
  async stop(): Promise<void> {
    this.closed = true;
    const running = [...this.processes.values()].filter((p) => p.running);
    for (const p of running) void p.signal('KILL');
    const helpers = [...this.helpers];
    for (const h of helpers) h.kill('SIGKILL');
    await Promise.all([...running.map((p) => p.exited), ...helpers.map((h) => h.exited)]);
  }

  private forgetOldExited(): void {
    const exited = [...this.processes.values()].filter((p) => !p.running);
    for (const p of exited.slice(0, Math.max(0, exited.length - EXITED_KEPT))) this.processes.delete(p.id);
  }

  private start(body: ProcessExecBody, opts: { tty: boolean; rows?: number; cols?: number; input?: string; extraFds?: number[] }): BoxProcess {
    if (this.closed) throw new NotFoundError('the session is ending');
    this.checkUser(body);
    const cwd = body.cwd ? sessionPath('cwd', body.cwd) : BOX_USER.home;
    let argv = [body.command, ...(body.args ?? [])];
    if (opts.tty) {
      // util-linux's script puts the program on a new pseudo-terminal, sized first by stty.
      const line = `stty rows ${opts.rows} cols ${opts.cols} 2>/dev/null; exec ${argv.map(quote).join(' ')}`;
      argv = ['script', '--quiet', '--flush', '--return', '--command', line, '/dev/null'];
    }
    // The client's env is the program's alone: it runs as the box's user, in the box, and the
    // daemon runs nothing with it.
    const env = {
      ...boxEnv(this.deps.display),
      ...(opts.tty ? { TERM: 'xterm-256color', SHELL: '/bin/sh' } : {}),
      ...body.env,
    };
    return this.deps.box.spawn(argv, {
      env,
      cwd,
      stdin: opts.input === undefined ? 'pipe' : opts.input,
      ...(opts.extraFds ? { extraFds: opts.extraFds } : {}),
    });
  }

  /** Processes run as the session's user, "kernel" (uid 1000 in its box); root would be the box's agent. */
  private checkUser(body: ProcessExecBody): void {
    if (body.as_root) throw new ForbiddenError("as_root: processes run as the session's user (a session is not a virtual machine here)");
    if (body.as_user === undefined || body.as_user === null || body.as_user === '') return;
    if (body.as_user !== BOX_USER.name && body.as_user !== String(BOX_USER.uid)) {
      throw new ForbiddenError(
        `as_user: processes run as the session's user ("${BOX_USER.name}", uid ${BOX_USER.uid}); ${body.as_user} is not available`,
      );
    }
  }
}

const newProcesses: ServiceKind<SessionProcesses> = (session) =>
  new SessionProcesses({ box: session.box, display: session.display?.number, hold: () => session.hold('api') });

/** Processes run in this session (its box, its user); they end with it. */
export const processesOf = (session: LiveSession): SessionProcesses => session.service(newProcesses);
