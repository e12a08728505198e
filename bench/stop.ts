/**
 * `rbrowse daemon stop` on a crowded machine: a daemon with three sessions, the default standby
 * and a pool of two, stopped quiet and under a CPU hog (busy loops at normal priority, two per
 * core), alternating. The floor is the same stop on a quiet machine in the same run; the goal is
 * an absolute one, a stop within 5 s whatever the load. BENCH_STOPS sets the rounds per side.
 */
import { performance } from 'node:perf_hooks';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { startCpuHog } from '../test/helpers/cpu-hog.js';
import { startTestDaemon, waitFor } from '../test/helpers/daemon.js';
import { intEnv, load, progress, runBench } from './lifecycle.js';
import { DEFAULT_STANDBY } from '../src/standby.js';
import { renderTable, summarize } from './stats.js';

const STOPS = intEnv('BENCH_STOPS', 3);

/** A daemon busy as a developer's is: sessions headless and headful, standby, a pool with idle browsers. */
async function busyDaemon() {
  const d = await startTestDaemon({ env: { RBROWSE_STANDBY: DEFAULT_STANDBY } });
  for (const body of [{ headless: true }, { headless: true }, { viewport: { width: 1024, height: 768 } }]) {
    const r = await d.api('POST', '/browsers', body);
    if (r.status !== 200) throw new Error(`create: ${r.status} ${r.text}`);
  }
  const pool = await d.api('POST', '/browser_pools', { name: 'bench', size: 2, headless: true, fill_rate_per_minute: 100 });
  if (pool.status !== 200) throw new Error(`pool: ${pool.status} ${pool.text}`);
  await waitFor(async () => (await d.api('GET', '/browser_pools/bench')).body.available_count >= 2, 120_000, 'the pool to fill');
  return d;
}

async function timedStop(hogged: boolean): Promise<number> {
  const d = await busyDaemon();
  const hog = hogged ? startCpuHog({ maxSeconds: 120 }) : undefined;
  try {
    const started = performance.now();
    const stop = await d.cli(['daemon', 'stop']);
    const ms = performance.now() - started;
    if (stop.exitCode !== 0) throw new Error(`daemon stop exited ${stop.exitCode}: ${stop.stderr}`);
    const left = await findMarkedProcesses(d.home);
    if (left.length) throw new Error(`left behind by the stop: ${left.join(', ')}`);
    return ms;
  } finally {
    await hog?.stop();
    await d.stop();
  }
}

runBench(async () => {
  const loadBefore = load();
  const quiet: number[] = [];
  const hogged: number[] = [];
  for (let i = 0; i < STOPS; i++) {
    progress(`stop ${i + 1}/${STOPS}: quiet, then under the CPU hog`);
    quiet.push(await timedStop(false));
    hogged.push(await timedStop(true));
  }
  console.log(`\nrbrowse bench:stop: load average ${loadBefore} before, ${load()} after`);
  console.log('a daemon with 3 sessions, the default standby and a pool of 2 idle browsers; hog = 2 busy loops per core');
  console.log(
    renderTable([{ metric: 'daemon stop under the CPU hog vs quiet', unit: 'ms', rbrowse: summarize(hogged), raw: summarize(quiet), maxP50: 5000 }]),
  );
});
