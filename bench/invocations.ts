/**
 * Invocations: the end-to-end time of a trivial action (fixtures/apps/bench, action noop) invoked
 * sync (POST until the answer) and async (POST, then the SDK's follow until `succeeded`), against
 * the raw baseline of running the same harness child directly (no daemon, no HTTP), and against
 * what the child measured itself: its handler's run time and its own age when it returned.
 * Run with `npm run bench:invocations` (builds first). Samples: BENCH_INVOCATIONS (default 10).
 */
import { cpus, loadavg } from 'node:os';
import Kernel from '@onkernel/sdk';
import { execa } from 'execa';
import { runnerScript } from '../daemon/lib/node-runner.js';
import { deployFixtureApp } from '../test/helpers/apps.js';
import { ROOT, startTestDaemon } from '../test/helpers/daemon.js';
import { renderTable, summarize, type Comparison } from './stats.js';
import { timed } from './scenarios.js';

const RUNS = Number(process.env.BENCH_INVOCATIONS) > 0 ? Number(process.env.BENCH_INVOCATIONS) : 10;
const WARMUP = 2;
const APP_DIR = `${ROOT}fixtures/apps/bench`;

interface SelfTiming {
  handler_ms: number;
  uptime_ms: number;
}

const progress = (msg: string) => console.error(`[bench:invocations] ${msg}`);

/**
 * The harness run by hand, as the daemon ran it before apps had boxes (a plain child of the
 * daemon's Node, on the host): the floor any invocation stands on, and the baseline of what the
 * box costs.
 */
async function rawRun(): Promise<SelfTiming> {
  const result = await execa(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), runnerScript('apps', 'harness.mjs'), 'run', 'index.ts', 'bench', 'noop'],
    {
      cwd: APP_DIR,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: APP_DIR, KERNEL_API_KEY: 'unused', RBROWSE_PAYLOAD: '{"n":1}', RBROWSE_RESULT_FD: '3' },
      extendEnv: false,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    },
  );
  const message = JSON.parse(String(result.stdio[3]).trim().split('\n').at(-1)!) as { type: string; output: string };
  if (message?.type !== 'result') throw new Error(`raw run failed: ${JSON.stringify(message)}`);
  return JSON.parse(message.output) as SelfTiming;
}

interface Series<T> {
  ms: number[];
  results: T[];
}

/** Runs the measured calls in turns (raw, sync, async, raw, ...), so a load change on this shared machine hits all alike. */
async function interleaved<R extends Record<string, () => Promise<unknown>>>(
  runs: R,
): Promise<{ [K in keyof R]: Series<Awaited<ReturnType<R[K]>>> }> {
  const out = Object.fromEntries(Object.keys(runs).map((k) => [k, { ms: [], results: [] }])) as Record<string, Series<unknown>>;
  for (let i = 0; i < WARMUP + RUNS; i++) {
    for (const [name, run] of Object.entries(runs)) {
      let result: unknown;
      const elapsed = await timed(async () => (result = await run()));
      if (i < WARMUP) continue;
      out[name]!.ms.push(elapsed);
      out[name]!.results.push(result);
    }
  }
  progress(`${RUNS} runs of each, after ${WARMUP} warm-up runs`);
  return out as { [K in keyof R]: Series<Awaited<ReturnType<R[K]>>> };
}

async function main(): Promise<void> {
  progress(
    `${cpus().length} cpus, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  // App boxes started ahead as shipped: all but the first invocation of the bench app start in one.
  const daemon = await startTestDaemon({ env: { RBROWSE_APP_SPARE_BOXES: '1' } });
  try {
    const kernel = new Kernel({ apiKey: daemon.apiKey, baseURL: daemon.baseUrl, maxRetries: 0, timeout: 120_000 });
    await deployFixtureApp(kernel, 'bench');
    const params = { app_name: 'bench', version: 'latest', action_name: 'noop', payload: '{"n":1}' };

    const { raw, sync, async_ } = await interleaved({
      raw: rawRun,
      sync: async () => {
        const inv = await kernel.invocations.create(params);
        if (inv.status !== 'succeeded') throw new Error(`sync invocation ${inv.status}: ${inv.status_reason}`);
        return JSON.parse(inv.output!) as SelfTiming;
      },
      async_: async () => {
        const inv = await kernel.invocations.create({ ...params, async: true });
        for await (const e of await kernel.invocations.follow(inv.id)) {
          if (e.event !== 'invocation_state') continue;
          if (e.invocation.status === 'succeeded') return;
          if (e.invocation.status === 'failed') throw new Error(`async invocation failed: ${e.invocation.status_reason}`);
        }
        throw new Error('the event stream ended before succeeded');
      },
    });

    const handler = sync.results.map((r) => r.handler_ms);
    const uptime = sync.results.map((r) => r.uptime_ms);
    const rows: Comparison[] = [
      { metric: 'sync invocation vs raw harness run', unit: 'ms', rbrowse: summarize(sync.ms), raw: summarize(raw.ms) },
      { metric: 'async until succeeded vs raw harness run', unit: 'ms', rbrowse: summarize(async_.ms), raw: summarize(raw.ms) },
      { metric: "sync invocation vs the child's age at return", unit: 'ms', rbrowse: summarize(sync.ms), raw: summarize(uptime) },
      { metric: "sync invocation vs the handler's own run time", unit: 'ms', rbrowse: summarize(sync.ms), raw: summarize(handler) },
    ];
    console.log(renderTable(rows));
    const p50 = (xs: number[]) => summarize(xs).p50;
    console.log(
      `\nhandler ${(p50(handler) * 1000).toFixed(1)} µs; child age at return ${p50(uptime).toFixed(0)} ms (raw run: ${p50(raw.results.map((r) => r.uptime_ms)).toFixed(0)} ms); ` +
        `daemon overhead beyond the raw run: sync ${(p50(sync.ms) - p50(raw.ms)).toFixed(0)} ms, async ${(p50(async_.ms) - p50(raw.ms)).toFixed(0)} ms`,
    );
    const spares = (await daemon.api('GET', '/health', undefined, null)).body.app_spare_boxes as { served: number };
    const invocations = 2 * (WARMUP + RUNS);
    console.log(`${spares.served} of ${invocations} invocations started in a box started ahead (RBROWSE_APP_SPARE_BOXES=1)`);
  } finally {
    await daemon.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
