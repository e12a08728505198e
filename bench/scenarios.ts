import { performance } from 'node:perf_hooks';
import { chromium } from 'playwright';
import type { BrowserSession } from '../src/api/schemas.js';
import type { TestDaemon } from '../test/helpers/daemon.js';
import { CdpClient, directWsUrl } from './cdp.js';
import type { RawChromiums } from './raw.js';

export interface BenchContext {
  daemon: TestDaemon;
  raw: RawChromiums;
  /** A small local page both sides navigate to. */
  pageUrl: string;
}

/** One run of one side: a time in milliseconds, or several. */
type Run<T> = () => Promise<T>;

/**
 * Runs `a` and `b` warmup + iterations times each, in ABBA order so slow drift on a shared
 * machine (other jobs, thermal, caches) lands on both sides equally; warm-up runs are dropped.
 */
export async function alternate<T>(warmup: number, iterations: number, a: Run<T>, b: Run<T>): Promise<[T[], T[]]> {
  const as: T[] = [];
  const bs: T[] = [];
  for (let i = 0; i < warmup + iterations; i++) {
    const keep = i >= warmup;
    const order: [Run<T>, T[]][] = i % 2 === 0 ? [[a, as], [b, bs]] : [[b, bs], [a, as]];
    for (const [run, into] of order) {
      const result = await run();
      if (keep) into.push(result);
    }
  }
  return [as, bs];
}

async function createSession(d: TestDaemon, body: object): Promise<BrowserSession> {
  const res = await d.api<BrowserSession>('POST', '/browsers', body);
  if (res.status !== 200) throw new Error(`POST /browsers answered ${res.status}: ${res.text}`);
  return res.body;
}

async function deleteSession(d: TestDaemon, id: string): Promise<void> {
  const res = await d.api('DELETE', `/browsers/${id}`);
  if (res.status !== 204) throw new Error(`DELETE /browsers/${id} answered ${res.status}: ${res.text}`);
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** POST /browsers until it answers (the session is fully up by then); the DELETE is not timed. */
export async function daemonCreate(ctx: BenchContext): Promise<number> {
  let session: BrowserSession | undefined;
  const ms = await timed(async () => (session = await createSession(ctx.daemon, { headless: true })));
  await deleteSession(ctx.daemon, session!.session_id);
  return ms;
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

/** What a typical client does once connected: playwright over CDP, load a page, disconnect. */
async function visit(wsUrl: string, pageUrl: string): Promise<void> {
  const browser = await chromium.connectOverCDP(wsUrl);
  try {
    const context = browser.contexts()[0] ?? (await browser.newContext());
    const page = context.pages()[0] ?? (await context.newPage());
    const res = await page.goto(pageUrl);
    if (!res?.ok()) throw new Error(`goto ${pageUrl} answered ${res?.status()}`);
  } finally {
    // Over CDP this only disconnects; the browser's end is the DELETE / close that follows.
    await browser.close();
  }
}

/** create -> connectOverCDP -> goto -> disconnect -> DELETE, all timed. */
export async function daemonCycle(ctx: BenchContext): Promise<number> {
  return timed(async () => {
    const session = await createSession(ctx.daemon, { headless: true });
    try {
      await visit(session.cdp_ws_url, ctx.pageUrl);
    } finally {
      await deleteSession(ctx.daemon, session.session_id);
    }
  });
}

/** launch -> connectOverCDP -> goto -> disconnect -> close + remove profile, all timed. */
export async function rawCycle(ctx: BenchContext): Promise<number> {
  const profile = await ctx.raw.prepare();
  return timed(async () => {
    try {
      const browser = await ctx.raw.launch(profile);
      await visit(browser.wsUrl, ctx.pageUrl);
    } finally {
      await ctx.raw.dispose(profile);
    }
  });
}

export interface RoundTripOptions {
  /** Calls per side discarded first (JIT, connection and target warm-up). */
  warmupCalls: number;
  rounds: number;
  callsPerRound: number;
}

/**
 * Runtime.evaluate("1+1") round trips through the gateway against the same session's Chromium
 * reached directly: one browser, one page, so the only difference is the gateway in the path.
 */
export async function cdpRoundTrips(ctx: BenchContext, o: RoundTripOptions): Promise<[number[], number[]]> {
  const session = await createSession(ctx.daemon, { headless: true, timeout_seconds: 600 });
  const clients: CdpClient[] = [];
  try {
    const viaGateway = await CdpClient.connect(session.cdp_ws_url);
    clients.push(viaGateway);
    const direct = await CdpClient.connect(await directWsUrl(ctx.daemon.home, session.session_id));
    clients.push(direct);
    const [gatewaySession, directSession] = [await viaGateway.attachToPage(), await direct.attachToPage()];

    await viaGateway.timeEvaluate(gatewaySession, o.warmupCalls);
    await direct.timeEvaluate(directSession, o.warmupCalls);
    // Samples are per call, pooled over the interleaved rounds.
    const [gateway, raw] = await alternate(
      0,
      o.rounds,
      () => viaGateway.timeEvaluate(gatewaySession, o.callsPerRound),
      () => direct.timeEvaluate(directSession, o.callsPerRound),
    );
    return [gateway.flat(), raw.flat()];
  } finally {
    for (const c of clients) c.close();
    await deleteSession(ctx.daemon, session.session_id);
  }
}
