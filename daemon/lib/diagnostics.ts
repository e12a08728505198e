import { readdir } from 'node:fs/promises';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { children } from './proc-tree.js';

/**
 * How late the event loop ran its callbacks: every request waits at least this long. Sampling it
 * every 5 ms wakes the loop 200 times a second, 6-8 ms of CPU a second on an idle daemon (and a
 * core that never sleeps on a laptop), so it is sampled only while someone reads it: from the
 * first reading until no reading came for WATCHED_MS.
 */
const loopDelay = monitorEventLoopDelay({ resolution: 5 });
const WATCHED_MS = 10 * 60_000;
let unwatched: NodeJS.Timeout | undefined;

function watchLoopDelay(): void {
  loopDelay.enable();
  clearTimeout(unwatched);
  unwatched = setTimeout(() => {
    loopDelay.disable();
    // A reading after the pause covers none of it: it says 0, not what the last window held.
    loopDelay.reset();
  }, WATCHED_MS);
  unwatched.unref();
}

/**
 * What the daemon holds right now: memory, descriptors, Node's active handles by type and child
 * processes. After sessions, pools, uploads and clients come and go, each must be back at its idle
 * level (test/leaks.test.ts compares them round after round).
 */
export async function daemonResources(sessions: number, helperPids: (number | undefined)[] = []) {
  const fds = await readdir('/proc/self/fd').catch(() => [] as string[]);
  const resources: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) resources[type] = (resources[type] ?? 0) + 1;
  const memory = process.memoryUsage();
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;
  const delay = { p50: ms(loopDelay.percentile(50)), p99: ms(loopDelay.percentile(99)), max: ms(loopDelay.max) };
  // Each reading covers the time since the one before (the first: none, it starts the sampling).
  loopDelay.reset();
  watchLoopDelay();
  return {
    event_loop_delay_ms: delay,
    pid: process.pid,
    rss_bytes: memory.rss,
    heap_used_bytes: memory.heapUsed,
    // readdir itself holds one descriptor while it reads.
    open_fds: Math.max(0, fds.length - 1),
    // The helpers (the launcher, the CDP relay) are the daemon's for good; what they forked is the daemon's to end.
    children: await childrenBeyond(helperPids.filter((pid) => pid !== undefined)),
    resources,
    sessions,
  };
}

/** The daemon's children but its helpers, and the helpers' own children. */
async function childrenBeyond(helpers: number[]): Promise<number> {
  const own = (await children(process.pid)).filter((pid) => !helpers.includes(pid)).length;
  const theirs = await Promise.all(helpers.map((pid) => children(pid)));
  return own + theirs.reduce((n, list) => n + list.length, 0);
}
