import { readFileSync } from 'node:fs';

/** Sends a signal (0: only asks whether the process exists); false when it is gone or not ours. */
export function signal(pid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether a process runs. A zombie does not: an exited daemon or browser lingers as one until
 * its parent (often init) reaps it, and must not count as a running process meanwhile.
 */
export function isAlive(pid: number): boolean {
  if (!signal(pid, 0)) return false;
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'latin1'));
  } catch {
    return false;
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
