import { loadavg } from 'node:os';
import { resolveChromium, resolveHeadlessShell } from '../src/system-deps.js';

/** Shared by every bench script: settings from the environment, progress lines, and cleanup. */
export function intEnv(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

/**
 * RBROWSE_HEADLESS_SHELL as the bench was started with: its daemons get it, and raw launches (and
 * Playwright's own) run the build the daemon's headless sessions run.
 */
export const shellEnv = (): Record<string, string> => ({
  ...(process.env.RBROWSE_HEADLESS_SHELL ? { RBROWSE_HEADLESS_SHELL: process.env.RBROWSE_HEADLESS_SHELL } : {}),
  // A burst of 30 sessions at the default 4 GiB limit each is 120 GiB of memory limits, past what
  // the daemon grants on a 24 GiB machine (429 at the 23rd). A headless page holds ~180 MiB: 2 GiB
  // each keeps a burst within the grant, and a limit changes no timing.
  RBROWSE_SESSION_MEMORY: process.env.RBROWSE_SESSION_MEMORY ?? '2g',
});
export const headlessBuild = (): string => resolveHeadlessShell() ?? resolveChromium();

export const progress = (msg: string) => console.error(`[bench] ${msg}`);
export const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/**
 * Runs a bench's main with undo steps (pushed onto `cleanups`, run last-in first-out) that always
 * run once: on success, on failure and on Ctrl-C, so no browser or daemon outlives the bench.
 */
export function runBench(main: (cleanups: (() => Promise<void>)[]) => Promise<void>): void {
  const cleanups: (() => Promise<void>)[] = [];
  let cleaning: Promise<void> | undefined;
  // Once only: the signal handler and main's end may both ask, and a second pass over the same
  // stack would let the handler's process.exit() cut the other's daemon stop short.
  const cleanup = () =>
    (cleaning ??= (async () => {
      for (let step = cleanups.pop(); step; step = cleanups.pop()) {
        await step().catch((err: unknown) => {
          console.error(`cleanup failed: ${err instanceof Error ? err.message : String(err)}`);
          process.exitCode = 1;
        });
      }
    })());
  // Ctrl-C reaches tsx and this process both, and tsx forwards it too: later signals must not kill the cleanup.
  let interrupted = false;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      if (interrupted) return;
      interrupted = true;
      progress(`${sig}: stopping the daemon and every browser`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  main(cleanups)
    .catch((err: unknown) => {
      // After a signal the cleanup pulls things from under the run; that failure is expected.
      if (interrupted) return;
      console.error(err instanceof Error ? (err.stack ?? err.message) : err);
      process.exitCode = 1;
    })
    .finally(() => cleanup());
}
