/**
 * What rbrowse costs besides browsers: CLI start-up (whole processes) and the daemon's own memory
 * and file descriptors, idle and after rounds of API load with session churn.
 */
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ROOT, daemonPid, type TestDaemon } from '../test/helpers/daemon.js';
import { findMarkedProcesses, sleep } from '../daemon/lib/procs.js';
import { children } from '../daemon/lib/proc-tree.js';
import { chromium } from 'playwright';
import { createSession, deleteSession, interleave, type BenchContext } from './scenarios.js';
import { summarize, type Summary } from './stats.js';

const NODE = join(ROOT, 'node_modules', '.bin', 'node');
const CLI = join(ROOT, 'bin', 'rbrowse');

/** Wall time of one whole process, start to exit, in ms. */
function runOnce(command: string, args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(command, args, { env, stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(performance.now() - start) : reject(new Error(`${command} ${args.join(' ')} exited ${code}`)),
    );
  });
}

/** `rbrowse --version` and `rbrowse ls` (against the daemon), against a bare `node -e 0` on the same Node. */
export async function cliStartup(d: TestDaemon, runs: number): Promise<{ version: number[]; ls: number[]; node: number[] }> {
  const env = { ...d.env, RBROWSE_HOME: d.home };
  const [version, ls, node] = await interleave(2, runs, [
    () => runOnce(CLI, ['--version'], env),
    () => runOnce(CLI, ['ls', '-q'], env),
    () => runOnce(NODE, ['-e', '0'], env),
  ]);
  return { version: version!, ls: ls!, node: node! };
}

export interface Footprint {
  rssMiB: number;
  /** The part of RSS that is the process's own memory (heap, malloc), not mapped files such as the node binary. */
  anonMiB: number;
  fds: number;
}

export async function footprint(d: TestDaemon): Promise<Footprint> {
  const pid = await daemonPid(d);
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { rssMiB: kib('VmRSS') / 1024, anonMiB: kib('RssAnon') / 1024, fds: (await readdir(`/proc/${pid}/fd`)).length };
}

/** The PSS of these processes together, in MiB (shared pages counted once across them all). */
export async function pssMiB(pids: number[]): Promise<number> {
  let kib = 0;
  for (const pid of pids) {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
    kib += Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
  }
  return kib / 1024;
}

/**
 * PSS of what runs for a home outside the daemon and its launcher, in MiB: on an idle daemon
 * with no session, its spare boxes.
 */
export async function boxesPssMiB(d: TestDaemon): Promise<number> {
  const pids: number[] = [];
  for (const pid of await findMarkedProcesses(d.home)) {
    const environ = await readFile(`/proc/${pid}/environ`, 'latin1').catch(() => '');
    if (!environ.split('\0').includes('RBROWSE_SESSION=launcher')) pids.push(pid);
  }
  return pssMiB(pids);
}

/** The daemon's CDP relay process: its child, started with it, carrying no home marker. */
export async function relayPid(d: TestDaemon): Promise<number | undefined> {
  for (const pid of await children(await daemonPid(d))) {
    if ((await readFile(`/proc/${pid}/cmdline`, 'latin1').catch(() => '')).includes('cdp-relay')) return pid;
  }
  return undefined;
}

/** The daemon and everything it started: its relay, launcher, boxes and browsers. */
export async function daemonProcesses(d: TestDaemon): Promise<number[]> {
  const relay = await relayPid(d);
  return [...new Set([await daemonPid(d), ...(relay ? [relay] : []), ...(await findMarkedProcesses(d.home))])];
}

/** PSS of the daemon and everything it started, in MiB. */
export async function everythingPssMiB(d: TestDaemon): Promise<number> {
  return pssMiB(await daemonProcesses(d));
}

/** Clock ticks a second in /proc/PID/stat (USER_HZ: 100 on Linux). */
const USER_HZ = 100;

/** User and system CPU of one process so far, in clock ticks; undefined once it is gone. */
async function cpuTicks(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => '');
  if (!stat) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * CPU time of the daemon and everything it started (launcher, boxes, standby browsers) over `ms`
 * of idling, in ms per second. A daemon with nothing to do should cost next to nothing: a
 * laptop's core that the daemon wakes many times a second never sleeps.
 */
