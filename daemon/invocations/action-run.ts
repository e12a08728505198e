import { writeFile } from 'node:fs/promises';
import { execa, type ResultPromise } from 'execa';
import { killGroup, killMarked, markedEnv } from '../browser/procs.js';
import { LineSplitter } from '../line-splitter.js';

/** How an action ended, as the harness (or the lack of it) told. */
export type Outcome =
  | { status: 'succeeded'; output?: string }
  | { status: 'failed'; reason: string };

/** What the harness sends over IPC before it exits (see the apps interface). */
type HarnessMessage =
  | { type: 'result'; output?: string }
  | { type: 'error'; message?: string; stack?: string };

export interface ActionRunOptions {
  /** The harness command (`run` mode) with its arguments. */
  command: { file: string; args: string[] };
  cwd: string;
  /** The child's whole environment but the marker (nothing of the daemon's leaks in beyond it). */
  env: Record<string, string>;
  /** The home marker the child carries, so a stop (or a restarted daemon) finds every descendant. */
  marker: { home: string; id: string };
  onLog: (line: string) => void;
}

// An action's heap is capped so an allocation loop ends in the child, not the machine.
export const ACTION_MAX_OLD_SPACE_MB = 1024;

/**
 * One action running in its own child process (its own process group): the only owner of it.
 * stdout and stderr are the action's logs, line by line; the result comes over IPC. `stop()` kills
 * the group and anything still carrying the marker, and resolves once the child has exited.
 */
export class ActionRun {
  readonly outcome: Promise<Outcome>;
  private readonly child: ResultPromise;
  private lastStderr = '';

  private constructor(private readonly opts: ActionRunOptions) {
    this.child = execa(opts.command.file, [`--max-old-space-size=${ACTION_MAX_OLD_SPACE_MB}`, ...opts.command.args], {
      cwd: opts.cwd,
      env: { ...opts.env, ...markedEnv(opts.marker.home, opts.marker.id) },
      extendEnv: false,
      ipc: true,
      serialization: 'json',
      detached: true,
      stdin: 'ignore',
      buffer: { stdout: false, stderr: false, ipc: true },
      reject: false,
    });
    const stdout = new LineSplitter(opts.onLog);
    const stderr = new LineSplitter((line) => {
      if (line.trim()) this.lastStderr = line;
      opts.onLog(line);
    });
    this.child.stdout?.on('data', (chunk: Buffer) => stdout.write(chunk));
    this.child.stderr?.on('data', (chunk: Buffer) => stderr.write(chunk));
    this.outcome = this.child.then((result) => {
      stdout.end();
      stderr.end();
      return this.outcomeOf(result.ipcOutput as HarnessMessage[], result.exitCode, result.signal, result.failed ? result.shortMessage : undefined);
    });
    // The kernel's OOM killer then picks the action before the daemon (raising one's own child's
    // score needs no privilege).
    if (this.child.pid) void writeFile(`/proc/${this.child.pid}/oom_score_adj`, '1000').catch(() => {});
  }

  static start(opts: ActionRunOptions): ActionRun {
    return new ActionRun(opts);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Kills the action and whatever it started; resolves once the child has exited. */
  async stop(): Promise<void> {
    if (this.child.pid) killGroup(this.child.pid);
    await killMarked(this.opts.marker.home, this.opts.marker.id);
    await this.outcome;
  }

  private outcomeOf(messages: HarnessMessage[], exitCode?: number, signal?: string, spawnError?: string): Outcome {
    const message = messages.findLast((m) => m?.type === 'result' || m?.type === 'error');
    if (message?.type === 'result') return { status: 'succeeded', ...(message.output !== undefined ? { output: message.output } : {}) };
    if (message?.type === 'error') return { status: 'failed', reason: message.message || 'the action threw' };
    const how = signal ? `was killed by ${signal}` : exitCode !== undefined ? `exited with code ${exitCode}` : 'could not start';
    const detail = this.lastStderr || spawnError;
    return { status: 'failed', reason: `the action's process ${how} before returning${detail ? `: ${detail}` : ''}` };
  }
}
