/**
 * Browser pools: acquire latency with an idle browser, the time to fill a pool of 5, and a
 * client's acquire-connect-goto-release cycle against the same work through POST /browsers.
 * Run with `npx tsx bench/pools.ts` after `npm run build`. Sample counts: BENCH_ACQUIRES,
 * BENCH_FILLS, BENCH_CYCLES. Goals are informational; the exit code is non-zero only on errors.
 */
import { cpus, loadavg } from 'node:os';
import { startTestDaemon, type TestDaemon } from '../test/helpers/daemon.js';
import { startFixtureServer } from '../test/helpers/fixtures.js';
import { daemonCycle, interleave, timed, visit, type BenchContext } from './scenarios.js';
import { percentile, textTable } from './stats.js';

const intEnv = (name: string, fallback: number) => {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
};
const ACQUIRES = intEnv('BENCH_ACQUIRES', 300);
const FILLS = intEnv('BENCH_FILLS', 3);
const CYCLES = intEnv('BENCH_CYCLES', 8);
/** So high that launches are never held back by the rate: the fill time is the launch time. */
const UNLIMITED_RATE = 1_000_000;

type PoolBenchContext = Pick<BenchContext, 'daemon' | 'pageUrl'>;

const progress = (msg: string) => console.error(`[bench:pools] ${msg}`);

async function call(d: TestDaemon, method: string, path: string, body?: object, expect = 200) {
  const res = await d.api(method, path, body);
  if (res.status !== expect) throw new Error(`${method} ${path} answered ${res.status}: ${res.text}`);
  return res.body;
}

async function createPool(d: TestDaemon, size: number): Promise<string> {
  return (await call(d, 'POST', '/browser_pools', { size, headless: true, fill_rate_per_minute: UNLIMITED_RATE })).id;
}

async function waitFull(d: TestDaemon, pool: string, size: number): Promise<void> {
  while ((await call(d, 'GET', `/browser_pools/${pool}`)).available_count < size) {
    await new Promise((r) => setTimeout(r, 10));
  }
}

const deletePool = (d: TestDaemon, pool: string) => call(d, 'DELETE', `/browser_pools/${pool}`, { force: true }, 204);

/** Acquire with a browser idle, timed alone; the release that puts it back is not timed. */
async function acquireLatency(d: TestDaemon): Promise<number[]> {
  const pool = await createPool(d, 1);
  try {
    await waitFull(d, pool, 1);
    const samples: number[] = [];
    for (let i = 0; i < ACQUIRES + 20; i++) {
      let id = '';
      const ms = await timed(async () => (id = (await call(d, 'POST', `/browser_pools/${pool}/acquire`, {})).session_id));
      await call(d, 'POST', `/browser_pools/${pool}/release`, { session_id: id }, 204);
      if (i >= 20) samples.push(ms);
    }
    return samples;
  } finally {
    await deletePool(d, pool);
  }
}

/** POST /browser_pools until all 5 are idle and acquirable. */
async function fillTimes(d: TestDaemon): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < FILLS; i++) {
    let pool = '';
    samples.push(await timed(async () => waitFull(d, (pool = await createPool(d, 5)), 5)));
    await deletePool(d, pool);
  }
  return samples;
}

/** acquire -> connectOverCDP -> goto -> disconnect -> release, all timed. */
function poolCycle(ctx: PoolBenchContext, pool: string, reuse: boolean): () => Promise<number> {
  const d = ctx.daemon;
  return async () => {
    if (!reuse) await waitFull(d, pool, 1); // a replacement is made after each cycle; not timed
    return timed(async () => {
      const session = await call(d, 'POST', `/browser_pools/${pool}/acquire`, {});
      try {
        await visit(session.cdp_ws_url, ctx.pageUrl);
      } finally {
        await call(d, 'POST', `/browser_pools/${pool}/release`, { session_id: session.session_id, reuse }, 204);
      }
    });
  };
}

async function cycles(ctx: PoolBenchContext): Promise<number[][]> {
  const reused = await createPool(ctx.daemon, 1);
  const fresh = await createPool(ctx.daemon, 1);
  try {
    await Promise.all([waitFull(ctx.daemon, reused, 1), waitFull(ctx.daemon, fresh, 1)]);
    return await interleave(1, CYCLES, [poolCycle(ctx, reused, true), poolCycle(ctx, fresh, false), () => daemonCycle(ctx)]);
  } finally {
    await Promise.all([deletePool(ctx.daemon, reused), deletePool(ctx.daemon, fresh)]);
  }
}

function row(metric: string, samples: number[], goal = '') {
  const sorted = [...samples].sort((a, b) => a - b);
  const f = (ms: number) => ms.toFixed(ms < 10 ? 2 : 1);
  return [metric, String(sorted.length), f(percentile(sorted, 0.5)), f(percentile(sorted, 0.99)), goal];
}

function render(rows: string[][]): string {
  return textTable(['metric [ms]', 'n', 'p50', 'p99', 'goal'], rows);
}

async function main(): Promise<void> {
  const loadBefore = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  const fixtures = await startFixtureServer();
  const daemon = await startTestDaemon();
  const stop = () => Promise.allSettled([fixtures.close(), daemon.stop()]);
  process.once('SIGINT', () => void stop().finally(() => process.exit(130)));
  try {
    const ctx: PoolBenchContext = { daemon, pageUrl: `${fixtures.url}/hello.html` };
    progress(`acquire: ${ACQUIRES} with an idle browser`);
    const acquires = await acquireLatency(daemon);
    progress(`fill: ${FILLS} pools of 5`);
    const fills = await fillTimes(daemon);
    progress(`cycle: 1 warm-up + ${CYCLES} per side`);
    const [reused, fresh, direct] = await cycles(ctx);
    const p50 = (s: number[]) =>
      percentile(
        [...s].sort((a, b) => a - b),
        0.5,
      );
    console.log(`\nrbrowse pools bench: ${cpus().length} CPUs, load average ${loadBefore} before`);
    console.log(
      render([
        row('acquire, browser idle', acquires, `p50 < 5: ${p50(acquires) < 5 ? 'PASS' : 'MISS'}`),
        row('fill a pool of 5 (rate unlimited)', fills),
        row('cycle: acquire+connect+goto+release (reuse)', reused!),
        row('cycle: acquire+connect+goto+release (reuse false)', fresh!),
        row('cycle: POST /browsers+connect+goto+DELETE', direct!),
      ]),
    );
    console.log(`\npool cycle (reuse) is ${(p50(direct!) / p50(reused!)).toFixed(1)}x faster than POST /browsers at p50`);
  } finally {
    await stop();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
