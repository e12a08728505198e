import { randomUUID } from 'node:crypto';
import { constants } from 'node:os';
import { readlink } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { execa, type ResultPromise } from 'execa';
import type { ProcessExecBody, ProcessExecResult, ProcessSpawnBody, ProcessSpawnResult, ProcessStatus } from '../../src/api/process.js';
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError, RateLimitError } from '../../src/errors.js';
import { killGroup, signal as signalPid } from '../browser/procs.js';
import { sessionPath } from '../fs/paths.js';
import type { EventStream } from '../http/sse.js';
import { hostTwin, SANDBOX_HOME, type Sandbox, type SessionRoots } from '../sandbox/sandbox.js';
import { children, descendants, treeUsage } from './proc-tree.js';

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
  sandbox: Sandbox;
  roots: SessionRoots;
  /** PATH, the session's markers (a restarted daemon reaps what carries them) and DISPLAY when headful. */
  env: Record<string, string>;
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
    private readonly child: ResultPromise,
    readonly tty: boolean,
    private readonly sandboxed: boolean,
    timeoutSec: number | null | undefined,
  ) {
    // A process that closed its input (or exited) makes a later write fail; that is the client's answer, not a crash.
    child.stdin?.on('error', () => {});
    for (const stream of ['stdout', 'stderr'] as const) child[stream]?.on('data', (data: Buffer) => this.output({ stream, data }));
    let graceTimer: NodeJS.Timeout | undefined;
    const timer = timeoutSec
      ? setTimeout(() => {
          this.timedOut = true;
          graceTimer = expire(this.pid, this.sandboxed);
        }, timeoutSec * 1000)
      : undefined;
    this.exited = child.then((r) => {
      clearTimeout(timer);
      clearTimeout(graceTimer);
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

  get pid(): number {
    return this.child.pid!;
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
    if (this.running) await signalProgram(this.pid, this.sandboxed, SIGNALS[name]);
  }

  /** Resizes the pseudo-terminal: stty on the terminal the program holds (its stdin), opened through /proc. */
  async resize(rows: number, cols: number): Promise<void> {
    if (!this.tty) throw new BadRequestError(`process ${this.id} has no pseudo-terminal (spawn it with allocate_tty)`);
    if (!this.running) throw new ConflictError(`process ${this.id} has exited`);
    for (const pid of await descendants(this.pid)) {
      const target = await readlink(`/proc/${pid}/fd/0`).catch(() => '');
      if (!target.startsWith('/dev/pts/')) continue;
      const r = await execa('stty', ['-F', `/proc/${pid}/fd/0`, 'rows', String(rows), 'cols', String(cols)], { reject: false });
      if (r.exitCode === 0) return;
    }
    throw new ConflictError(`process ${this.id}: its terminal is gone`);
  }

  async status(): Promise<ProcessStatus> {
    const usage = this.running ? await treeUsage(this.pid) : { cpuSeconds: 0, rssBytes: 0 };
    const seconds = Math.max((Date.now() - this.startedAt.getTime()) / 1000, 0.001);
    return {
      state: this.running ? 'running' : 'exited',
      exit_code: this.exitCode,
      cpu_pct: Math.round((usage.cpuSeconds / seconds) * 1000) / 10,
      mem_bytes: usage.rssBytes,
    };
  }
}

/**
 * Signals a program and everything it started. In the sandbox the first two processes are
 * bubblewrap's (its monitor and the namespace's init, which ignores signals it has no handler
 * for): a TERM to them would end the program without the chance to handle it.
 */
async function signalProgram(pid: number, sandboxed: boolean, sig: NodeJS.Signals): Promise<void> {
  if (sig === 'SIGKILL') return void killGroup(pid, 'SIGKILL');
  const tree = await descendants(pid);
  const inits = new Set(sandboxed ? await children(pid) : []);
  for (const p of sandboxed ? tree.filter((t) => !inits.has(t)) : [pid, ...tree]) signalPid(p, sig);
}

/** timeout_sec ran out: TERM, then KILL KILL_GRACE_MS later (the caller clears that timer if the program exits first). */
function expire(pid: number, sandboxed: boolean): NodeJS.Timeout {
  void signalProgram(pid, sandboxed, 'SIGTERM');
  return setTimeout(() => killGroup(pid, 'SIGKILL'), KILL_GRACE_MS).unref();
}

/** bubblewrap exits 128+N for a program killed by signal N; unwrapped, Node reports the signal. */
function exitCodeOf(r: { exitCode?: number; signal?: string }): number {
  if (r.exitCode !== undefined) return r.exitCode;
  const n = r.signal ? constants.signals[r.signal as NodeJS.Signals] : undefined;
  return n ? 128 + n : 255;
}

/**
 * The processes of one session (Kernel's browsers.process): each runs in the session's
 * namespace (the same bubblewrap wrap as its browser and the filesystem API, so it sees the
 * session's files and nothing of the host's), as the session's user, in a process group of its
 * own; it keeps the session active while it runs and is killed when the session ends.
 */
export class SessionProcesses {
  private readonly processes = new Map<string, SessionProcess>();
  private readonly helpers = new Set<ResultPromise>();
  private closed = false;

  constructor(private readonly deps: SessionProcessesDeps) {}

  /** Runs a command to its end; the client hanging up kills it. */
  async exec(body: ProcessExecBody, abort: AbortSignal): Promise<ProcessExecResult> {
    const r = await this.runToEnd(body, { abort });
    return { exit_code: r.exitCode, stdout_b64: r.stdout.toString('base64'), stderr_b64: r.stderr.toString('base64'), duration_ms: r.durationMs };
  }

  /**
   * Runs a program to its end (exec, and the daemon's own helpers such as the Playwright runner):
   * `input` is its whole stdin (none otherwise: a program reading it sees the end at once), and
   * with `resultPipe` it may write a result on fd 3, apart from its output.
   */
  async runToEnd(
    body: ProcessExecBody,
    opts: { abort: AbortSignal; input?: string; resultPipe?: boolean; readOnly?: string[] },
  ): Promise<{ exitCode: number; timedOut: boolean; stdout: Buffer; stderr: Buffer; result: Buffer; durationMs: number }> {
    const started = Date.now();
    const child = this.start(body, { tty: false, input: opts.input ?? '', resultPipe: opts.resultPipe, readOnly: opts.readOnly });
    const release = this.deps.hold();
    const kill = () => killGroup(child.pid!, 'SIGKILL');
    opts.abort.addEventListener('abort', kill, { once: true });
    let timedOut = false;
    let graceTimer: NodeJS.Timeout | undefined;
    const timer = body.timeout_sec
      ? setTimeout(() => {
          timedOut = true;
          graceTimer = expire(child.pid!, this.deps.sandbox.enabled);
        }, body.timeout_sec * 1000)
      : undefined;
    try {
      const resultStream = opts.resultPipe ? (child.stdio[3] as Readable) : undefined;
      const [stdout, stderr, result, done] = await Promise.all([
        collect(child.stdout!),
        collect(child.stderr!),
        resultStream ? collect(resultStream) : Buffer.alloc(0),
        child,
      ]);
      return { exitCode: timedOut ? TIMEOUT_EXIT : exitCodeOf(done), timedOut, stdout, stderr, result, durationMs: Date.now() - started };
    } finally {
      clearTimeout(timer);
      clearTimeout(graceTimer);
      opts.abort.removeEventListener('abort', kill);
      release();
    }
  }

  spawn(body: ProcessSpawnBody): ProcessSpawnResult {
    const running = [...this.processes.values()].filter((p) => p.running).length;
    if (running >= RUNNING_MAX) throw new RateLimitError(`this session already runs ${running} processes`, 5);
    const tty = body.allocate_tty === true;
    const child = this.start(body, { tty, rows: body.rows ?? 24, cols: body.cols ?? 80 });
    const proc = new SessionProcess(child, tty, this.deps.sandbox.enabled, body.timeout_sec);
    this.processes.set(proc.id, proc);
    const release = this.deps.hold();
    void proc.exited.then(() => {
      release();
      this.forgetOldExited();
    });
    return { process_id: proc.id, pid: proc.pid, started_at: proc.startedAt.toISOString() };
  }

  get(processId: string): SessionProcess {
    const proc = this.processes.get(processId);
    if (!proc) throw new NotFoundError(`process ${processId} not found in this session`);
    return proc;
  }

  /**
   * A long-running program of the daemon's own in the session (an fs watch's inotifywait): in the
   * namespace as the session's user like the rest, not shown among the session's processes,
   * killed when the session ends. `stdin`: the daemon writes to it (else it is closed at once);
   * `readOnly`: host paths it needs (rbrowse's own files).
   */
  helper(argv: string[], opts: { stdin?: boolean; readOnly?: string[] } = {}): ResultPromise {
    const [command, ...args] = argv;
    const child = this.start({ command: command!, args }, { tty: false, input: opts.stdin ? undefined : '', readOnly: opts.readOnly });
    this.helpers.add(child);
    void child.finally(() => this.helpers.delete(child));
    return child;
  }

  /** Kills every process (the session is ending) and waits for them. */
  async stop(): Promise<void> {
    this.closed = true;
    const running = [...this.processes.values()].filter((p) => p.running);
    for (const p of running) killGroup(p.pid, 'SIGKILL');
    const helpers = [...this.helpers];
    for (const h of helpers) killGroup(h.pid!, 'SIGKILL');
    await Promise.all([...running.map((p) => p.exited), ...helpers]);
  }

  private forgetOldExited(): void {
    const exited = [...this.processes.values()].filter((p) => !p.running);
    for (const p of exited.slice(0, Math.max(0, exited.length - EXITED_KEPT))) this.processes.delete(p.id);
  }

  private start(
    body: ProcessExecBody,
    opts: { tty: boolean; rows?: number; cols?: number; input?: string; resultPipe?: boolean; readOnly?: string[] },
  ): ResultPromise {
    if (this.closed) throw new NotFoundError('the session is ending');
    this.checkUser(body);
    const cwd = body.cwd ? sessionPath('cwd', body.cwd) : SANDBOX_HOME;
    const { sandbox, roots } = this.deps;
    let argv = [body.command, ...(body.args ?? [])];
    if (opts.tty) {
      // util-linux's script puts the program on a new pseudo-terminal, sized first by stty.
      const line = `stty rows ${opts.rows} cols ${opts.cols} 2>/dev/null; exec ${argv.map(quote).join(' ')}`;
      argv = ['script', '--quiet', '--flush', '--return', '--command', line, '/dev/null'];
    }
    const [file, ...args] = [...sandbox.wrap(roots, { display: this.deps.display, chdir: cwd, readOnly: opts.readOnly }), ...argv];
    const env = {
      LANG: 'C.UTF-8',
      ...(opts.tty ? { TERM: 'xterm-256color', SHELL: '/bin/sh' } : {}),
      ...sandbox.insideEnv(roots),
      ...(this.deps.display === undefined ? {} : { DISPLAY: `:${this.deps.display}` }),
      ...body.env,
      // Last, so the client cannot drop them: they let a restarted daemon reap the process.
      ...this.deps.env,
      ...(body.env?.PATH ? { PATH: body.env.PATH } : {}),
    };
    return execa(file!, args, {
      env,
      extendEnv: false,
      // Without bubblewrap the session's inside paths are mapped onto its host directories.
      cwd: sandbox.enabled ? undefined : hostPath(roots, cwd),
      detached: true,
      cleanup: false,
      reject: false,
      buffer: false,
      ...(opts.input === undefined ? { stdin: 'pipe' as const } : { input: opts.input }),
      ...(opts.resultPipe ? { stdio: ['pipe', 'pipe', 'pipe', 'pipe'] as const } : {}),
      encoding: 'buffer',
    });
  }

  /** Processes run as the session's user: a session is not a VM here, and root would reach the host. */
  private checkUser(body: ProcessExecBody): void {
    if (body.as_root) throw new ForbiddenError("as_root: processes run as the session's user (a session is not a virtual machine here)");
    if (body.as_user === undefined || body.as_user === null || body.as_user === '') return;
    const uid = this.deps.sandbox.user?.uid ?? process.getuid?.();
    if (body.as_user !== 'kernel' && body.as_user !== String(uid)) {
      throw new ForbiddenError(`as_user: processes run as the session's user ("kernel", uid ${uid}); ${body.as_user} is not available`);
    }
  }
}

function hostPath(roots: SessionRoots, inside: string): string {
  const host = hostTwin(roots, inside);
  if (!host) throw new ForbiddenError(`cwd: only /home/kernel and /tmp are reachable in this session`);
  return host;
}

/** Reads a stream to its end, keeping at most EXEC_OUTPUT_MAX bytes. */
async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let kept = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    if (kept >= EXEC_OUTPUT_MAX) continue;
    const part = chunk.subarray(0, EXEC_OUTPUT_MAX - kept);
    chunks.push(part);
    kept += part.length;
  }
  return Buffer.concat(chunks);
}
