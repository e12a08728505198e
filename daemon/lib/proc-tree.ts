import { readdir, readFile } from 'node:fs/promises';
import { statFields } from './procs.js';

/** Linux's USER_HZ: the unit of /proc/PID/stat's CPU times on every architecture Node runs on here. */
const TICKS_PER_SECOND = 100;
const PAGE_SIZE = 4096;

/** The children of pid (of all its threads), from /proc/PID/task/TID/children. */
export async function children(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  const lists = await Promise.all(tasks.map((tid) => readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '')));
  return lists.flatMap((text) => text.split(' ').filter(Boolean).map(Number));
}

/** Every descendant of pid, nearest first. */
export async function descendants(pid: number): Promise<number[]> {
  const found: number[] = [];
  for (let level = await children(pid); level.length; ) {
    found.push(...level);
    level = (await Promise.all(level.map(children))).flat();
  }
  return found;
}

/** CPU seconds (user + system, children reaped included) and resident bytes of one process; zeros once it is gone. */
async function usage(pid: number): Promise<{ cpuSeconds: number; rssBytes: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  if (!stat) return { cpuSeconds: 0, rssBytes: 0 };
  const f = statFields(stat);
  const ticks = Number(f[11]) + Number(f[12]);
  return { cpuSeconds: ticks / TICKS_PER_SECOND, rssBytes: Number(f[21]) * PAGE_SIZE };
}

/** CPU seconds and resident bytes of a process tree. */
export async function treeUsage(pid: number): Promise<{ cpuSeconds: number; rssBytes: number }> {
  const all = await Promise.all([pid, ...(await descendants(pid))].map(usage));
  return all.reduce((a, b) => ({ cpuSeconds: a.cpuSeconds + b.cpuSeconds, rssBytes: a.rssBytes + b.rssBytes }), { cpuSeconds: 0, rssBytes: 0 });
}
