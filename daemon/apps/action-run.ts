import type { Box, BoxProcess } from '../box/box.js';
import type { Boxes } from '../box/boxes.js';
import { BOX_APP } from '../box/box-spec.js';
import { RESULT_FD } from './harness-command.js';
import { LineSplitter } from '../lib/line-splitter.js';

/** How an action ended, as the harness (or the lack of it) told. */
export type Outcome = { status: 'succeeded'; output?: string } | { status: 'failed'; reason: string };

/** What the harness writes to its answer descriptor before it exits (see the apps interface). */
type HarnessMessage = { type: 'result'; output?: string } | { type: 'error'; message?: string; stack?: string };

export interface ActionRunOptions {
  boxes: Boxes;
  /** The box's id (the invocation's). */
  id: string;
  /** The disk holding the deployment's installed code, bound read-only at /app. */
  image: string;
  /** The harness's command line (`run` mode: harnessArgv). */
  argv: string[];
  /** The child's whole environment: nothing of the daemon's is in it. */
  env: Record<string, string>;
  onLog: (line: string) => void;
  /** A box started ahead for this invocation (its id is `id`): the action starts in it. */
  box?: Box;
}

/**
 * One action running in a box of its own, as an unprivileged user: a private home and /tmp, its
 * app's code read-only at /app, no daemon home and no credentials but the invocation's key. The
 * only owner of it: stdout and stderr are the action's logs, line by line; the result comes on
 * fd 3. `stop()` ends the box (everything the action started) and resolves once it has.
 */
export class ActionRun {
  readonly outcome: Promise<Outcome>;
  private lastStderr = '';

  private constructor(
    private readonly box: Box,
    private readonly child: BoxProcess,
    opts: ActionRunOptions,
  ) {
    const stdout = new LineSplitter(opts.onLog);
    const stderr = new LineSplitter((line) => {
      if (line.trim()) this.lastStderr = line;
      opts.onLog(line);
    });
    child.stdout!.on('data', (chunk: Buffer) => stdout.write(chunk));
    child.stderr!.on('data', (chunk: Buffer) => stderr.write(chunk));
    const answer: Buffer[] = [];
    child.fds[RESULT_FD]!.on('data', (chunk: Buffer) => answer.push(chunk));
    this.outcome = Promise.all([
      child.exited,
      new Promise((r) => child.stdout!.once('end', r)),
      new Promise((r) => child.stderr!.once('end', r)),
      new Promise((r) => child.fds[RESULT_FD]!.once('end', r)),
    ]).then(([exit]) => {
      stdout.end();
      stderr.end();
      return this.outcomeOf(Buffer.concat(answer).toString(), exit.code, exit.signal, exit.error?.message);
    });
  }

  static async start(opts: ActionRunOptions): Promise<ActionRun> {
    const box = opts.box ?? (await opts.boxes.start({ kind: 'app', id: opts.id, app: { image: opts.image } }));
    try {
      const child = box.spawn(opts.argv, {
        env: opts.env,
        cwd: BOX_APP,
        extraFds: [RESULT_FD],
      });
      return new ActionRun(box, child, opts);
    } catch (err) {
      await box.stop();
      throw err;
    }
  }

  /** Ends the action and whatever it started (its box); resolves once they are gone. */
  async stop(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.box.stop();
    await this.outcome;
  }

  private outcomeOf(answer: string, exitCode: number | null, signal: NodeJS.Signals | null, spawnError?: string): Outcome {
    let message: HarnessMessage | undefined;
    for (const line of answer.split('\n').filter(Boolean)) {
      try {
        message = JSON.parse(line) as HarnessMessage;
      } catch {
        // Not the harness's: ignored.
      }
    }
    if (message?.type === 'result') return { status: 'succeeded', ...(message.output !== undefined ? { output: message.output } : {}) };
    if (message?.type === 'error') return { status: 'failed', reason: message.message || 'the action threw' };
    const how = signal ? `was killed by ${signal}` : exitCode !== null ? `exited with code ${exitCode}` : 'could not start';
    const detail = this.lastStderr || spawnError;
    return { status: 'failed', reason: `the action's process ${how} before returning${detail ? `: ${detail}` : ''}` };
  }
}
