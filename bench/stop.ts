/**
 * `rbrowse daemon stop` on a crowded machine: a daemon with three sessions, the default standby
 * and a pool of two, stopped quiet and under a CPU hog (busy loops at normal priority, two per
 * core), alternating. The floor is the same stop on a quiet machine in the same run; the goal is
 * an absolute one, a stop within 5 s whatever the load. BENCH_STOPS sets the rounds per side.
 * `npm run bench` runs the same rounds (fewer of them).
 */
import { timedStop } from './crowded.js';
import { intEnv, load, progress, runBench } from './lifecycle.js';
import { renderTable, summarize } from './stats.js';

const STOPS = intEnv('BENCH_STOPS', 3);

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
