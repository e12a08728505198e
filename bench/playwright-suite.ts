/**
 * A Playwright Test suite (fixtures/playwright-suite: the 21 tests that run under both, 2 workers) on
 * rbrowse against Playwright's own launch of the same Chromium, in turns: with a fresh browser
 * for every test (rbrowse: a session per test, from standby when one is ready; Playwright: a
 * launch per test) and with one browser per worker (Playwright's default). Wall time of the run
 * and per-test duration, medians over the rounds. Run with `npm run bench:playwright` (builds
 * first). Rounds: BENCH_SUITE_ROUNDS (default 3).
 */
import { cpus } from 'node:os';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { DEFAULT_STANDBY } from '../src/standby.js';
import { resolveChromium } from '../src/system-deps.js';
import { ROOT, startTestDaemon, type TestDaemon } from '../test/helpers/daemon.js';
import { headlessBuild, intEnv, load, progress, runBench, shellEnv } from './lifecycle.js';
import { renderTable, summarize, type Comparison } from './stats.js';

const ROUNDS = intEnv('BENCH_SUITE_ROUNDS', 3);
/** What Playwright's own launch runs: CHROMIUM_PATH, else the build of the daemon's headless sessions. */
const OWN_CHROMIUM = process.env.CHROMIUM_PATH ?? headlessBuild();
/** Full Chromium: with the daemon on the headless shell, Playwright's own launch of it is timed too, for reference. */
const FULL_CHROMIUM = resolveChromium();
/** The tests about the rbrowse session itself, which Playwright's own launch skips: left out of both sides. */
const RBROWSE_ONLY = 'rbrowse session|saved in the session|fresh context';

interface Run {
  wallMs: number;
  testMs: number[];
  passed: number;
}

interface Report {
  stats: { duration: number; expected: number; unexpected: number };
  suites: Suite[];
}
interface Suite {
  specs?: { tests: { results: { duration: number; status: string }[] }[] }[];
  suites?: Suite[];
}

function durations(suite: Suite): number[] {
  const own = (suite.specs ?? []).flatMap((spec) => spec.tests.flatMap((t) => t.results.filter((r) => r.status === 'passed').map((r) => r.duration)));
  return [...own, ...(suite.suites ?? []).flatMap(durations)];
}

/** One way of running the suite: the fixture's PW_MODE, and for Playwright's own launch the Chromium it launches. */
interface Side {
  name: string;
  mode: string;
  chromium: string;
}

async function runSuite(d: TestDaemon, { mode, chromium }: Side): Promise<Run> {
  const out = await mkdtemp(join(tmpdir(), 'rbrowse-bench-pw-'));
  try {
    const report = join(out, 'report.json');
    const run = await execa(
      process.execPath,
      [
        join(ROOT, 'node_modules/@playwright/test/cli.js'),
        'test',
        '--config',
        'fixtures/playwright-suite/playwright.config.ts',
        '--workers',
        '2',
        '--grep-invert',
        RBROWSE_ONLY,
      ],
      {
        cwd: ROOT,
        env: { ...d.env, PW_MODE: mode, PW_JSON_REPORT: report, PW_OUTPUT_DIR: join(out, 'results'), CHROMIUM_PATH: chromium },
        extendEnv: false,
        reject: false,
      },
    );
    const parsed = JSON.parse(await readFile(report, 'utf8')) as Report;
    if (run.exitCode !== 0 || parsed.stats.unexpected > 0) throw new Error(`suite (${mode}, ${chromium}) failed:\n${run.stdout.slice(-3000)}`);
    return { wallMs: parsed.stats.duration, testMs: parsed.suites.flatMap(durations), passed: parsed.stats.expected };
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

runBench(async (cleanups) => {
  const before = load();
  progress(`load average before: ${before} (${cpus().length} cores); ${ROUNDS} rounds`);
  // The default standby set and burst budget, as a user's daemon has them.
  const d = await startTestDaemon({
    env: { RBROWSE_STANDBY: DEFAULT_STANDBY, RBROWSE_STANDBY_BURST_MB: '', RBROWSE_SPARE_BOXES: '', ...shellEnv() },
  });
  cleanups.push(() => d.stop());
  const side = (mode: string, chromium = OWN_CHROMIUM, name = mode): Side => ({ name, mode, chromium });
  const sides = [side('own-fresh'), side('rbrowse-fresh'), side('own'), side('rbrowse')];
  // On the headless shell, Playwright's own launch of full Chromium too, a browser per test.
  if (OWN_CHROMIUM !== FULL_CHROMIUM) sides.push(side('own-fresh', FULL_CHROMIUM, 'own-fresh-full'));
  const comparisons: { label: string; own: string; rbrowse: string; goal?: number }[] = [
    { label: 'a fresh browser per test', own: 'own-fresh', rbrowse: 'rbrowse-fresh', goal: 0.6 },
    { label: 'a browser per worker', own: 'own', rbrowse: 'rbrowse' },
    ...(OWN_CHROMIUM !== FULL_CHROMIUM
      ? [
          {
            label: 'a fresh browser per test, against Playwright launching full Chromium',
            own: 'own-fresh-full',
            rbrowse: 'rbrowse-fresh',
            goal: 0.6,
          },
        ]
      : []),
  ];
  const runs: Record<string, Run[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of sides) {
      const r = await runSuite(d, s);
      (runs[s.name] ??= []).push(r);
      progress(`round ${round + 1} ${s.name}: ${(r.wallMs / 1000).toFixed(1)} s, ${r.passed} passed`);
    }
  }
  const rows: Comparison[] = [];
  for (const { label, own, rbrowse, goal } of comparisons) {
    rows.push({
      metric: `suite wall time, ${label}`,
      unit: 'ms',
      rbrowse: summarize(runs[rbrowse]!.map((r) => r.wallMs)),
      raw: summarize(runs[own]!.map((r) => r.wallMs)),
      ...(goal ? { goal } : {}),
    });
    rows.push({
      metric: `one test, ${label}`,
      unit: 'ms',
      rbrowse: summarize(runs[rbrowse]!.flatMap((r) => r.testMs)),
      raw: summarize(runs[own]!.flatMap((r) => r.testMs)),
    });
  }
  console.log(renderTable(rows));
  console.log(
    `raw: Playwright's own launch of ${OWN_CHROMIUM}${OWN_CHROMIUM !== FULL_CHROMIUM ? ` (the rows against full Chromium: ${FULL_CHROMIUM})` : ''}; rbrowse's headless sessions on ${headlessBuild()}; load average ${before} before, ${load()} after`,
  );
});
