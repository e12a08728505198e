/**
 * The live view's costs:
 *   1. frames per second a viewer actually receives of a page that animates continuously, at each
 *      supported refresh rate (goal: at least 90% of the refresh rate);
 *   2. CPU of the session's Xvfb and x11vnc and of the daemon (its websocket bridge) over the same
 *      window, with one viewer watching (goal: x11vnc under 15% of one core at 1920x1080@25);
 *   3. memory of an idle headful session against a headless one, and a raw headless Chromium;
 *   4. a headless session's live view (CDP screencast) against a headful one's (noVNC): frames
 *      per second drawn and input-to-frame latency, same page, same run (live-kinds.ts).
 *
 * The machine is shared and noisy: the load average is printed before and after, and the source
 * line (how many frames the session's page itself drew) tells a slow source from a slow pipe.
 * Goals are informational: the exit code is non-zero only on errors.
 *
 * Reading the frame rate: x11vnc offers no continuous updates, so noVNC asks for each update after
 * the previous one is decoded, one at a time. Each frame then costs the `wait` column (x11vnc
 * noticing the change, at most -wait ms after its last poll, then libvncserver's -threads client
 * thread sleeping -defer ms before every update) plus `decode`; with -wait = -defer = 1000/refresh
 * that is well over one refresh interval.
 * Overrides: BENCH_LIVE_SECONDS (measured window, 10), BENCH_LIVE_WARMUP (seconds, 3),
 * BENCH_MEM_ROUNDS (interleaved memory rounds, median reported, 3), BENCH_LIVE_PRESSES (presses timed
 * per kind, 15).
 */
import { readdir, readFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { intEnv, load, progress, runBench } from './lifecycle.js';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { chromium, type Browser, type Page } from 'playwright';
import { findMarkedProcesses, sleep } from '../daemon/lib/procs.js';
import type { BrowserSession } from '../src/api/browsers.js';
import { SUPPORTED_VIEWPORTS, formatViewport, type Viewport } from '../src/viewport.js';
import type { TestDaemon } from '../test/helpers/daemon.js';
import { launchViewer, openLiveView } from '../test/helpers/viewer.js';
import { compareKinds, reportKinds } from './live-kinds.js';
import type { RawChromiums } from './raw.js';
import { createSession, deleteSession, interleave, startHarness } from './scenarios.js';
import { percentile, textTable } from './stats.js';

const CONFIG = {
  seconds: intEnv('BENCH_LIVE_SECONDS', 10),
  warmupSeconds: intEnv('BENCH_LIVE_WARMUP', 3),
  memRounds: intEnv('BENCH_MEM_ROUNDS', 3),
  settleMs: 3000,
  fpsGoal: 0.9,
  x11vncGoal: 15,
  x11vncGoalViewport: '1920x1080@25',
};

// ---------------------------------------------------------------------------------------------
// /proc: CPU time and memory of processes

/** Kernel clock ticks per second, the unit of utime/stime in /proc/<pid>/stat. */
let clockTicks = 100;

async function comm(pid: number): Promise<string> {
  return (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim();
}

/** utime + stime of a process (all its threads), in clock ticks; undefined once it is gone. */
async function cpuTicks(pid: number): Promise<number | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => '');
  if (!stat) return undefined;
  // The command name in parentheses may hold spaces: count fields from after its closing one.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  return Number(fields[11]) + Number(fields[12]);
}

/** Named groups of pids whose CPU time is summed. */
type PidGroups = Record<string, number[]>;

/** Per-group CPU time at one instant: a pid missing later (it exited) is left out of both ends. */
async function cpuSnapshot(groups: PidGroups): Promise<Map<number, number>> {
  const snap = new Map<number, number>();
  for (const pid of Object.values(groups).flat()) {
    const t = await cpuTicks(pid);
    if (t !== undefined) snap.set(pid, t);
  }
  return snap;
}

