/**
 * The browser-level API of issue "the rest of Kernel's browser API", timed against its floor in
 * the same run: process exec of `true` against the same bubblewrap wrap spawned directly;
 * playwright.execute of `return 1` against a Node process that loads Playwright and connects to
 * the same session; curl of a local page against Node's own fetch of it. Medians of alternated runs.
 *
 *   npm run bench:browser-api    (BENCH_API_ROUNDS=15)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { Sandbox } from '../daemon/sandbox/sandbox.js';
import { startTestDaemon } from '../test/helpers/daemon.js';
import { intEnv, load, progress, runBench } from './lifecycle.js';
import { alternate, createSession, timed } from './scenarios.js';
import { renderTable, summarize, type Comparison } from './stats.js';

const ROUNDS = intEnv('BENCH_API_ROUNDS', 15);

runBench(async (cleanups) => {
  const before = load();
  const d = await startTestDaemon();
  cleanups.push(() => d.stop());
  const scratch = await mkdtemp(join(tmpdir(), 'rbrowse-bench-api-'));
  cleanups.push(() => rm(scratch, { recursive: true, force: true }));
  const page = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<title>bench</title>hello'));
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => page.close(() => r())));
  const pageUrl = `http://127.0.0.1:${(page.address() as { port: number }).port}/`;
  const session = await createSession(d, { headless: true });
  const id = session.session_id;
  const call = async (path: string, body: object) => {
    const res = await d.api('POST', `/browsers/${id}${path}`, body);
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${res.text}`);
    return res.body;
  };

  progress('exec');
  const sandbox = Sandbox.detect({ hide: [d.home], log: () => {} });
  const [file, ...args] = [...sandbox.wrap({ home: scratch, tmp: scratch }), 'true'];
  const [exec, spawnFloor] = await alternate(
    2,
    ROUNDS,
    () => timed(() => call('/process/exec', { command: 'true' })),
    () => timed(() => execa(file!, args)),
  );

  progress('playwright.execute');
  const connectOnly = `import('playwright').then(({ chromium }) => chromium.connectOverCDP(${JSON.stringify(session.cdp_ws_url)})).then(() => process.exit(0))`;
  const [pw, pwFloor] = await alternate(
    1,
    ROUNDS,
    () => timed(() => call('/playwright/execute', { code: 'return 1;' })),
    () => timed(() => execa(process.execPath, ['--input-type=module', '-e', connectOnly], { cwd: process.cwd() })),
  );

  progress('curl');
  const [curl, fetchFloor] = await alternate(
    2,
    ROUNDS,
    () => timed(() => call('/curl', { url: pageUrl })),
    () => timed(async () => (await fetch(pageUrl)).text()),
  );

  const rows: Comparison[] = [
    { metric: 'process exec `true` vs the same wrap spawned', unit: 'ms', rbrowse: summarize(exec), raw: summarize(spawnFloor) },
    { metric: 'playwright.execute `return 1` vs node + connectOverCDP', unit: 'ms', rbrowse: summarize(pw), raw: summarize(pwFloor) },
    { metric: 'curl of a local page vs Node fetch', unit: 'ms', rbrowse: summarize(curl), raw: summarize(fetchFloor) },
  ];
  console.log(`\nrbrowse browser-level API bench (${ROUNDS} rounds each, alternated; load average before: ${before}, after: ${load()})\n`);
  console.log(renderTable(rows));
});
