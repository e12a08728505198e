/**
 * rbrowse against raw Chromium on the same machine: session create (from a standby browser and
 * cold), a full client cycle with its phases, CDP round trips through the gateway, a burst of
 * sessions, back-to-back cycles as a test suite makes them, spaced cycles and `daemon stop` under
 * a CPU hog, CLI start-up, the daemon's own footprint and the memory of everything it started,
 * before a burst of creates, right after it and once the burst's extra standby browsers are gone. The machine is shared and noisy, so
 * what matters is the ratio of each pair of runs, which are interleaved to spread the noise.
 *
 * Goals are informational: the exit code is 0 whether they pass or not, non-zero only on errors.
 * Sample counts: BENCH_CREATES, BENCH_CYCLES, BENCH_ROUNDS, BENCH_CALLS, BENCH_BURST, BENCH_BURST_CYCLES, BENCH_CLI_RUNS,
 * BENCH_LOAD_ROUNDS, BENCH_LOAD_MS, BENCH_SPACED_CYCLES, BENCH_STOPS, BENCH_DELETES, BENCH_DECAY_MS (how long after
 * the burst its memory is read again), BENCH_DECAY_BURST.
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { sleep } from '../daemon/lib/procs.js';
import { DEFAULT_STANDBY } from '../src/standby.js';
import { startTestDaemon, type TestDaemon } from '../test/helpers/daemon.js';
import { type BurstRun, burstRun, renderBursts } from './burst.js';
import { cpuPerCycle } from './cpu.js';
import { idleDecay, spacedUnderHog, timedDeletes, timedStop, type IdleDecay, type SpacedRun } from './crowded.js';
import {
  boxesPssMiB,
  cliStartup,
  everythingPssMiB,
  footprint,
  idleCpuMsPerS,
  loadRound,
  pssMiB,
  relayPid,
  sessionPss,
  type LoadRound,
} from './footprint.js';
import { headlessBuild, intEnv, load, progress, runBench, shellEnv } from './lifecycle.js';
import {
  cdpRoundTrips,
  createSession,
  daemonCreate,
  daemonCyclePhases,
  deleteSession,
  interleave,
  rawCyclePhases,
  rawLaunch,
  spareReady,
  standbyFull,
  standbyReady,
  startHarness,
  type BenchContext,
  type CyclePhases,
} from './scenarios.js';
import { renderTable, summarize, type Comparison } from './stats.js';

const CONFIG = {
  creates: intEnv('BENCH_CREATES', 20),
  createWarmup: 2,
  cycles: intEnv('BENCH_CYCLES', 10),
  cycleWarmup: 1,
  rounds: intEnv('BENCH_ROUNDS', 20),
  callsPerRound: intEnv('BENCH_CALLS', 150),
  warmupCalls: 200,
  burst: intEnv('BENCH_BURST', 30),
  burstConcurrency: 5,
  burstCycles: intEnv('BENCH_BURST_CYCLES', 30),
  cliRuns: intEnv('BENCH_CLI_RUNS', 10),
  loadRounds: intEnv('BENCH_LOAD_ROUNDS', 3),
  loadMs: intEnv('BENCH_LOAD_MS', 15_000),
  spacedCycles: intEnv('BENCH_SPACED_CYCLES', 10),
  spacedGapMs: 2000,
  stops: intEnv('BENCH_STOPS', 2),
  deletes: intEnv('BENCH_DELETES', 5),
  decayMs: intEnv('BENCH_DECAY_MS', 5 * 60_000),
  decayBurst: intEnv('BENCH_DECAY_BURST', 10),
};

/** How long idle CPU is counted, and how long a standby browser's start is given to quiet down first. */
const IDLE_CPU_MS = 10_000;
const IDLE_SETTLE_MS = 15_000;

interface Contexts {
  /** Standby off: every create launches (the cold path). */
  cold: BenchContext;
  /** The default standby set: creates hand over a ready browser. */
  warm: BenchContext;
}

async function setUp(cleanups: (() => Promise<void>)[]): Promise<Contexts> {
  const { executable, fixtures, raw, daemon } = await startHarness(cleanups);
  const warm: TestDaemon = await startTestDaemon({ env: { RBROWSE_STANDBY: DEFAULT_STANDBY, RBROWSE_SPARE_BOXES: '', ...shellEnv() } });
  cleanups.push(() => warm.stop());
  progress(`daemons ${daemon.baseUrl} (standby off), ${warm.baseUrl} (default standby); headless sessions and raw launches run ${executable}`);
  const pageUrl = `${fixtures.url}/hello.html`;
  return { cold: { daemon, raw, pageUrl }, warm: { daemon: warm, raw, pageUrl } };
}

