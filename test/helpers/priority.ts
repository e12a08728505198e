import { readFile } from 'node:fs/promises';
import { findMarkedProcesses } from '../../daemon/lib/procs.js';

/** Whether the daemon lowers browsers launched ahead of demand here: autogroups on, and root to raise them again. */
export async function lowersBackgroundLaunches(): Promise<boolean> {
  const autogroups = (await readFile('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').catch(() => '0')).trim() === '1';
  return autogroups && process.getuid?.() === 0;
}

/**
 * The nice of each of a session's processes' autogroups, by command (`{ Xvfb: [19], bwrap: [19] }`).
 * Crashpad handlers start groups of their own and are left out.
 */
export async function autogroupNices(home: string, sessionId: string): Promise<Record<string, number[]>> {
  const byCommand = new Map<string, Set<number>>();
  for (const pid of await findMarkedProcesses(home, sessionId)) {
    const comm = (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim();
    const nice = /nice (-?\d+)/.exec(await readFile(`/proc/${pid}/autogroup`, 'utf8').catch(() => ''))?.[1];
    if (!comm || nice === undefined || comm.startsWith('chrome_crashpad')) continue;
    byCommand.set(comm, new Set([...(byCommand.get(comm) ?? []), Number(nice)]));
  }
  return Object.fromEntries([...byCommand].map(([c, n]) => [c, [...n]]));
}
