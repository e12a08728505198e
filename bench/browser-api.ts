/**
 * The browser-level API of issue "the rest of Kernel's browser API", timed against its floor in
 * the same run: process exec of `true` against the same bubblewrap wrap spawned directly;
 * playwright.execute of `return 1` against a Node process that loads Playwright and connects to
 * the same session; curl of a local page against Node's own fetch of it; a WebDriver BiDi
 * script.evaluate against CDP's Runtime.evaluate through the gateway, and a BiDi connection (its
 * mapper's start and session.new) against a bare Node start; loadExtensions (a restart in place)
 * against a raw Chromium's launch to DevTools; a page visit with every telemetry category on
 * against the same visit with telemetry off. Medians of alternated runs.
 *
 *   npm run bench:browser-api    (BENCH_API_ROUNDS=15)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { chromium } from 'playwright';
import WebSocket from 'ws';
import { CdpClient } from './cdp.js';
import { resolveChromium } from '../src/system-deps.js';
import { zipOf } from '../test/helpers/zip.js';
import type { TestDaemon } from '../test/helpers/daemon.js';
import { RawChromiums } from './raw.js';
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
  // The floor: the same program spawned here, with no session, box or API in between.
  const [exec, spawnFloor] = await alternate(
    2,
    ROUNDS,
    () => timed(() => call('/process/exec', { command: 'true' })),
    () => timed(() => execa('true')),
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

  progress('webdriver bidi');
  const [bidiEval, cdpEval] = await alternate(
    1,
    ROUNDS,
    async () => (await bidiEvaluations(session.webdriver_ws_url, 20)) / 20,
    async () => (await cdpEvaluations(session.cdp_ws_url, 20)) / 20,
  );
  const [bidiConnect, nodeStart] = await alternate(
    1,
    ROUNDS,
    () => timed(() => bidiEvaluations(session.webdriver_ws_url, 0)),
    () => timed(() => execa(process.execPath, ['-e', '0'])),
  );

  progress('loadExtensions');
  const raw = await RawChromiums.create(resolveChromium());
  cleanups.push(async () => void (await raw.disposeAll()));
  const extension = await zipOf({ dir: join(process.cwd(), 'fixtures', 'extensions', 'content-mark') });
  const [restart, launch] = await alternate(
    1,
    Math.min(ROUNDS, 8),
    () => timed(() => loadExtension(d, id, extension)),
    async () => {
      const profile = await raw.prepare();
      try {
        return await timed(() => raw.launch(profile));
      } finally {
        await raw.dispose(profile);
      }
    },
  );

  progress('telemetry');
  const all = { enabled: true, browser: { console: { enabled: true }, network: { enabled: true }, page: { enabled: true } } };
  const watched = await createSession(d, { headless: true, telemetry: all });
  const plain = await createSession(d, { headless: true });
  const [withTelemetry, without] = await alternate(
    2,
    ROUNDS,
    () => timed(() => visitPage(watched.cdp_ws_url, pageUrl)),
    () => timed(() => visitPage(plain.cdp_ws_url, pageUrl)),
  );

  const rows: Comparison[] = [
    { metric: 'process exec `true` vs the same wrap spawned', unit: 'ms', rbrowse: summarize(exec), raw: summarize(spawnFloor) },
    { metric: 'playwright.execute `return 1` vs node + connectOverCDP', unit: 'ms', rbrowse: summarize(pw), raw: summarize(pwFloor) },
    { metric: 'curl of a local page vs Node fetch', unit: 'ms', rbrowse: summarize(curl), raw: summarize(fetchFloor) },
    { metric: 'BiDi script.evaluate vs CDP Runtime.evaluate (gateway)', unit: 'ms', rbrowse: summarize(bidiEval), raw: summarize(cdpEval) },
    { metric: 'BiDi connect + session.new vs a bare node start', unit: 'ms', rbrowse: summarize(bidiConnect), raw: summarize(nodeStart) },
    { metric: 'loadExtensions (restart in place) vs raw launch', unit: 'ms', rbrowse: summarize(restart), raw: summarize(launch) },
    { metric: 'page visit, all telemetry on vs off', unit: 'ms', rbrowse: summarize(withTelemetry), raw: summarize(without) },
  ];
  console.log(`\nrbrowse browser-level API bench (${ROUNDS} rounds each, alternated; load average before: ${before}, after: ${load()})\n`);
  console.log(renderTable(rows));
});

/** Opens a BiDi connection, starts its session, and runs `count` script.evaluate of 1 + 1: their time in ms. */
async function bidiEvaluations(url: string, count: number): Promise<number> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  let next = 0;
  const send = (method: string, params: object) =>
    new Promise<any>((resolve, reject) => {
      const id = ++next;
      const onMessage = (data: WebSocket.RawData) => {
        const m = JSON.parse(data.toString());
        if (m.id !== id) return;
        ws.off('message', onMessage);
        if (m.type === 'error') reject(new Error(m.message));
        else resolve(m.result);
      };
      ws.on('message', onMessage);
      ws.send(JSON.stringify({ id, method, params }));
    });
  try {
    await send('session.new', { capabilities: {} });
    if (count === 0) return 0;
    const { contexts } = await send('browsingContext.getTree', {});
    const target = { context: contexts[0].context };
    return await timed(async () => {
      for (let i = 0; i < count; i++) await send('script.evaluate', { expression: '1 + 1', target, awaitPromise: false });
    });
  } finally {
    ws.close();
  }
}

/** The CDP side: `count` Runtime.evaluate of 1 + 1 in the session's page, through the gateway: their time in ms. */
async function cdpEvaluations(url: string, count: number): Promise<number> {
  const cdp = await CdpClient.connect(url);
  try {
    const sessionId = await cdp.attachToPage();
    return await timed(async () => {
      for (let i = 0; i < count; i++) await cdp.send('Runtime.evaluate', { expression: '1 + 1' }, sessionId);
    });
  } finally {
    cdp.close();
  }
}

async function loadExtension(d: TestDaemon, id: string, zip: Buffer): Promise<void> {
  const form = new FormData();
  form.append('extensions[0][name]', 'bench');
  form.append('extensions[0][zip_file]', new Blob([new Uint8Array(zip)]), 'bench.zip');
  const res = await fetch(`${d.baseUrl}/browsers/${id}/extensions`, { method: 'POST', headers: { authorization: `Bearer ${d.apiKey}` }, body: form });
  if (res.status !== 204) throw new Error(`loadExtensions answered ${res.status}: ${await res.text()}`);
}

/** Connects, opens a page, loads the URL, closes: a client's visit. */
async function visitPage(cdpUrl: string, url: string): Promise<void> {
  const browser = await chromium.connectOverCDP(cdpUrl);
  try {
    const page = await browser.contexts()[0]!.newPage();
    await page.goto(url);
    await page.close();
  } finally {
    await browser.close();
  }
}