/**
 * A create served by a standby browser. Each sample waits (untimed) until one is ready, before it
 * and after it: the refill's launch must weigh on no sample, of either side.
 */
async function warmCreate(ctx: BenchContext): Promise<number> {
  await standbyReady(ctx.daemon);
  const ms = await daemonCreate(ctx);
  await standbyReady(ctx.daemon);
  return ms;
}

async function warmCycle(ctx: BenchContext): Promise<CyclePhases> {
  await standbyReady(ctx.daemon);
  const phases = await daemonCyclePhases(ctx);
  await standbyReady(ctx.daemon);
  return phases;
}

/** Wall time of `total` runs of `one`, `concurrency` at a time. */
async function burst(total: number, concurrency: number, one: () => Promise<void>): Promise<number> {
  let started = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started < total) {
        started++;
        await one();
      }
    }),
  );
  return performance.now() - start;
}

/** 30 headless sessions, 5 at a time, as a test suite's parallel workers would make them; deleted after (untimed; a long timeout, so none ends by itself on a slow machine before). */
async function sessionBurst(ctx: BenchContext): Promise<number> {
  const ids: string[] = [];
  const ms = await burst(
    CONFIG.burst,
    CONFIG.burstConcurrency,
    async () => void ids.push((await createSession(ctx.daemon, { headless: true, timeout_seconds: 600 })).session_id),
  );
  for (const id of ids) await deleteSession(ctx.daemon, id);
  return ms;
}

async function rawBurst(ctx: BenchContext): Promise<number> {
  const profiles = await Promise.all(Array.from({ length: CONFIG.burst }, () => ctx.raw.prepare()));
  const queue = [...profiles];
  try {
    return await burst(CONFIG.burst, CONFIG.burstConcurrency, async () => void (await ctx.raw.launch(queue.shift()!)));
  } finally {
    for (const p of profiles) await ctx.raw.dispose(p);
  }
}

const PHASES = ['create', 'connect', 'goto', 'close', 'delete'] as const;

