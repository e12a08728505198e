import { performance } from 'node:perf_hooks';
import { chromium } from 'playwright';
import type { BrowserSession } from '../src/api/browsers.js';
import { startTestDaemon, tornDown, type TestDaemon } from '../test/helpers/daemon.js';
import { startFixtureServer } from '../test/helpers/fixtures.js';
import { headlessBuild, shellEnv } from './lifecycle.js';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { boxProcess, directWsUrl } from './cdp.js';
import { RawChromiums } from './raw.js';
import { startRelay } from './relay.js';

export interface BenchContext {
  daemon: TestDaemon;
  raw: RawChromiums;
  /** A small local page both sides navigate to. */
  pageUrl: string;
}

/** One run of one side: a time in milliseconds, or several. */
type Run<T> = () => Promise<T>;

/**
 * Runs every side warmup + iterations times, in the order ABC, CBA, ABC, ... so slow drift on a
 * shared machine (other jobs, thermal, caches) lands on all sides alike; warm-up runs are dropped.
 * Returns the results per side, in the order the sides were given.
 */
export async function interleave<T>(warmup: number, iterations: number, sides: Run<T>[]): Promise<T[][]> {
  const results: T[][] = sides.map(() => []);
  const indices = sides.map((_, i) => i);
  for (let round = 0; round < warmup + iterations; round++) {
    for (const i of round % 2 === 0 ? indices : [...indices].reverse()) {
      const result = await sides[i]!();
      if (round >= warmup) results[i]!.push(result);
    }
  }
  return results;
}

/** interleave() of two sides. */
export async function alternate<T>(warmup: number, iterations: number, a: Run<T>, b: Run<T>): Promise<[T[], T[]]> {
  const [as, bs] = await interleave(warmup, iterations, [a, b]);
  return [as!, bs!];
}

export async function createSession(d: TestDaemon, body: object): Promise<BrowserSession> {
  const res = await d.api<BrowserSession>('POST', '/browsers', body);
  if (res.status !== 200) throw new Error(`POST /browsers answered ${res.status}: ${res.text}`);
  return res.body;
}

export async function deleteSession(d: TestDaemon, id: string): Promise<void> {
  const res = await d.api('DELETE', `/browsers/${id}`);
  if (res.status !== 204) throw new Error(`DELETE /browsers/${id} answered ${res.status}: ${res.text}`);
}

export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** POST /browsers, then its DELETE, each timed: the DELETE includes what the session's features do at its end. */
export async function createAndEnd(d: TestDaemon, body: object): Promise<{ create: number; end: number }> {
  let id = '';
  const create = await timed(async () => (id = (await createSession(d, body)).session_id));
  const end = await timed(() => deleteSession(d, id));
  return { create, end };
}

/** POST /browsers until it answers (the session is fully up by then); the DELETE is not timed. */
export async function daemonCreate(ctx: BenchContext): Promise<number> {
  let session: BrowserSession | undefined;
  const ms = await timed(async () => (session = await createSession(ctx.daemon, { headless: true })));
  await deleteSession(ctx.daemon, session!.session_id);
  await settle(ctx.daemon, session!.session_id);
  return ms;
}

/**
 * Waits (untimed) for a deleted session's background teardown, so the Chromium still closing
 * does not weigh on the next sample of either side: samples stay independent.
 */
export async function settle(d: TestDaemon, id: string): Promise<void> {
  await tornDown(d, id, 60_000);
  await spareReady(d);
}

/** Waits (untimed) until the daemon's spare boxes are all started again: their start weighs on no sample. */
export function spareReady(d: TestDaemon, timeoutMs = 60_000): Promise<void> {
  return healthUntil(
    d,
    (h) => !h.spare_boxes || h.spare_boxes.ready >= h.spare_boxes.wanted,
    `spare boxes not started again within ${timeoutMs} ms`,
    timeoutMs,
  );
}

