/**
 * The daemon on a crowded machine: spaced cycles under a CPU hog (busy loops at normal priority,
 * two per core) against raw Chromium's under the same hog, `daemon stop` of a busy daemon quiet
 * and hogged, and the memory of everything a daemon started (its idle footprint before and after
 * a burst of creates).
 */
import { performance } from 'node:perf_hooks';
import { findMarkedProcesses, sleep } from '../daemon/lib/procs.js';
import { DEFAULT_STANDBY } from '../src/standby.js';
import { startCpuHog } from '../test/helpers/cpu-hog.js';
import { startTestDaemon, waitFor, type TestDaemon } from '../test/helpers/daemon.js';
import { everythingPssMiB } from './footprint.js';
import { progress, shellEnv } from './lifecycle.js';
import { daemonCyclePhases, rawCyclePhases, standbyFull, type BenchContext } from './scenarios.js';

export interface SpacedRun {
  rbrowse: number[];
  raw: number[];
  /** Of the run's creates, how many a standby browser served, ready or still launching. */
  served: { creates: number; fromReady: number; fromLaunch: number };
}

/**
 * `cycles` whole cycles `gapMs` apart on a fresh daemon with the default standby set, each followed
 * by a raw cycle, all under the CPU hog: what a developer's test run sees on a busy laptop.
 */
export async function spacedUnderHog(o: Pick<BenchContext, 'raw' | 'pageUrl'> & { cycles: number; gapMs: number }): Promise<SpacedRun> {
  progress(`crowded: ${o.cycles} cycles ${o.gapMs} ms apart under a CPU hog, each followed by a raw one`);
  const d = await startTestDaemon({ env: { RBROWSE_STANDBY: DEFAULT_STANDBY, RBROWSE_SPARE_BOXES: '', ...shellEnv() } });
  const rbrowse: number[] = [];
  const raw: number[] = [];
  try {
    await standbyFull(d, 120_000);
    const before = (await d.api('GET', '/health', undefined, null)).body.standby_served;
    const hog = startCpuHog({ maxSeconds: 600 });
    try {
      for (let i = 0; i < o.cycles; i++) {
        await sleep(o.gapMs);
        rbrowse.push((await daemonCyclePhases({ daemon: d, pageUrl: o.pageUrl })).total);
        await sleep(o.gapMs);
        raw.push((await rawCyclePhases({ daemon: d, raw: o.raw, pageUrl: o.pageUrl })).total);
      }
    } finally {
      await hog.stop();
    }
    const after = (await d.api('GET', '/health', undefined, null)).body.standby_served;
    return {
      rbrowse,
      raw,
      served: {
        creates: after.creates - before.creates,
        fromReady: after.from_ready - before.from_ready,
        fromLaunch: after.from_launch - before.from_launch,
      },
    };
  } finally {
    await d.stop();
  }
}

/** A daemon busy as a developer's is: sessions headless and headful, standby, a pool with idle browsers. */
async function busyDaemon(): Promise<TestDaemon> {
  const d = await startTestDaemon({ env: { RBROWSE_STANDBY: DEFAULT_STANDBY } });
  try {
    for (const body of [{ headless: true }, { headless: true }, { viewport: { width: 1024, height: 768 } }]) {
      const r = await d.api('POST', '/browsers', body);
      if (r.status !== 200) throw new Error(`create: ${r.status} ${r.text}`);
    }
    const pool = await d.api('POST', '/browser_pools', { name: 'bench', size: 2, headless: true, fill_rate_per_minute: 100 });
    if (pool.status !== 200) throw new Error(`pool: ${pool.status} ${pool.text}`);
    await waitFor(async () => (await d.api('GET', '/browser_pools/bench')).body.available_count >= 2, 120_000, 'the pool to fill');
    return d;
  } catch (err) {
    await d.stop();
    throw err;
  }
}

