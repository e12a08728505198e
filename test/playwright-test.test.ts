/**
 * A real @playwright/test project (fixtures/playwright-suite: 24 tests of navigation, forms,
 * screenshots, page.route, two contexts and a download) runs green on rbrowse with two workers,
 * its tests importing `test` from 'rbrowse/playwright' and nothing else changed. It finds the
 * daemon as a user's project does: through RBROWSE_HOME (`rbrowse env`).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { execa } from 'execa';
import { ROOT, startTestDaemon, type TestDaemon } from './helpers/daemon.js';

let d: TestDaemon;
before(async () => {
  d = await startTestDaemon();
});
after(async () => {
  await d?.stop();
});

/** Runs the project (or some of its files) in a PW_MODE; answers its JSON report's stats. */
async function runProject(mode: string, files: string[] = []): Promise<{ expected: number; unexpected: number; flaky: number; skipped: number }> {
  const out = await mkdtemp(join(tmpdir(), 'rbrowse-pw-suite-'));
  try {
    const report = join(out, 'report.json');
    const run = await execa(
      process.execPath,
      [join(ROOT, 'node_modules/@playwright/test/cli.js'), 'test', '--config', 'fixtures/playwright-suite/playwright.config.ts', ...files],
      {
        cwd: ROOT,
        env: { ...d.env, PW_MODE: mode, PW_JSON_REPORT: report, PW_OUTPUT_DIR: join(out, 'results') },
        extendEnv: false,
        reject: false,
        timeout: 300_000,
      },
    );
    assert.equal(run.exitCode, 0, `${run.stdout}\n${run.stderr}`);
    const { expected, unexpected, flaky, skipped } = JSON.parse(await readFile(report, 'utf8')).stats;
    return { expected, unexpected, flaky, skipped };
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

const ended = async () => ((await d.api('GET', '/browsers?status=deleted&limit=100')).body as unknown[]).length;

test('a Playwright Test project of 24 tests runs green on rbrowse with 2 workers, one session per worker', async () => {
  const before = await ended();
  assert.deepEqual(await runProject('rbrowse'), { expected: 24, unexpected: 0, flaky: 0, skipped: 0 });
  // Each worker had a session of this daemon, ended when the worker finished.
  assert.equal((await ended()) - before, 2);
  assert.deepEqual((await d.api('GET', '/browsers')).body, []);
});

test('testWithFreshBrowser gives every test a session of its own', async () => {
  const before = await ended();
  // Two tests are enough to tell one session per test from one per worker (the benchmark runs them all).
  assert.deepEqual(
    await runProject('rbrowse-fresh', ['tests/navigation.spec.ts', '--grep', 'title and heading|a link navigates', '--workers', '1']),
    {
      expected: 2,
      unexpected: 0,
      flaky: 0,
      skipped: 0,
    },
  );
  assert.equal((await ended()) - before, 2);
  assert.deepEqual((await d.api('GET', '/browsers')).body, []);
});
