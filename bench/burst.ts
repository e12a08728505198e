/**
 * Creates back to back, as a test suite makes them: each client runs create -> connect -> goto ->
 * (page work) -> disconnect -> delete with no gap, 1 and 2 clients at a time, and raw Chromium
 * runs the same cycles (launch -> connect -> goto -> (page work) -> close) at the same
 * concurrency in the same run. Each rbrowse run starts a fresh daemon with the default standby set
 * and burst budget, so it begins where a suite's first test does. The page work (a wait on the
 * open page) is left out of the cycle's time, so cycles compare with and without it.
 */
import { performance } from 'node:perf_hooks';
import { chromium } from 'playwright';
import { DEFAULT_STANDBY } from '../src/standby.js';
import { startTestDaemon, type TestDaemon } from '../test/helpers/daemon.js';
import { progress, shellEnv } from './lifecycle.js';
import type { RawChromiums } from './raw.js';
import { createSession, deleteSession, standbyReady } from './scenarios.js';
import { percentile, textTable } from './stats.js';

export interface BurstRun {
  clients: number;
  workMs: number;
  /** Cycle times without the page work, ms. */
  rbrowse: number[];
  raw: number[];
  /** Of the run's creates, how many a standby browser served (ready, or still launching). */
  served: { creates: number; fromReady: number; fromLaunch: number };
}

/** connectOverCDP -> goto -> (work) -> disconnect; the work's own time, to take off the cycle's. */
async function visit(wsUrl: string, pageUrl: string, workMs: number): Promise<void> {
  const browser = await chromium.connectOverCDP(wsUrl);
  try {
    const context = browser.contexts()[0] ?? (await browser.newContext());
    const page = context.pages()[0] ?? (await context.newPage());
    const res = await page.goto(pageUrl);
    if (!res?.ok()) throw new Error(`goto ${pageUrl} answered ${res?.status()}`);
    if (workMs) await page.waitForTimeout(workMs);
  } finally {
    await browser.close();
  }
}

/** `total` cycles, `clients` at a time, each client starting its next cycle as soon as its last ended. */
async function backToBack(total: number, clients: number, cycle: () => Promise<number>): Promise<number[]> {
  const times: number[] = [];
  let started = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (started < total) {
        started++;
        times.push(await cycle());
      }
    }),
  );
  return times;
}

async function rbrowseCycle(d: TestDaemon, pageUrl: string, workMs: number): Promise<number> {
  const start = performance.now();
  const session = await createSession(d, { headless: true });
  try {
    await visit(session.cdp_ws_url, pageUrl, workMs);
  } finally {
    await deleteSession(d, session.session_id);
  }
  return performance.now() - start - workMs;
}

async function rawCycle(raw: RawChromiums, pageUrl: string, workMs: number): Promise<number> {
  const profile = await raw.prepare();
  const start = performance.now();
  try {
    const browser = await raw.launch(profile);
    await visit(browser.wsUrl, pageUrl, workMs);
  } finally {
    await raw.dispose(profile);
  }
  return performance.now() - start - workMs;
}

async function served(d: TestDaemon): Promise<{ creates: number; fromReady: number; fromLaunch: number }> {
  const s = (await d.api('GET', '/health', undefined, null)).body?.standby_served;
  return { creates: s?.creates ?? 0, fromReady: s?.from_ready ?? 0, fromLaunch: s?.from_launch ?? 0 };
}

/** One configuration: a fresh daemon's burst, then raw Chromium's at the same concurrency. */
export async function burstRun(o: { raw: RawChromiums; pageUrl: string; cycles: number; clients: number; workMs: number }): Promise<BurstRun> {
  progress(`burst: ${o.cycles} back-to-back cycles, ${o.clients} client(s), ${o.workMs} ms of page work`);
  const d = await startTestDaemon({
    env: { RBROWSE_STANDBY: DEFAULT_STANDBY, RBROWSE_STANDBY_BURST_MB: '512', RBROWSE_SPARE_BOXES: '', ...shellEnv() },
  });
  let rbrowse: number[];
  let counts: BurstRun['served'];
  try {
    await standbyReady(d);
    rbrowse = await backToBack(o.cycles, o.clients, () => rbrowseCycle(d, o.pageUrl, o.workMs));
    counts = await served(d);
  } finally {
    await d.stop();
  }
  const raw = await backToBack(o.cycles, o.clients, () => rawCycle(o.raw, o.pageUrl, o.workMs));
  return { clients: o.clients, workMs: o.workMs, rbrowse, raw, served: counts };
}

const fmt = (ms: number) => ms.toFixed(0);

/**
 * The table: p50 and p90 per cycle on each side, their ratios (goal with no pause: p50 at most
 * 0.41x and p90 at most 0.65x a raw cycle; with page work between creates: p90 at most 1.1x),
 * and the share of creates standby served (goal with page work: at least 90%, and a cycle p50 of
 * at most 150 ms).
 */
export function renderBursts(runs: readonly BurstRun[]): string {
  const header = ['clients', 'work ms', 'n', 'rbrowse p50 / p90', 'raw p50 / p90', 'ratio p50 / p90', 'served by standby', 'goal', 'result'];
  const rows = runs.map((r) => {
    const a = [...r.rbrowse].sort((x, y) => x - y);
    const b = [...r.raw].sort((x, y) => x - y);
    const p50 = percentile(a, 0.5) / percentile(b, 0.5);
    const p90 = percentile(a, 0.9) / percentile(b, 0.9);
    const share = r.served.creates ? (r.served.fromReady + r.served.fromLaunch) / r.served.creates : 0;
    const withWork = r.workMs > 0;
    // With no pause, what launch-on-connect (browserless) measures in the same comparison.
    const ok = withWork ? p90 <= 1.1 && share >= 0.9 && percentile(a, 0.5) <= 150 : p50 <= 0.41 && p90 <= 0.65;
    return [
      String(r.clients),
      String(r.workMs),
      `${a.length}/${b.length}`,
      `${fmt(percentile(a, 0.5))} / ${fmt(percentile(a, 0.9))}`,
      `${fmt(percentile(b, 0.5))} / ${fmt(percentile(b, 0.9))}`,
      `${p50.toFixed(2)}x / ${p90.toFixed(2)}x`,
      `${r.served.fromReady + r.served.fromLaunch}/${r.served.creates} (${r.served.fromLaunch} still launching)`,
      withWork ? 'p90 <= 1.1x, >= 90%, p50 <= 150' : 'p50 <= 0.41x, p90 <= 0.65x',
      ok ? 'PASS' : 'MISS',
    ];
  });
  return textTable(header, rows);
}