async function measure({ cold, warm }: Contexts): Promise<{
  rows: Comparison[];
  bursts: BurstRun[];
  rounds: LoadRound[];
  idle: { cold: number; warm: number; spareBox: number; relay: number; cpuCold: number; cpuWarm: number };
  memory: { session: number; raw: number };
  /** PSS of everything a daemon started, idle: standby off, and a daemon with the defaults before a burst, at its peak and decayMs after. */
  everything: { cold: number; warm: number; decay: IdleDecay };
  spaced: SpacedRun;
  stops: { quiet: number[]; hogged: number[] };
}> {
  // Idle first, before anything has run in them.
  await spareReady(cold.daemon);
  const rss = {
    cold: (await footprint(cold.daemon)).rssMiB,
    warm: (await footprint(warm.daemon)).rssMiB,
    spareBox: await boxesPssMiB(cold.daemon),
    relay: await relayPid(cold.daemon).then((pid) => (pid ? pssMiB([pid]) : 0)),
  };
  // Both idle at once, every standby browser's start over (Chromium works for 8-20 s after one).
  await standbyFull(warm.daemon);
  await sleep(IDLE_SETTLE_MS);
  const [cpuCold, cpuWarm] = await Promise.all([idleCpuMsPerS(cold.daemon, IDLE_CPU_MS), idleCpuMsPerS(warm.daemon, IDLE_CPU_MS)]);
  const idle = { ...rss, cpuCold, cpuWarm };
  const everythingIdle = { cold: await everythingPssMiB(cold.daemon), warm: await everythingPssMiB(warm.daemon) };

  // Standby samples run on their own, and the cold ones in pairs with raw launches: interleaved
  // with standby creates, a cold create often came right after a standby refill, which no raw
  // launch ever did, and the ratio showed that neighbour rather than what the daemon adds.
  progress(`create: ${CONFIG.createWarmup} warm-up + ${CONFIG.creates} from standby, then as many cold and raw launches, alternating`);
  const [warmCreates] = await interleave(CONFIG.createWarmup, CONFIG.creates, [() => warmCreate(warm)]);
  const [coldCreates, launches] = await interleave(CONFIG.createWarmup, CONFIG.creates, [() => daemonCreate(cold), () => rawLaunch(cold)]);

  progress(`cycle: ${CONFIG.cycleWarmup} warm-up + ${CONFIG.cycles} from standby, then as many cold and raw cycles, alternating`);
  const [warmCycles] = await interleave(CONFIG.cycleWarmup, CONFIG.cycles, [() => warmCycle(warm)]);
  const [coldCycles, rawCycles] = await interleave(CONFIG.cycleWarmup, CONFIG.cycles, [() => daemonCyclePhases(cold), () => rawCyclePhases(cold)]);

  progress(`cpu: ${CONFIG.cycles} cold and raw cycles, alternating, CPU time counted per cycle`);
  const cpu = await cpuPerCycle({ raw: cold.raw, pageUrl: cold.pageUrl, cycles: CONFIG.cycles });

  progress(`cdp: ${CONFIG.rounds} rounds x ${CONFIG.callsPerRound} Runtime.evaluate per path`);
  const cdp = await cdpRoundTrips(cold, CONFIG);

  progress('memory: 3 headless sessions and 3 raw browsers with a page loaded');
  const pss: { session: number; raw: number }[] = [];
  for (let i = 0; i < 3; i++) pss.push(await sessionPss(cold));
  const memory = { session: summarize(pss.map((m) => m.session)).p50, raw: summarize(pss.map((m) => m.raw)).p50 };

  progress(`burst: ${CONFIG.burst} headless sessions ${CONFIG.burstConcurrency} at a time, 3 per side`);
  await standbyReady(warm.daemon);
  const [bursts, rawBursts] = await interleave(0, 3, [() => sessionBurst(warm), () => rawBurst(cold)]);

  const backToBack: BurstRun[] = [];
  for (const workMs of [0, 300]) {
    for (const clients of [1, 2])
      backToBack.push(await burstRun({ raw: cold.raw, pageUrl: cold.pageUrl, cycles: CONFIG.burstCycles, clients, workMs }));
  }

  const spaced = await spacedUnderHog({ raw: cold.raw, pageUrl: cold.pageUrl, cycles: CONFIG.spacedCycles, gapMs: CONFIG.spacedGapMs });

  progress(`stop: ${CONFIG.stops} stops of a busy daemon a side, quiet and under a CPU hog, alternating`);
  const stops = { quiet: [] as number[], hogged: [] as number[] };
  for (let i = 0; i < CONFIG.stops; i++) {
    stops.quiet.push(await timedStop(false));
    stops.hogged.push(await timedStop(true));
  }

  progress(`deletes: ${CONFIG.deletes} rounds of a pool deleted as its browser launches and a session deleted, quiet and under a CPU hog`);
  const quietDeletes = await timedDeletes(CONFIG.deletes, false);
  const hoggedDeletes = await timedDeletes(CONFIG.deletes, true);

  progress(`cli: ${CONFIG.cliRuns} runs of rbrowse --version, rbrowse ls and node -e 0`);
  const cli = await cliStartup(cold.daemon, CONFIG.cliRuns);

  progress(`load: ${CONFIG.loadRounds} rounds of ${CONFIG.loadMs / 1000} s (8 API clients, 2 session churners)`);
  const rounds: LoadRound[] = [];
  for (let i = 0; i < CONFIG.loadRounds; i++) rounds.push(await loadRound(cold.daemon, { ms: CONFIG.loadMs, readers: 8, churners: 2 }));

  // Last, with nothing else running: it idles for decayMs.
  const everything = {
    ...everythingIdle,
    decay: await idleDecay({ creates: CONFIG.decayBurst, concurrency: CONFIG.burstConcurrency, decayMs: CONFIG.decayMs }),
  };

  const total = (c: CyclePhases[]) => summarize(c.map((x) => x.total));
  const launch = summarize(launches!);
  const rows: Comparison[] = [
    { metric: 'create from standby vs spawn->DevTools', unit: 'ms', rbrowse: summarize(warmCreates!), raw: launch, maxP50: 10 },
    { metric: 'create cold vs spawn->DevTools', unit: 'ms', rbrowse: summarize(coldCreates!), raw: launch, goal: 1.1 },
    { metric: 'cycle from standby vs raw cycle', unit: 'ms', rbrowse: total(warmCycles!), raw: total(rawCycles!) },
    // The yardstick: a whole warm cycle against one raw launch alone.
    { metric: 'cycle from standby vs spawn->DevTools', unit: 'ms', rbrowse: total(warmCycles!), raw: launch, goal: 0.5, maxP50: 100 },
    ...PHASES.map((p) => ({
      metric: `  standby cycle: ${p}`,
      unit: 'ms' as const,
      rbrowse: summarize(warmCycles!.map((c) => c[p])),
      raw: summarize(rawCycles!.map((c) => c[p])),
    })),
    { metric: 'cycle cold vs raw cycle', unit: 'ms', rbrowse: total(coldCycles!), raw: total(rawCycles!) },
    ...PHASES.map((p) => ({
      metric: `  cold cycle: ${p}`,
      unit: 'ms' as const,
      rbrowse: summarize(coldCycles!.map((c) => c[p])),
      raw: summarize(rawCycles!.map((c) => c[p])),
    })),
    // What a back-to-back cycle on two cores is bound by: everything a session runs, against a raw browser.
    ...(cpu ? [{ metric: 'CPU time per cycle, cold vs raw', unit: 'ms' as const, rbrowse: summarize(cpu.rbrowse), raw: summarize(cpu.raw) }] : []),
    { metric: 'cdp: Runtime.evaluate 1+1, gateway vs direct', unit: 'us', rbrowse: summarize(cdp.gateway), raw: summarize(cdp.direct) },
    // Not rbrowse: what any Node process in the path costs here, to read the line above against.
    { metric: 'cdp via a Node TCP splice (floor)', unit: 'us', rbrowse: summarize(cdp.splice), raw: summarize(cdp.direct) },
    { metric: 'cdp via a bare Node ws relay (reference)', unit: 'us', rbrowse: summarize(cdp.bareRelay), raw: summarize(cdp.direct) },
    // The goal: no Node relay gets near direct here (the splice alone is 1.2x), so the gateway is held to the splice.
    { metric: 'cdp: gateway vs the Node TCP splice', unit: 'us', rbrowse: summarize(cdp.gateway), raw: summarize(cdp.splice), goal: 1.05 },
    { metric: `${CONFIG.burst} sessions, ${CONFIG.burstConcurrency} at a time`, unit: 'ms', rbrowse: summarize(bursts!), raw: summarize(rawBursts!) },
    { metric: 'rbrowse --version vs node -e 0', unit: 'ms', rbrowse: summarize(cli.version), raw: summarize(cli.node), maxP50: 150 },
    { metric: 'rbrowse ls vs node -e 0', unit: 'ms', rbrowse: summarize(cli.ls), raw: summarize(cli.node), maxP50: 150 },
    {
      metric: `cycle ${CONFIG.spacedGapMs / 1000} s apart under a CPU hog vs raw cycle`,
      unit: 'ms',
      rbrowse: summarize(spaced.rbrowse),
      raw: summarize(spaced.raw),
      goal: 0.5,
    },
    { metric: 'daemon stop under a CPU hog vs quiet', unit: 'ms', rbrowse: summarize(stops.hogged), raw: summarize(stops.quiet), maxP50: 5000 },
    {
      metric: 'DELETE pool, launching, hog vs quiet',
      unit: 'ms',
      rbrowse: summarize(hoggedDeletes.pool),
      raw: summarize(quietDeletes.pool),
      maxP50: 1000,
    },
    {
      metric: 'DELETE session, hog vs quiet',
      unit: 'ms',
      rbrowse: summarize(hoggedDeletes.session),
      raw: summarize(quietDeletes.session),
      maxP50: 1000,
    },
  ];
  return { rows, bursts: backToBack, rounds, idle, memory, everything, spaced, stops };
}

