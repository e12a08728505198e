/**
 * rbrowse against raw Chromium on the same machine: session create, a full client cycle, and CDP
 * round trips through the gateway. The machine is shared and noisy, so what matters is the ratio
 * of each pair of runs, which are interleaved to spread the noise over both sides.
 *
 * Goals are informational: the exit code is 0 whether they pass or not, non-zero only on errors.
 * Sample counts can be overridden with BENCH_CREATES, BENCH_CYCLES, BENCH_ROUNDS, BENCH_CALLS.
 */
import { cpus } from 'node:os';
import { intEnv, load, progress, runBench } from './lifecycle.js';
import { alternate, cdpRoundTrips, daemonCreate, daemonCycle, rawCycle, rawLaunch, startHarness, type BenchContext } from './scenarios.js';
import { renderTable, summarize, type Comparison } from './stats.js';

const CONFIG = {
  creates: intEnv('BENCH_CREATES', 15),
  createWarmup: 2,
  cycles: intEnv('BENCH_CYCLES', 8),
  cycleWarmup: 1,
  rounds: intEnv('BENCH_ROUNDS', 20),
  callsPerRound: intEnv('BENCH_CALLS', 150),
  warmupCalls: 200,
};

/** Starts everything the scenarios need and registers how to stop each part. */
async function setUp(cleanups: (() => Promise<void>)[]): Promise<BenchContext> {
  const { executable, fixtures, raw, daemon } = await startHarness(cleanups);
  progress(`daemon ${daemon.baseUrl}, chromium ${executable}, fixture ${fixtures.url}`);
  return { daemon, raw, pageUrl: `${fixtures.url}/hello.html` };
}

async function measure(ctx: BenchContext): Promise<Comparison[]> {
  progress(`create: ${CONFIG.createWarmup} warm-up + ${CONFIG.creates} per side`);
  const [creates, launches] = await alternate(CONFIG.createWarmup, CONFIG.creates, () => daemonCreate(ctx), () => rawLaunch(ctx));

  progress(`cycle: ${CONFIG.cycleWarmup} warm-up + ${CONFIG.cycles} per side`);
  const [cycles, rawCycles] = await alternate(CONFIG.cycleWarmup, CONFIG.cycles, () => daemonCycle(ctx), () => rawCycle(ctx));

  progress(`cdp: ${CONFIG.rounds} rounds x ${CONFIG.callsPerRound} Runtime.evaluate per side`);
  const cdp = await cdpRoundTrips(ctx, CONFIG);

  return [
    { metric: 'create: POST /browsers vs spawn->DevTools', unit: 'ms', rbrowse: summarize(creates), raw: summarize(launches), goal: 1.2 },
    { metric: 'cycle: create+connect+goto+close+delete', unit: 'ms', rbrowse: summarize(cycles), raw: summarize(rawCycles) },
    { metric: 'cdp: Runtime.evaluate 1+1 round trip', unit: 'us', rbrowse: summarize(cdp.gateway), raw: summarize(cdp.direct), goal: 1.1 },
    // Not rbrowse: the floor any relay process pays here, to read the line above against.
    { metric: 'cdp via bare Node ws relay (reference)', unit: 'us', rbrowse: summarize(cdp.bareRelay), raw: summarize(cdp.direct) },
  ];
}

function report(rows: Comparison[], loadBefore: string): void {
  console.log(`\nrbrowse bench: ${cpus().length} CPUs, load average ${loadBefore} before, ${load()} after`);
  console.log('raw = the same Chromium flags launched directly (create, cycle); the session\'s own DevTools socket (cdp)');
  console.log('the reference line times the same calls through bench/relay.ts, a minimal ws relay in its own process');
  console.log('ratio = rbrowse p50 / raw p50 (p95 ratio in parentheses); goals are informational\n');
  console.log(renderTable(rows));
  const [gateway, relay] = rows.filter((r) => r.unit === 'us');
  if (gateway && relay) {
    const extra = (r: Comparison) => Math.round((r.rbrowse.p50 - r.raw.p50) * 1000);
    console.log(`\nper CDP call at p50: the gateway adds ${extra(gateway)} µs, a bare Node relay ${extra(relay)} µs`);
  }
}

runBench(async (cleanups) => {
  const loadBefore = load();
  const ctx = await setUp(cleanups);
  report(await measure(ctx), loadBefore);
});
