import type { DaemonInfo } from '../src/config.js';
import { runningDaemon, startDaemon, type DaemonStartOptions } from './daemon-control.js';
import { duration } from './output.js';
import type { ViewState } from './progress-view.js';

/** What a long-running piece of work reports while it runs. */
export interface Progress {
  /** Replaces the text beside the spinner. */
  status(text: string): void;
  /** Shows a bar instead of the spinner: `done` of `total` (`text` instead of "done/total", e.g. sizes). */
  progress(done: number, total: number, text?: string): void;
  /** A line that stays, printed above the spinner (a build log, an invocation's output). */
  log(line: string): void;
}

export interface ProgressOptions<T> {
  /** No animation (a command's --json or -q output is for programs). */
  quiet?: boolean;
  /** The line left behind on success; default: the label and how long it took. */
  done?: (result: T, elapsedMs: number) => string;
}

/** Animation only on a terminal: a pipe or a file gets plain output. */
export const animated = (stream: NodeJS.WriteStream = process.stdout) => Boolean(stream.isTTY);

/** 1.5 MB, 830 kB, 12 B. */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  if (n < 1_000_000) return `${(n / 1000).toFixed(0)} kB`;
  return `${(n / 1_000_000).toFixed(1)} MB`;
}

/**
 * Runs `work` with a spinner (or bar) on the terminal, left as one ✓ or ✗ line when it settles;
 * on anything but a terminal nothing moves and only log lines are printed.
 */
export async function withProgress<T>(label: string, work: (p: Progress) => Promise<T>, opts: ProgressOptions<T> = {}): Promise<T> {
  if (opts.quiet || !animated()) {
    return work({ status: () => {}, progress: () => {}, log: (line) => void process.stdout.write(`${line}\n`) });
  }
  const started = Date.now();
  // Ink and React take ~220 ms to load here: only commands that draw on a terminal pay it.
  const { ProgressScreen } = await import('./progress-view.js');
  const state: ViewState = { label, logs: [] };
  const screen = new ProgressScreen(state);
  const update = (patch: Partial<ViewState>) => {
    Object.assign(state, patch);
    screen.draw(state);
  };
  let n = 0;
  try {
    const result = await work({
      status: (text) => update({ label: text }),
      progress: (done, total, text) => update({ bar: { done, total, text } }),
      log: (line) => update({ logs: [...state.logs, { key: n++, line }] }),
    });
    const elapsed = Date.now() - started;
    update({ outcome: { ok: true, text: opts.done?.(result, elapsed) ?? `${state.label} (${duration(elapsed)})` } });
    return result;
  } catch (err) {
    update({ outcome: { ok: false, text: state.label } });
    throw err;
  } finally {
    await screen.close();
  }
}

/**
 * Polls `read` until `isDone` holds, reporting `count` of `total` as a bar; for work the API
 * reports only through its objects (a pool filling, a deployment building).
 */
export async function waitWithProgress<T>(
  label: string,
  read: () => Promise<T>,
  measure: (value: T) => { done: number; total: number },
  opts: ProgressOptions<T> & { intervalMs?: number; timeoutMs?: number } = {},
): Promise<T> {
  return withProgress(
    label,
    async (p) => {
      const deadline = Date.now() + (opts.timeoutMs ?? Number.POSITIVE_INFINITY);
      for (;;) {
        const value = await read();
        const { done, total } = measure(value);
        p.progress(done, total);
        if (done >= total) return value;
        if (Date.now() > deadline) throw new Error(`${label}: still ${done} of ${total} after ${duration(opts.timeoutMs!)}`);
        await new Promise((r) => setTimeout(r, opts.intervalMs ?? 500));
      }
    },
    opts,
  );
}

/**
 * Follows an event stream (a deployment's build, an invocation: see sseEvents) with a spinner:
 * `onEvent` logs lines and sets the status through `p`, and returns a value once the stream
 * reached its end state, which this resolves with. A stream that ends before that is an error.
 */
export async function followEvents<E, T>(
  label: string,
  events: AsyncIterable<E>,
  onEvent: (event: E, p: Progress) => T | undefined,
  opts: ProgressOptions<T> = {},
): Promise<T> {
  return withProgress(
    label,
    async (p) => {
      for await (const event of events) {
        const result = onEvent(event, p);
        if (result !== undefined) return result;
      }
      throw new Error(`${label}: the event stream ended early`);
    },
    opts,
  );
}

/**
 * Streams a download's body into `out` with a bar of the bytes received (of content-length, when
 * the server sent one); resolves with the byte count.
 */
export async function downloadWithProgress(
  label: string,
  res: Response,
  out: NodeJS.WritableStream,
  opts: ProgressOptions<number> = {},
): Promise<number> {
  const total = Number(res.headers.get('content-length')) || 0;
  return withProgress(
    label,
    async (p) => {
      let received = 0;
      for await (const chunk of res.body ?? []) {
        received += chunk.byteLength;
        if (!out.write(chunk)) await new Promise((r) => out.once('drain', r));
        if (total) p.progress(received, total, `${formatBytes(received)} of ${formatBytes(total)}`);
        else p.status(`${label}: ${formatBytes(received)}`);
      }
      return received;
    },
    { done: (n, ms) => `${label}: ${formatBytes(n)} (${duration(ms)})`, ...opts },
  );
}

/** The local daemon, started with a spinner when it is not running yet. */
export async function startDaemonWithProgress(opts: DaemonStartOptions = {}): Promise<DaemonInfo> {
  return (
    (await runningDaemon()) ??
    withProgress('starting the daemon', () => startDaemon(opts), {
      done: (info, ms) => `daemon started at ${info.base_url} (${duration(ms)})`,
    })
  );
}
