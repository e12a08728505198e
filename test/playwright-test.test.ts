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

test('a Playwright Test project of 24 tests runs green on rbrowse with 2 workers, one session per worker', async () => {
  const out = await mkdtemp(join(tmpdir(), 'rbrowse-pw-suite-'));
  try {
    const report = join(out, 'report.json');
    const run = await execa(
      process.execPath,
      [join(ROOT, 'node_modules/@playwright/test/cli.js'), 'test', '--config', 'fixtures/playwright-suite/playwright.config.ts'],
      {
        cwd: ROOT,
        env: { ...d.env, PW_JSON_REPORT: report, PW_OUTPUT_DIR: join(out, 'results') },
        extendEnv: false,
        reject: false,
        timeout: 300_000,
      },
    );
    assert.equal(run.exitCode, 0, `${run.stdout}\n${run.stderr}`);
    const stats = JSON.parse(await readFile(report, 'utf8')).stats;
    assert.deepEqual(
      { expected: stats.expected, unexpected: stats.unexpected, flaky: stats.flaky, skipped: stats.skipped },
      { expected: 24, unexpected: 0, flaky: 0, skipped: 0 },
    );
    // Each worker had a session of this daemon, ended when the worker finished.
    const ended = (await d.api('GET', '/browsers?status=deleted&limit=100')).body as { session_id: string }[];
    assert.equal(ended.length, 2, JSON.stringify(ended));
    assert.deepEqual((await d.api('GET', '/browsers')).body, []);
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});