function report(r: Awaited<ReturnType<typeof measure>>, loadBefore: string): void {
  console.log(`\nrbrowse bench: ${cpus().length} CPUs, load average ${loadBefore} before, ${load()} after`);
  console.log(`raw = the same Chromium flags launched directly (${headlessBuild()}); cdp raw = the session's own DevTools socket`);
  console.log('ratio = rbrowse p50 / raw p50 (p95 ratio in parentheses); goals are informational\n');
  console.log(renderTable(r.rows));
  const [gateway, splice] = r.rows.filter((row) => row.unit === 'us');
  if (gateway && splice) {
    const extra = (c: Comparison) => Math.round((c.rbrowse.p50 - c.raw.p50) * 1000);
    console.log(`\nper CDP call at p50: the gateway adds ${extra(gateway)} µs, a bare TCP splice ${extra(splice)} µs`);
  }
  console.log(
    `\nback-to-back create -> connect -> goto -> (page work) -> disconnect -> delete, no gap; a fresh daemon with the default standby set per run;`,
  );
  console.log('cycle times leave the page work out; raw = the same cycles on raw Chromium, same concurrency, same run');
  console.log(renderBursts(r.bursts));
  console.log(`\ndaemon RSS idle: ${r.idle.cold.toFixed(0)} MiB (standby off), ${r.idle.warm.toFixed(0)} MiB (default standby); goal <= 80 MiB`);
  console.log(`spare session box (RBROWSE_SPARE_BOXES=1), outside the daemon: ${r.idle.spareBox.toFixed(0)} MiB PSS`);
  console.log(`the CDP relay process, outside the daemon: ${r.idle.relay.toFixed(0)} MiB PSS`);
  console.log(
    `idle CPU of the daemon and all it started, over ${IDLE_CPU_MS / 1000} s: ${r.idle.cpuCold.toFixed(1)} ms a second (standby off, a spare box), ${r.idle.cpuWarm.toFixed(1)} ms (default standby)`,
  );
  console.log(
    `a headless session with a page loaded: ${r.memory.session.toFixed(0)} MiB PSS (its whole box), a raw Chromium ${r.memory.raw.toFixed(0)} MiB (${(r.memory.session / r.memory.raw).toFixed(2)}x)`,
  );
  const e = r.everything;
  const x = e.decay;
  console.log(
    `everything the daemon started, idle, PSS: ${e.cold.toFixed(0)} MiB (standby off, a spare box), ${e.warm.toFixed(0)} MiB (default standby, a spare box, no burst budget)`,
  );
  console.log(
    `a daemon with the defaults (standby set, burst budget, a spare box): ${x.before.toFixed(0)} MiB before a burst of ${CONFIG.decayBurst} creates, ` +
      `${x.peak.toFixed(0)} MiB once the ${x.burstExtra} extra standby browsers it asked for were up, ${x.decayed.toFixed(0)} MiB ` +
      `${(x.decayedAfterMs / 60_000).toFixed(1)} min after it (${(x.decayed / x.before).toFixed(2)}x before; goal <= 1.10x: ${x.decayed <= x.before * 1.1 ? 'PASS' : 'MISS'})`,
  );
  const s = r.spaced.served;
  console.log(
    `cycles ${CONFIG.spacedGapMs / 1000} s apart under a CPU hog (2 busy loops per core): standby served ${s.fromReady + s.fromLaunch} of ${s.creates} creates ` +
      `(${s.fromLaunch} still launching); daemon stop: a daemon with 3 sessions, the default standby and a pool of 2 idle browsers`,
  );
  console.log('load rounds (8 API clients reading/PATCHing, 2 creating and deleting sessions; after a 3 s settle):');
  console.log('round  RSS (anon) MiB  fds  sessions  read p50 / p99 ms  requests by status');
  r.rounds.forEach((x, i) => {
    const reads = `${x.reads.p50.toFixed(1)} / ${x.reads.p99.toFixed(1)}`;
    const rss = `${x.rssMiB.toFixed(0)} (${x.anonMiB.toFixed(0)})`;
    console.log(
      `${String(i + 1).padEnd(5)}  ${rss.padEnd(14)}  ${String(x.fds).padEnd(3)}  ${String(x.created).padEnd(8)}  ${reads.padEnd(17)}  ${JSON.stringify(x.requests)}`,
    );
  });
  if (r.rounds.length > 1) {
    const [first, last] = [r.rounds[1]!, r.rounds.at(-1)!];
    console.log(
      `growth from round 2 to round ${r.rounds.length}: ${(last.rssMiB - first.rssMiB).toFixed(1)} MiB RSS ` +
        `(${(last.anonMiB - first.anonMiB).toFixed(1)} anon), ${last.fds - first.fds} fds (round 1 includes first-use warm-up)`,
    );
  }
}

runBench(async (cleanups) => {
  const loadBefore = load();
  const contexts = await setUp(cleanups);
  report(await measure(contexts), loadBefore);
});
