/**
 * CPU time per create -> connect -> goto -> disconnect -> delete cycle, rbrowse against raw
 * Chromium, in the same run. Back to back on two cores, as a test suite makes sessions, cycles
 * are bound by CPU rather than by waiting, and their ratio follows this one.
 *
 * Counted with cgroup v1's cpuacct controller, which sees every process however it was started:
 * the daemon starts in a group of its own (its launcher, boxes, agents, networks and browsers
 * follow it there), and the bench, its Playwright client and the raw browsers it launches in
 * another. A cold rbrowse cycle counts both groups, the daemon's spare box started again included;
 * a raw cycle counts the bench's group only (the idle daemon is not part of it).
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { startTestDaemon, type TestDaemon } from '../test/helpers/daemon.js';
import { shellEnv } from './lifecycle.js';
import type { RawChromiums } from './raw.js';
import { sleep } from '../daemon/lib/procs.js';
import { daemonCyclePhases, rawCyclePhases } from './scenarios.js';

const CPUACCT = '/sys/fs/cgroup/cpuacct';
/** After a cycle, what it set off (a browser's exit, a spare box's start) gets this long to finish before usage is read. */
const TRAIL_MS = 1500;

export interface CpuPerCycle {
  /** CPU milliseconds per cycle. */
  rbrowse: number[];
  raw: number[];
}

/** This process's cpuacct group, or undefined where there is none to make groups in (no cgroup v1 cpuacct, or not root). */
function ownGroup(): string | undefined {
  if (!existsSync(`${CPUACCT}/cpuacct.usage`) || process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .find((l) => l.split(':')[1]?.split(',').includes('cpuacct'));
  return line === undefined ? undefined : `${CPUACCT}${line.split(':')[2]}`;
}

const usageMs = (group: string) => Number(readFileSync(`${group}/cpuacct.usage`, 'utf8')) / 1e6;
const enter = (group: string) => writeFileSync(`${group}/cgroup.procs`, String(process.pid));

/** `cycles` cold rbrowse cycles and as many raw ones, alternating; undefined where CPU cannot be counted this way. */
export async function cpuPerCycle(o: { raw: RawChromiums; pageUrl: string; cycles: number }): Promise<CpuPerCycle | undefined> {
  const own = ownGroup();
  if (!own) return undefined;
  const daemonGroup = `${own}/rbrowse-bench-daemon-${process.pid}`;
  const benchGroup = `${own}/rbrowse-bench-client-${process.pid}`;
  mkdirSync(daemonGroup);
  mkdirSync(benchGroup);
  let d: TestDaemon | undefined;
  try {
    enter(daemonGroup);
    try {
      d = await startTestDaemon({ env: { RBROWSE_STANDBY: '0', RBROWSE_SPARE_BOXES: '', ...shellEnv() } });
    } finally {
      enter(benchGroup);
    }
    const daemon = d;
    const out: CpuPerCycle = { rbrowse: [], raw: [] };
    const sample = async (cycle: () => Promise<void>, groups: string[]) => {
      const before = groups.map(usageMs);
      await cycle();
      await sleep(TRAIL_MS);
      return groups.reduce((sum, g, i) => sum + usageMs(g) - before[i]!, 0);
    };
    // An rbrowse cycle ends once its session is torn down and the spare box started again (settle): both are its cost.
    const rbrowseCycle = async () => void (await daemonCyclePhases({ daemon, pageUrl: o.pageUrl }));
    const rawCycle = async () => void (await rawCyclePhases({ daemon, raw: o.raw, pageUrl: o.pageUrl }));
    await sleep(TRAIL_MS);
    // One of each first, untimed: first-use work (a validator compiled, a cache filled).
    await rbrowseCycle();
    await rawCycle();
    for (let i = 0; i < o.cycles; i++) {
      out.rbrowse.push(await sample(rbrowseCycle, [daemonGroup, benchGroup]));
      out.raw.push(await sample(rawCycle, [benchGroup]));
    }
    return out;
  } finally {
    await d?.stop();
    enter(own);
    // A group can be removed once no process is in it: the daemon's last ones may take a moment to go.
    for (const group of [benchGroup, daemonGroup]) {
      for (let tries = 0; ; tries++) {
        try {
          rmdirSync(group);
          break;
        } catch (err) {
          if (tries >= 50) {
            console.error(`warning: ${group} could not be removed: ${(err as Error).message}`);
            break;
          }
          await sleep(100);
        }
      }
    }
  }
}