/** `rbrowse daemon stop` of a busy daemon, in ms, quiet or under the CPU hog; it must exit 0 and leave nothing. */
export async function timedStop(hogged: boolean): Promise<number> {
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

/**
 * DELETE of a pool whose first browser is launching, and of a live session, `rounds` times on one
 * daemon (standby off), quiet or under the CPU hog: neither may wait for a launch.
 */
export async function timedDeletes(rounds: number, hogged: boolean): Promise<{ pool: number[]; session: number[] }> {
  const d = await startTestDaemon({ env: { RBROWSE_STANDBY: '0', ...shellEnv() } });
  const times = { pool: [] as number[], session: [] as number[] };
  try {
    for (let i = 0; i < rounds; i++) {
      const session = await d.api('POST', '/browsers', { headless: true });
      if (session.status !== 200) throw new Error(`create: ${session.status} ${session.text}`);
      const hog = hogged ? startCpuHog({ maxSeconds: 120 }) : undefined;
      try {
        const pool = await d.api('POST', '/browser_pools', { size: 1, headless: true, fill_rate_per_minute: 6000 });
        if (pool.status !== 200) throw new Error(`pool: ${pool.status} ${pool.text}`);
        let started = performance.now();
        const deleted = await d.api('DELETE', `/browser_pools/${pool.body.id}`);
        times.pool.push(performance.now() - started);
        if (deleted.status !== 204) throw new Error(`pool delete: ${deleted.status} ${deleted.text}`);
        started = performance.now();
        const ended = await d.api('DELETE', `/browsers/${session.body.session_id}`);
        times.session.push(performance.now() - started);
        if (ended.status !== 204) throw new Error(`session delete: ${ended.status} ${ended.text}`);
      } finally {
        await hog?.stop();
      }
      // What they ended is gone before the next round (untimed).
      await waitFor(async () => (await findMarkedProcesses(d.home)).length <= 1, 120_000, 'the deleted browsers to end');
    }
    return times;
  } finally {
    await d.stop();
  }
}

export interface IdleDecay {
  before: number;
  peak: number;
  decayed: number;
  decayedAfterMs: number;
  /** The extra standby browsers the burst asked for, as GET /health showed them at the peak. */
  burstExtra: number;
}

/**
 * The idle footprint of a daemon with the defaults a user gets (standby set, burst budget, a
 * spare box): PSS of everything it started before a burst of creates, once the standby browsers
 * the burst asked for are up, and `decayMs` after the burst.
 */
export async function idleDecay(o: { creates: number; concurrency: number; decayMs: number }): Promise<IdleDecay> {
  progress(`memory: a burst of ${o.creates} creates, ${o.concurrency} at a time, then ${o.decayMs / 1000} s idle`);
  const d = await startTestDaemon({
    env: { RBROWSE_STANDBY: DEFAULT_STANDBY, RBROWSE_STANDBY_BURST_MB: '512', RBROWSE_SPARE_BOXES: '1', ...shellEnv() },
  });
  try {
    await standbyFull(d, 120_000);
    // Every standby browser's start over (Chromium works for 8-20 s after one).
    await sleep(15_000);
    const before = await everythingPssMiB(d);
    let left = o.creates;
    await Promise.all(
      Array.from({ length: o.concurrency }, async () => {
        while (left > 0) {
          left--;
          const s = await d.api('POST', '/browsers', { headless: true, timeout_seconds: 600 });
          if (s.status !== 200) throw new Error(`create: ${s.status} ${s.text}`);
          await d.api('DELETE', `/browsers/${s.body.session_id}`);
        }
      }),
    );
    const ended = performance.now();
    await standbyFull(d, 180_000).catch(() => progress('the standby set was not full 180 s after the burst; its memory is read as it is'));
    const health = (await d.api('GET', '/health', undefined, null)).body;
    const burstExtra = Object.values((health.standby ?? {}) as Record<string, { burst?: number }>).reduce((n, k) => n + (k.burst ?? 0), 0);
    const peak = await everythingPssMiB(d);
    await sleep(Math.max(0, ended + o.decayMs - performance.now()));
    return { before, peak, decayed: await everythingPssMiB(d), decayedAfterMs: performance.now() - ended, burstExtra };
  } finally {
    await d.stop();
  }
}