/** Polls GET /health until `done` holds of its body; throws `failure` past the timeout. */
async function healthUntil(d: TestDaemon, done: (health: any) => boolean, failure: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (done((await d.api('GET', '/health', undefined, null)).body ?? {})) return;
    if (Date.now() > deadline) throw new Error(failure);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Spawn to "DevTools listening" of a raw Chromium; directories and the close are not timed. */
export async function rawLaunch(ctx: BenchContext): Promise<number> {
  const profile = await ctx.raw.prepare();
  try {
    return await timed(() => ctx.raw.launch(profile));
  } finally {
    await ctx.raw.dispose(profile);
  }
}

/** The parts of a client's cycle, each in ms; for raw Chromium create is the launch and delete the close. */
export interface CyclePhases {
  total: number;
  create: number;
  connect: number;
  goto: number;
  close: number;
  delete: number;
}

/** What a typical client does once connected: playwright over CDP, load a page, disconnect; its phases timed. */
export async function visit(wsUrl: string, pageUrl: string): Promise<Pick<CyclePhases, 'connect' | 'goto' | 'close'>> {
  let t = performance.now();
  const lap = () => {
    const now = performance.now();
    const ms = now - t;
    t = now;
    return ms;
  };
  const browser = await chromium.connectOverCDP(wsUrl);
  const connect = lap();
  let goto = 0;
  try {
    const context = browser.contexts()[0] ?? (await browser.newContext());
    const page = context.pages()[0] ?? (await context.newPage());
    const res = await page.goto(pageUrl);
    if (!res?.ok()) throw new Error(`goto ${pageUrl} answered ${res?.status()}`);
    goto = lap();
  } finally {
    // Over CDP this only disconnects; the browser's end is the DELETE / close that follows.
    await browser.close();
  }
  return { connect, goto, close: lap() };
}

/** Waits until the daemon's standby set has a browser of the kind ready (GET /health). */
export function standbyReady(d: TestDaemon, kind = 'headless@1920x1080@25', timeoutMs = 60_000): Promise<void> {
  return healthUntil(d, (h) => (h.standby?.[kind]?.ready ?? 0) > 0, `no ${kind} standby browser within ${timeoutMs} ms`, timeoutMs);
}

/** Until every kind of the daemon's standby set has all the browsers it keeps ready. */
export function standbyFull(d: TestDaemon, timeoutMs = 60_000): Promise<void> {
  return healthUntil(
    d,
    (h) => Object.values((h.standby ?? {}) as Record<string, { ready: number; wanted: number }>).every((k) => k.ready >= k.wanted),
    `the standby set was not full within ${timeoutMs} ms`,
    timeoutMs,
  );
}

/** create -> connectOverCDP -> goto -> disconnect -> DELETE, each part timed. */
export async function daemonCyclePhases(ctx: Pick<BenchContext, 'daemon' | 'pageUrl'>): Promise<CyclePhases> {
  const start = performance.now();
  const session = await createSession(ctx.daemon, { headless: true });
  const create = performance.now() - start;
  let parts: Pick<CyclePhases, 'connect' | 'goto' | 'close'> | undefined;
  let del = 0;
  try {
    parts = await visit(session.cdp_ws_url, ctx.pageUrl);
  } finally {
    const before = performance.now();
    await deleteSession(ctx.daemon, session.session_id);
    del = performance.now() - before;
  }
  const total = performance.now() - start;
  await settle(ctx.daemon, session.session_id);
  return { total, create, ...parts, delete: del };
}

/** launch -> connectOverCDP -> goto -> disconnect -> close + remove profile, each part timed. */
export async function rawCyclePhases(ctx: BenchContext): Promise<CyclePhases> {
  const profile = await ctx.raw.prepare();
  const start = performance.now();
  let create = 0;
  let parts: Pick<CyclePhases, 'connect' | 'goto' | 'close'> = { connect: 0, goto: 0, close: 0 };
  let before = start;
  try {
    const browser = await ctx.raw.launch(profile);
    create = performance.now() - start;
    parts = await visit(browser.wsUrl, ctx.pageUrl);
  } finally {
    before = performance.now();
    await ctx.raw.dispose(profile);
  }
  const end = performance.now();
  return { total: end - start, create, ...parts, delete: end - before };
}

/** create -> connectOverCDP -> goto -> disconnect -> DELETE, all timed. */
export async function daemonCycle(ctx: Pick<BenchContext, 'daemon' | 'pageUrl'>): Promise<number> {
  return (await daemonCyclePhases(ctx)).total;
}

export interface RoundTripOptions {
  /** Calls per side discarded first (JIT, connection and target warm-up). */
  warmupCalls: number;
  rounds: number;
  callsPerRound: number;
}

/** Per-call Runtime.evaluate times (ms) of each path to one session's Chromium. */
export interface RoundTrips {
  gateway: number[];
  direct: number[];
  /** Through bench/relay.ts: the cost of any extra Node hop, without the gateway's own work. */
  bareRelay: number[];
  /** Through bench/relay.ts as a TCP splice: the floor of a Node process in the path. */
  splice: number[];
}

/** The bench/cdp-timer.ts process: one round of `calls` per path, on request. */
interface TimerProcess {
  round(calls: number): Promise<Record<string, number[]>>;
  stop(): void;
}

async function startTimer(args: string[]): Promise<TimerProcess> {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(new URL('./cdp-timer.ts', import.meta.url)), ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async () => (await lines.next()).value as string;
  const stop = () => {
    child.stdin!.end();
    child.kill('SIGKILL');
  };
  if ((await next()) !== 'ready') {
    stop();
    throw new Error('bench/cdp-timer.ts did not start');
  }
  return {
    round: async (calls) => {
      child.stdin!.write(`${JSON.stringify({ calls })}\n`);
      return JSON.parse(await next()) as Record<string, number[]>;
    },
    stop,
  };
}

/**
 * Runtime.evaluate("1+1") round trips through the gateway against the same session's Chromium
 * reached directly, through a bare relay and through a TCP splice: one browser, one page, so the
 * only difference is what sits in the path. Its DevTools port is in its box's network namespace:
 * the direct path and the relays' upstreams are sockets connected there and handed over, as the
 * daemon's own are (bench/box-connect.ts). One client process times all four, call by call in
 * turn (bench/cdp-timer.ts).
 */
export async function cdpRoundTrips(ctx: BenchContext, o: RoundTripOptions): Promise<RoundTrips> {
  const session = await createSession(ctx.daemon, { headless: true, timeout_seconds: 600 });
  const stops: (() => void)[] = [];
  try {
    const netns = `/proc/${await boxProcess(ctx.daemon.home, session.session_id)}/ns/net`;
    const direct = await directWsUrl(ctx.daemon, session.session_id);
    const relay = async (mode: 'ws' | 'tcp') => {
      const r = await startRelay(direct, mode, netns);
      stops.push(r.stop);
      return r.url;
    };
    const paths = [
      { name: 'direct', url: direct, netns },
      { name: 'bareRelay', url: await relay('ws') },
      { name: 'splice', url: await relay('tcp') },
      { name: 'gateway', url: session.cdp_ws_url },
    ];
    const timer = await startTimer([JSON.stringify(paths)]);
    stops.push(timer.stop);
    await timer.round(o.warmupCalls);
    const out: RoundTrips = { gateway: [], direct: [], bareRelay: [], splice: [] };
    // Samples are per call, pooled over rounds.
    for (let round = 0; round < o.rounds; round++) {
      for (const [name, ms] of Object.entries(await timer.round(o.callsPerRound))) out[name as keyof RoundTrips].push(...ms);
    }
    return out;
  } finally {
    for (const stop of stops) stop();
    await deleteSession(ctx.daemon, session.session_id);
  }
}

/**
 * What every bench starts: the fixture server, a raw-Chromium launcher and a daemon, each with
 * its stop step pushed onto `cleanups` (run last-in, first-out).
 */
export async function startHarness(cleanups: (() => Promise<void>)[], standby = '0') {
  const executable = headlessBuild();
  const fixtures = await startFixtureServer();
  cleanups.push(fixtures.close);
  const raw = await RawChromiums.create(executable);
  cleanups.push(async () => {
    const strays = await raw.disposeAll();
    if (strays.length) console.error(`warning: raw Chromium processes outlived their close() and were killed: ${strays.join(', ')}`);
  });
  // Standby off unless asked: a bench measures one path at a time.
  // Spare boxes as shipped (the tests' daemons keep none).
  const daemon = await startTestDaemon({ env: { RBROWSE_STANDBY: standby, RBROWSE_SPARE_BOXES: '', ...shellEnv() } });
  cleanups.push(() => daemon.stop());
  return { executable, fixtures, raw, daemon };
}
