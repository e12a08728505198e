import { rm } from 'node:fs/promises';

/**
 * Removes a directory tree, retrying while something still writes into it; a failure is logged,
 * never thrown, because a stray directory must not fail a session's end or a daemon's start.
 */
export async function removeTree(dir: string, log?: (msg: string, extra?: object) => void): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
  } catch (err) {
    log?.('could not remove directory', { dir, error: String(err) });
  }
}
