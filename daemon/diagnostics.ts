import { readdir, readFile } from 'node:fs/promises';

/**
 * What the daemon holds right now: memory, descriptors, Node's active handles by type and child
 * processes. After sessions, pools, uploads and clients come and go, each must be back at its idle
 * level (test/leaks.test.ts compares them round after round).
 */
export async function daemonResources(sessions: number) {
  const fds = await readdir('/proc/self/fd').catch(() => [] as string[]);
  const resources: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) resources[type] = (resources[type] ?? 0) + 1;
  const memory = process.memoryUsage();
  return {
    pid: process.pid,
    rss_bytes: memory.rss,
    heap_used_bytes: memory.heapUsed,
    // readdir itself holds one descriptor while it reads.
    open_fds: Math.max(0, fds.length - 1),
    children: await childCount(process.pid),
    resources,
    sessions,
  };
}

async function childCount(pid: number): Promise<number> {
  const entries = await readdir('/proc').catch(() => [] as string[]);
  const parents = await Promise.all(
    entries.filter((e) => /^\d+$/.test(e)).map(async (e) => {
      const stat = await readFile(`/proc/${e}/stat`, 'latin1').catch(() => '');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    }),
  );
  return parents.filter((p) => p === pid).length;
}