/** % of one core each group used between two snapshots `seconds` apart. */
function cpuPercent(groups: PidGroups, before: Map<number, number>, after: Map<number, number>, seconds: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, pids] of Object.entries(groups)) {
    let ticks = 0;
    for (const pid of pids) {
      const a = before.get(pid);
      const b = after.get(pid);
      if (a !== undefined && b !== undefined) ticks += b - a;
    }
    out[name] = (ticks / clockTicks / seconds) * 100;
  }
  return out;
}

interface Memory {
  rss: number;
  pss: number;
  /** Private_Clean + Private_Dirty: what would be freed if the process went away. */
  uss: number;
}
const noMemory = (): Memory => ({ rss: 0, pss: 0, uss: 0 });

/** kB figures of /proc/<pid>/smaps_rollup; zero for a process gone meanwhile. */
async function memoryOf(pid: number): Promise<Memory> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  return { rss: kb('Rss'), pss: kb('Pss'), uss: kb('Private_Clean') + kb('Private_Dirty') };
}

function addMemory(a: Memory, b: Memory): Memory {
  return { rss: a.rss + b.rss, pss: a.pss + b.pss, uss: a.uss + b.uss };
}

/** Memory of a set of processes, in total and by command name (chromium, Xvfb, x11vnc, ...). */
interface MemoryReport {
  total: Memory;
  processes: number;
  byComm: Record<string, Memory>;
}

async function memoryReport(pids: number[]): Promise<MemoryReport> {
  const report: MemoryReport = { total: noMemory(), processes: 0, byComm: {} };
  for (const pid of pids) {
    const name = await comm(pid);
    const m = await memoryOf(pid);
    if (!name || m.rss === 0) continue;
    report.processes++;
    report.total = addMemory(report.total, m);
    report.byComm[name] = addMemory(report.byComm[name] ?? noMemory(), m);
  }
  return report;
}