export async function idleCpuMsPerS(d: TestDaemon, ms: number): Promise<number> {
  const pids = await daemonProcesses(d);
  const before = await Promise.all(pids.map(cpuTicks));
  await sleep(ms);
  const after = await Promise.all(pids.map(cpuTicks));
  let ticks = 0;
  pids.forEach((_, i) => {
    if (before[i] !== undefined && after[i] !== undefined) ticks += after[i]! - before[i]!;
  });
  return (ticks * 1000) / USER_HZ / (ms / 1000);
}

export interface LoadRound extends Footprint {
  requests: Record<string, number>;
  reads: Summary;
  created: number;
}

/**
 * One round of load: `readers` clients reading and PATCHing for `ms` while `churners` create and
 * delete headless sessions one after another; then a pause for background teardowns, and the
 * daemon's footprint. Identical rounds should leave identical footprints.
 */
export async function loadRound(d: TestDaemon, o: { ms: number; readers: number; churners: number }): Promise<LoadRound> {
  const requests: Record<string, number> = {};
  const count = (status: number | string) => void (requests[status] = (requests[status] ?? 0) + 1);
  const reads: number[] = [];
  const deadline = Date.now() + o.ms;
  const target = await createSession(d, { headless: true, timeout_seconds: 3600 });
  let created = 0;
  const reader = async () => {
    for (let i = 0; Date.now() < deadline; i++) {
      const start = performance.now();
      const res =
        i % 3 === 0
          ? await d.api('GET', '/browsers?limit=20')
          : i % 3 === 1
            ? await d.api('GET', `/browsers/${target.session_id}`)
            : await d.api('PATCH', `/browsers/${target.session_id}`, { tags: { round: String(i) } });
      if (i % 3 !== 2) reads.push(performance.now() - start);
      count(res.status);
    }
  };
  const churner = async () => {
    while (Date.now() < deadline) {
      try {
        const s = await createSession(d, { headless: true });
        created++;
        await deleteSession(d, s.session_id);
        count(200);
      } catch (err) {
        count(String((err as Error).message).match(/answered (\d+)/)?.[1] ?? 'error');
      }
    }
  };
  await Promise.all([...Array.from({ length: o.readers }, reader), ...Array.from({ length: o.churners }, churner)]);
  await deleteSession(d, target.session_id);
  // Teardowns finish in the background; what is left after them is what a round cost.
  await new Promise((r) => setTimeout(r, 3000));
  return { ...(await footprint(d)), requests, reads: summarize(reads), created };
}

/**
 * The memory of one headless session once a page is loaded, against a raw Chromium's after the
 * same page (PSS, MiB): the session's whole box (bubblewrap, its agent, its network, Chromium)
 * against the raw browser's processes. One sample of each, the client still connected.
 */
export async function sessionPss(ctx: BenchContext): Promise<{ session: number; raw: number }> {
  const loaded = async (wsUrl: string, pids: () => Promise<number[]>) => {
    const browser = await chromium.connectOverCDP(wsUrl);
    try {
      const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
      await page.goto(ctx.pageUrl);
      // Let the first paint and the load's after-work finish before reading.
      await new Promise((r) => setTimeout(r, 1000));
      return await pssMiB(await pids());
    } finally {
      await browser.close().catch(() => {});
    }
  };
  const session = await createSession(ctx.daemon, { headless: true, timeout_seconds: 600 });
  let sessionMiB: number;
  try {
    sessionMiB = await loaded(session.cdp_ws_url, () => findMarkedProcesses(ctx.daemon.home, session.session_id));
  } finally {
    await deleteSession(ctx.daemon, session.session_id);
  }
  const profile = await ctx.raw.prepare();
  try {
    const raw = await ctx.raw.launch(profile);
    return { session: sessionMiB, raw: await loaded(raw.wsUrl, () => findMarkedProcesses(ctx.raw.base, profile.name)) };
  } finally {
    await ctx.raw.dispose(profile);
  }
}