/** Every process below the roots, not the roots themselves (the viewer Chromium below this bench, for one). */
async function descendants(...roots: number[]): Promise<number[]> {
  const children = new Map<number, number[]>();
  for (const name of await readdir('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => '');
    if (!stat) continue;
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  const found = new Set<number>();
  const queue = roots.flatMap((r) => children.get(r) ?? []);
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    if (found.has(pid) || roots.includes(pid)) continue;
    found.add(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return [...found];
}

/**
 * The processes of a session (or raw profile): the ones carrying its marker, and their descendants.
 * The marker alone misses most of Chromium: its zygote, renderer, GPU and utility processes set
 * their process title (setproctitle), which overwrites the memory /proc/<pid>/environ reads, so
 * their RBROWSE_SESSION is no longer visible there.
 */
async function processTree(home: string, id: string): Promise<number[]> {
  const marked = await findMarkedProcesses(home, id);
  return [...marked, ...(await descendants(...marked))];
}

// ---------------------------------------------------------------------------------------------
// Sessions

/** The bench's undo stack (runBench's), which sessions made mid-run join. */
let cleanups: (() => Promise<void>)[] = [];

/** Creates a session and registers its DELETE with the cleanups; returns it and its own undo step. */
async function withSession<T>(d: TestDaemon, body: object, fn: (s: BrowserSession) => Promise<T>): Promise<T> {
  const session = await createSession(d, body);
  let deleted = false;
  const remove = async () => {
    if (deleted) return;
    deleted = true;
    await deleteSession(d, session.session_id);
  };
  cleanups.push(remove);
  try {
    return await fn(session);
  } finally {
    await remove();
  }
}

async function daemonPid(d: TestDaemon): Promise<number> {
  const r = await d.cli(['daemon', 'status', '--json']);
  const pid = (JSON.parse(r.stdout) as { pid: number | null }).pid;
  if (!pid) throw new Error(`daemon status gave no pid: ${r.stdout} ${r.stderr}`);
  return pid;
}

/** This bench's own child processes, the viewer Chromium, leaving out the daemon's tree should it be among them. */
async function viewerProcesses(daemon: number): Promise<number[]> {
  const daemonTree = new Set([daemon, ...(await descendants(daemon))]);
  return (await descendants(process.pid)).filter((pid) => !daemonTree.has(pid));
}

/** The session's processes by role: processTree(), told apart by /proc/<pid>/comm. */
async function sessionProcesses(d: TestDaemon, sessionId: string): Promise<PidGroups> {
  const groups: PidGroups = { Xvfb: [], x11vnc: [], matchbox: [], chromium: [] };
  for (const pid of await processTree(d.home, sessionId)) {
    const name = await comm(pid);
    if (name === 'Xvfb') groups.Xvfb!.push(pid);
    else if (name === 'x11vnc') groups.x11vnc!.push(pid);
    else if (name.startsWith('matchbox')) groups.matchbox!.push(pid);
    else if (name) groups.chromium!.push(pid);
  }
  return groups;
}

// ---------------------------------------------------------------------------------------------
// 1 + 2: frames delivered to a viewer, and CPU meanwhile

/**
 * Counts framebuffer updates in the viewer page. noVNC 1.7.0's RFB calls its own
 * `_framebufferUpdate()` (as `this._framebufferUpdate()`, so an instance property overrides the
 * prototype's) for every FramebufferUpdate message; it returns true exactly once per update, when
 * its last rectangle has been decoded and `_display.flip()` was called (false means "waiting for
 * more bytes" or "waiting for the previous frame to render", and the same update is resumed later).
 * Wrapping `_display.flip` instead would count twice when drawing is queued (flip() queues a 'flip'
 * action and runs flip(true) from the queue later). `_handleDataRect()` returning true marks an
 * update that carried pixels, not only a cursor shape or other pseudo-rectangle: only those count
 * as delivered frames. Bytes are counted on the websocket's onmessage, which noVNC binds once.
 *
 * Without continuous updates (x11vnc has none) noVNC asks for the next update right after
 * `_framebufferUpdate()` returns true, so each update's time splits into `wait` (that request to
 * the first call for the next update: x11vnc's pacing, the bridge, the viewer's event loop) and
 * `decode` (first call to completion: the rest of the bytes, decoding, waiting for the previous
 * frame to be drawn).
 * A string script: tsx's helpers (__name) do not exist in the page.
 */
const HOOK = `(() => {
  const rfb = window.rfb;
  if (!rfb || rfb.__benchHooked) return false;
  const stats = { updates: 0, pixelUpdates: 0, bytes: 0, times: [], waits: [], decodes: [], encodings: {},
    pixels: false, began: null, lastEnd: null, start: performance.now() };
  const fbu = rfb._framebufferUpdate;
  const dataRect = rfb._handleDataRect;
  rfb._handleDataRect = function () {
    const encoding = this._FBU.encoding;
    const done = dataRect.call(this);
    if (done) {
      stats.pixels = true;
      stats.encodings[encoding] = (stats.encodings[encoding] || 0) + 1;
    }
    return done;
  };
  rfb._framebufferUpdate = function () {
    if (stats.began === null) {
      stats.began = performance.now();
      if (stats.lastEnd !== null) stats.waits.push(stats.began - stats.lastEnd);
    }
    const done = fbu.call(this);
    if (done) {
      const now = performance.now();
      stats.updates++;
      if (stats.pixels) { stats.pixelUpdates++; stats.times.push(now); stats.decodes.push(now - stats.began); }
      stats.pixels = false;
      stats.began = null;
      stats.lastEnd = now;
    }
    return done;
  };
  const ws = rfb._sock._websocket;
  const onmessage = ws.onmessage;
  ws.onmessage = (e) => { stats.bytes += e.data.byteLength; onmessage(e); };
  rfb.__benchHooked = true;
  window.__bench = stats;
  return true;
})()`;

const RESET = `(() => { const s = window.__bench; s.updates = 0; s.pixelUpdates = 0; s.bytes = 0; s.times = []; s.waits = []; s.decodes = [];
  s.encodings = {}; s.start = performance.now(); })()`;

interface ViewerCounts {
  updates: number;
  pixelUpdates: number;
  bytes: number;
  /** Gaps between consecutive pixel updates, ms. */
  gaps: number[];
  /** Per update, ms: its request to its first bytes being handled, and from there to its completion. */
  waits: number[];
  decodes: number[];
  /** Pixel rectangles by RFB encoding number (7 = Tight, 16 = ZRLE, 0 = Raw, ...). */
  encodings: Record<string, number>;
  elapsedMs: number;
  /** Whether the RFB instance is still the one hooked (a reconnect would have replaced it). */
  sameRfb: boolean;
  continuousUpdates: boolean;
}

const READ = `(() => {
  const s = window.__bench;
  const gaps = s.times.slice(1).map((t, i) => t - s.times[i]);
  return { updates: s.updates, pixelUpdates: s.pixelUpdates, bytes: s.bytes, gaps, waits: s.waits, decodes: s.decodes,
    encodings: s.encodings, elapsedMs: performance.now() - s.start,
    sameRfb: Boolean(window.rfb && window.rfb.__benchHooked), continuousUpdates: Boolean(window.rfb && window.rfb._enabledContinuousUpdates) };
})()`;

interface FrameResult {
  viewport: Viewport;
  seconds: number;
  /** Frames the session's own page drew (requestAnimationFrame callbacks) per second. */
  sourceFps: number;
  counts: ViewerCounts;
  cpu: Record<string, number>;
}

const rafCount = (page: Page) => page.evaluate('window.rafCount') as Promise<number>;

async function watchAnimation(d: TestDaemon, viewer: Browser, pageUrl: string, viewport: Viewport, daemon: number): Promise<FrameResult> {
  const body = { headless: false, kiosk_mode: true, viewport, timeout_seconds: 600 };
  return withSession(d, body, async (session) => {
    const cdp = await chromium.connectOverCDP(session.cdp_ws_url);
    let view: Page | undefined;
    try {
      const page = cdp.contexts()[0]!.pages()[0]!;
      const res = await page.goto(pageUrl);
      if (!res?.ok()) throw new Error(`goto ${pageUrl} answered ${res?.status()}`);
      // The page animates before the viewer opens, so the viewer's first frames are already of it.
      if (!session.browser_live_view_url) throw new Error('a headful session came without browser_live_view_url');
      view = await openLiveView(viewer, session.browser_live_view_url);
      if (!(await view.evaluate(HOOK))) throw new Error("could not hook the viewer page's RFB");
      await sleep(CONFIG.warmupSeconds * 1000);

      const groups: PidGroups = {
        ...(await sessionProcesses(d, session.session_id)),
        daemon: [daemon],
        viewer: await viewerProcesses(daemon),
      };
      const raf0 = await rafCount(page);
      await view.evaluate(RESET);
      const before = await cpuSnapshot(groups);
      const t0 = performance.now();
      await sleep(CONFIG.seconds * 1000);
      const after = await cpuSnapshot(groups);
      const seconds = (performance.now() - t0) / 1000;
      const counts = (await view.evaluate(READ)) as ViewerCounts;
      const raf1 = await rafCount(page);
      return { viewport, seconds, sourceFps: (raf1 - raf0) / seconds, counts, cpu: cpuPercent(groups, before, after, seconds) };
    } finally {
      await view?.close();
      // Over CDP this only disconnects; the DELETE of withSession() ends the browser.
      await cdp.close();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// 3: memory of idle sessions

interface MemorySample {
  headless: MemoryReport;
  headful: MemoryReport;
  raw: MemoryReport;
}

async function idleSessionMemory(d: TestDaemon, headless: boolean): Promise<MemoryReport> {
  const body = { headless, viewport: { width: 1920, height: 1080 } };
  return withSession(d, body, async (session) => {
    await sleep(CONFIG.settleMs);
    return memoryReport(await processTree(d.home, session.session_id));
  });
}

async function rawMemory(raw: RawChromiums): Promise<MemoryReport> {
  const profile = await raw.prepare();
  try {
    await raw.launch(profile);
    await sleep(CONFIG.settleMs);
    return await memoryReport(await processTree(raw.base, profile.name));
  } finally {
    await raw.dispose(profile);
  }
}

async function measureMemory(d: TestDaemon, raw: RawChromiums): Promise<MemorySample[]> {
  const [headless, headful, raws] = await interleave(0, CONFIG.memRounds, [
    () => idleSessionMemory(d, true),
    () => idleSessionMemory(d, false),
    () => rawMemory(raw),
  ]);
  return headless!.map((h, i) => ({ headless: h, headful: headful![i]!, raw: raws![i]! }));
}

// ---------------------------------------------------------------------------------------------
// Output

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );
const mb = (kb: number) => (kb / 1024).toFixed(1);
const pct = (p: number | undefined) => (p === undefined ? '-' : `${p.toFixed(1)}%`);

function reportFrames(results: FrameResult[]): void {
  console.log(
    `\n1. frames a viewer receives of a page animating on every requestAnimationFrame (${CONFIG.seconds} s each, after ${CONFIG.warmupSeconds} s warm-up)`,
  );
  console.log("source = frames the session's page drew per second; delivered = framebuffer updates with pixels the viewer decoded per second");
  console.log(`goal: delivered >= ${CONFIG.fpsGoal * 100}% of the refresh rate\n`);
  const rows = results.map((r) => {
    const c = r.counts;
    const delivered = c.pixelUpdates / (c.elapsedMs / 1000);
    const ratio = delivered / r.viewport.refresh_rate;
    const p50p95 = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return sorted.length ? `${percentile(sorted, 0.5).toFixed(0)} / ${percentile(sorted, 0.95).toFixed(0)}` : '-';
    };
    return [
      formatViewport(r.viewport),
      r.sourceFps.toFixed(1),
      delivered.toFixed(1),
      (c.updates / (c.elapsedMs / 1000)).toFixed(1),
      `${(ratio * 100).toFixed(0)}%`,
      p50p95(c.gaps),
      p50p95(c.waits),
      p50p95(c.decodes),
      (c.bytes / 1e6 / (c.elapsedMs / 1000)).toFixed(2),
      c.sameRfb ? (c.continuousUpdates ? 'yes' : 'no') : 'RECONNECTED',
      ratio >= CONFIG.fpsGoal ? 'PASS' : 'MISS',
    ];
  });
  const header = [
    'viewport',
    'source fps',
    'delivered fps',
    'all FBU/s',
    'delivered/refresh',
    'gap [ms]',
    'wait [ms]',
    'decode [ms]',
    'MB/s',
    'continuous',
    'result',
  ];
  console.log(textTable(header, rows));
  console.log("\nms columns: p50 / p95. gap = between delivered frames; wait = noVNC's request for an update to its first bytes");
  console.log('being handled (x11vnc pacing + bridge + viewer event loop); decode = from there to the update being complete');
  console.log(
    `pixel rectangles by RFB encoding: ${results.map((r) => `${formatViewport(r.viewport)} ${JSON.stringify(r.counts.encodings)}`).join(', ')}`,
  );
}

function reportCpu(results: FrameResult[]): void {
  console.log('\n2. CPU while one viewer watches, % of one core over the same window (2 cores = 200%)');
  console.log('daemon = the whole daemon process (its websocket bridge is the only work it has then);');
  console.log("chromium = the session's browser; viewer = the headless Chromium this bench watches with, on the same machine");
  console.log(`goal: x11vnc < ${CONFIG.x11vncGoal}% of one core at ${CONFIG.x11vncGoalViewport}\n`);
  const rows = results.map((r) => {
    const name = formatViewport(r.viewport);
    const x11vnc = r.cpu.x11vnc ?? 0;
    return [
      name,
      pct(r.cpu.Xvfb),
      pct(r.cpu.x11vnc),
      pct(r.cpu.daemon),
      pct((r.cpu.Xvfb ?? 0) + x11vnc + (r.cpu.daemon ?? 0)),
      pct(r.cpu.chromium),
      pct(r.cpu.matchbox),
      pct(r.cpu.viewer),
      name === CONFIG.x11vncGoalViewport ? (x11vnc < CONFIG.x11vncGoal ? 'PASS' : 'MISS') : 'info',
    ];
  });
  console.log(textTable(['viewport', 'Xvfb', 'x11vnc', 'daemon', 'sum of the three', 'chromium', 'matchbox', 'viewer', 'result'], rows));
}

function reportMemory(samples: MemorySample[]): void {
  console.log(
    `\n3. memory of an idle 1920x1080 session on about:blank, ${CONFIG.settleMs / 1000} s after create; median of ${samples.length} interleaved rounds`,
  );
  console.log(
    "the processes carrying the session's marker and their descendants; PSS shares pages with every process mapping them (other sessions' too),",
  );
  console.log('USS = private pages only (what goes away with the session); RSS counts shared libraries once per process\n');
  const kinds: [string, (s: MemorySample) => MemoryReport][] = [
    ['headless session', (s) => s.headless],
    ['headful session', (s) => s.headful],
    ['raw headless Chromium', (s) => s.raw],
  ];
  const row = (name: string, pick: (s: MemorySample) => MemoryReport): string[] => [
    name,
    String(median(samples.map((s) => pick(s).processes))),
    mb(median(samples.map((s) => pick(s).total.rss))),
    mb(median(samples.map((s) => pick(s).total.pss))),
    mb(median(samples.map((s) => pick(s).total.uss))),
  ];
  const diff = (name: string, f: (s: MemorySample) => Memory): string[] => [
    name,
    '',
    mb(median(samples.map((s) => f(s).rss))),
    mb(median(samples.map((s) => f(s).pss))),
    mb(median(samples.map((s) => f(s).uss))),
  ];
  const minus = (a: Memory, b: Memory): Memory => ({ rss: a.rss - b.rss, pss: a.pss - b.pss, uss: a.uss - b.uss });
  const rows = [
    ...kinds.map(([name, pick]) => row(name, pick)),
    diff('headful - headless', (s) => minus(s.headful.total, s.headless.total)),
    diff('headless session - raw', (s) => minus(s.headless.total, s.raw.total)),
  ];
  console.log(textTable(['', 'processes', 'RSS [MB]', 'PSS [MB]', 'USS [MB]'], rows));

  // Where the headful extra goes: its processes by command name, against the headless session's.
  const names = [...new Set(samples.flatMap((s) => [...Object.keys(s.headful.byComm), ...Object.keys(s.headless.byComm)]))].sort();
  console.log('\nby command name, PSS [MB] (median):');
  console.log(
    textTable(
      ['command', 'headless', 'headful'],
      names.map((n) => [
        n,
        mb(median(samples.map((s) => s.headless.byComm[n]?.pss ?? 0))),
        mb(median(samples.map((s) => s.headful.byComm[n]?.pss ?? 0))),
      ]),
    ),
  );
}

// ---------------------------------------------------------------------------------------------

runBench(async (steps) => {
  cleanups = steps;
  const loadBefore = load();
  clockTicks = Number((await execa('getconf', ['CLK_TCK'])).stdout) || 100;
  const { executable, fixtures, raw, daemon: d } = await startHarness(cleanups);
  const viewer = await launchViewer();
  cleanups.push(() => viewer.close());
  const daemon = await daemonPid(d);
  progress(`daemon ${d.baseUrl} (pid ${daemon}), chromium ${executable}, fixture ${fixtures.url}`);

  // One viewport per distinct refresh rate: 2560x1440@10, 1920x1080@25, 1024x768@60.
  const viewports = SUPPORTED_VIEWPORTS.filter((v, i, all) => all.findIndex((w) => w.refresh_rate === v.refresh_rate) === i);
  const frames: FrameResult[] = [];
  for (const viewport of viewports) {
    progress(`watching the animation at ${formatViewport(viewport)}`);
    frames.push(await watchAnimation(d, viewer, `${fixtures.url}/animated.html`, viewport, daemon));
  }
  progress(`memory: ${CONFIG.memRounds} rounds of headless, headful and raw`);
  const memory = await measureMemory(d, raw);
  progress('headless (screencast) against headful (noVNC) live view');
  const kinds = await compareKinds(d, viewer, `${fixtures.url}/animated.html`, {
    seconds: CONFIG.seconds,
    presses: intEnv('BENCH_LIVE_PRESSES', 15),
  });

  console.log(`\nrbrowse live-view bench: ${cpus().length} CPUs, load average ${loadBefore} before, ${load()} after`);
  reportFrames(frames);
  reportCpu(frames);
  reportMemory(memory);
  reportKinds(kinds);
});
