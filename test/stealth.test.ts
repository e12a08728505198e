import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright';
import puppeteer from 'puppeteer-core';
import { DisplayAllocator } from '../daemon/browser/xvfb.js';
import { boxEnv } from '../daemon/box/box-env.js';
import { standaloneBox } from './helpers/box.js';
import { resolveChromium } from '../src/system-deps.js';
import { startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer, type SeenRequest } from './helpers/fixtures.js';

const VIEWPORT = { width: 1024, height: 768 };
const DETECT = `/detect.html?w=${VIEWPORT.width}&h=${VIEWPORT.height}`;
/** Every scope fixtures/pages/detect.html reports on. */
const SCOPES = [
  'page',
  'about:blank iframe',
  'same-origin iframe',
  'same-origin iframe worker',
  'cross-site iframe',
  'cross-site iframe worker',
  'dedicated worker',
  'shared worker',
  'service worker',
];
const REPORT_MS = 120_000;

interface ScopeReport {
  where: string;
  values: Record<string, any>;
  tells: string[];
}
interface Report {
  reports: ScopeReport[];
  tells: string[];
}

let d: TestDaemon;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
/** detect.html in a plain headful Chromium without any debugging connection: what stealth must look like. */
let reference: Report;
let referenceRequests: SeenRequest[];

before(async () => {
  d = await startTestDaemon();
  fixtures = await startFixtureServer();
  ({ report: reference, requests: referenceRequests } = await plainBrowserReport());
});
after(async () => {
  await fixtures?.close();
  await d?.stop();
});

/**
 * Runs detect.html in a Chromium of our own on its own display, as a person would: no CDP, no
 * automation flag. It runs in a box as sessions do (same display stack, same user), started by hand.
 */
async function plainBrowserReport(): Promise<{ report: Report; requests: SeenRequest[] }> {
  const b = await standaloneBox();
  try {
    const env = boxEnv();
    const display = await new DisplayAllocator().start({ ...VIEWPORT, env, box: b.box });
    const first = fixtures.requests.length;
    b.box.spawn(
      [
        resolveChromium(),
        '--no-first-run',
        '--no-default-browser-check',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-breakpad',
        '--disable-crash-reporter',
        '--password-store=basic',
        '--ozone-platform=x11',
        '--user-data-dir=/home/kernel/user-data',
        `--window-size=${VIEWPORT.width},${VIEWPORT.height}`,
        '--window-position=0,0',
        `${fixtures.url}${DETECT}&post=/report`,
      ],
      { env: boxEnv(display.number), stdout: false, stderr: false },
    );
    const posted = await waitFor(() => fixtures.requests.slice(first).find((r) => r.path === '/report'), REPORT_MS, 'the reference report');
    return { report: JSON.parse(posted!.body!) as Report, requests: fixtures.requests.slice(first) };
  } finally {
    await b.close();
  }
}

async function createSession(body: object) {
  const res = await d.api('POST', '/browsers', { viewport: VIEWPORT, timeout_seconds: 300, ...body });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** A session driven over Playwright's connectOverCDP; deleted afterwards whatever happens. */
async function withSession<T>(body: object, run: (browser: Browser, session: any) => Promise<T>): Promise<T> {
  const session = await createSession(body);
  let browser: Browser | undefined;
  try {
    browser = await chromium.connectOverCDP(session.cdp_ws_url);
    return await run(browser, session);
  } finally {
    await browser?.close();
    assert.equal((await d.api('DELETE', `/browsers/${session.session_id}`)).status, 204);
  }
}

/** String expressions, not functions: the test transpiler's helpers must not reach the page. */
async function reportOf(page: Page): Promise<Report> {
  await page.waitForFunction('window.detectReport', null, { timeout: REPORT_MS });
  return (await page.evaluate('window.detectReport')) as Report;
}

/**
 * On a loaded machine a worker's first WebGL context can fail to be created (the GPU process,
 * SwiftShader here, answers late): getContext returns null, which any browser does then. That
 * alone is no stealth tell, so such a report is taken once more; any other tell stands at once,
 * and a WebGL failure that persists fails the test.
 */
async function detect(page: Page): Promise<Report> {
  await page.goto(`${fixtures.url}${DETECT}`);
  const report = await reportOf(page);
  const transient = report.tells.length > 0 && report.tells.every((t) => /no WebGL: getContext\("webgl"\) returned null/.test(t));
  if (!transient) return report;
  await page.goto(`${fixtures.url}${DETECT}`);
  return reportOf(page);
}

/** The requests the fixtures server gets while run() runs. */
async function requestsDuring<T>(run: () => Promise<T>): Promise<{ result: T; requests: SeenRequest[] }> {
  const first = fixtures.requests.length;
  const result = await run();
  return { result, requests: fixtures.requests.slice(first) };
}

/** What a detector compares with a real browser, per scope: everything but WebGL (no GPU here) and sizes of frames. */
function fingerprint(report: Report): Record<string, object> {
  return Object.fromEntries(
    report.reports.map((r) => {
      const v = r.values;
      const h = v.headers ?? {};
      return [
        r.where,
        {
          userAgent: v.userAgent,
          appVersion: v.appVersion,
          platform: v.platform,
          webdriver: v.webdriver,
          language: v.language,
          languages: v.languages,
          brands: v.brands,
          uaPlatform: v.uaPlatform,
          mobile: v.mobile,
          highEntropy: v.highEntropy,
          plugins: v.plugins,
          mimeTypes: v.mimeTypes,
          chrome: v.chrome,
          screen: v.screen,
          permissions: v.permissions,
          headers: Object.fromEntries(['user-agent', 'sec-ch-ua', 'sec-ch-ua-mobile', 'sec-ch-ua-platform', 'accept-language'].map((k) => [k, h[k]])),
        },
      ];
    }),
  );
}

const header = (r: SeenRequest, name: string) => String(r.headers[name] ?? '');

function assertClean(report: Report, requests: SeenRequest[], what: string) {
  assert.deepEqual(report.reports.map((r) => r.where).sort(), [...SCOPES].sort(), `${what}: every scope reported`);
  assert.deepEqual(report.tells, [], `${what}: no tell`);
  for (const r of report.reports) {
    assert.match(r.values.webgl?.renderer ?? '', /\S/, `${what}: ${r.where} has WebGL`);
    assert.doesNotMatch(r.values.webgl.renderer, /SwiftShader/, `${what}: ${r.where} WebGL`);
  }
  // A detector sees what a person's browser shows, in every scope and every header.
  assert.deepEqual(fingerprint(report), fingerprint(reference), `${what}: the same as a plain browser`);
  const userAgent = report.reports.find((r) => r.where === 'page')!.values.userAgent;
  assert.ok(
    requests.some((r) => r.path === '/detect-sw.js'),
    `${what}: the service worker's script was fetched`,
  );
  for (const r of requests) {
    assert.equal(header(r, 'user-agent'), userAgent, `${what}: User-Agent of ${r.path}`);
    assert.doesNotMatch(header(r, 'sec-ch-ua'), /Headless/, `${what}: Sec-CH-UA of ${r.path}`);
  }
  const nav = requests.find((r) => r.path === '/detect.html')!;
  const referenceNav = referenceRequests.find((r) => r.path === '/detect.html')!;
  for (const name of ['user-agent', 'sec-ch-ua', 'sec-ch-ua-mobile', 'sec-ch-ua-platform', 'accept-language']) {
    assert.equal(header(nav, name), header(referenceNav, name), `${what}: navigation header ${name}`);
  }
}

/** Registers detect-sw.js on the page and asks it for a report (a string expression, see reportOf). */
const SERVICE_WORKER_REPORT = `(async () => {
  const reg = await navigator.serviceWorker.register('detect-sw.js');
  const active = (await navigator.serviceWorker.ready).active;
  const answer = new Promise((resolve) => navigator.serviceWorker.addEventListener('message', (e) => resolve(e.data), { once: true }));
  active.postMessage('detect');
  return answer;
})()`;

describe('stealth', () => {
  test('the reference: a plain browser shows no tell but the missing GPU', () => {
    assert.deepEqual(reference.reports.map((r) => r.where).sort(), [...SCOPES].sort());
    const tells = reference.tells.filter((t) => !/no WebGL/.test(t));
    assert.deepEqual(tells, [], 'the detector flags nothing a real browser does');
    assert.doesNotMatch(reference.reports[0]!.values.userAgent, /Headless/);
  });

  test('a stealth headless session shows no tell in its pages, frames and workers, nor in its headers', async () => {
    await withSession({ headless: true, stealth: true }, async (browser, session) => {
      assert.equal(session.stealth, true);
      const { result: report, requests } = await requestsDuring(() => detect(browser.contexts()[0]!.pages()[0]!));
      assertClean(report, requests, 'stealth headless');
    });
  });

  test('a stealth headful session shows no tell either', async () => {
    await withSession({ headless: false, stealth: true }, async (browser) => {
      const { result: report, requests } = await requestsDuring(() => detect(browser.contexts()[0]!.pages()[0]!));
      assertClean(report, requests, 'stealth headful');
    });
  });

  test('a plain headless session keeps its tells', async () => {
    await withSession({ headless: true }, async (browser, session) => {
      assert.equal(session.stealth, false);
      const { result: report, requests } = await requestsDuring(() => detect(browser.contexts()[0]!.pages()[0]!));
      const tells = report.tells.join('\n');
      assert.match(tells, /^page: navigator\.webdriver is set: true$/m);
      assert.match(tells, /^page: HeadlessChrome in navigator\.userAgent/m);
      assert.match(tells, /^service worker: HeadlessChrome in navigator\.userAgent/m);
      assert.match(tells, /^page: HeadlessChrome in the User-Agent header/m);
      assert.match(tells, /^page: WebGL renderer is SwiftShader/m);
      assert.match(header(requests.find((r) => r.path === '/detect.html')!, 'user-agent'), /HeadlessChrome/);
      assert.match(header(requests.find((r) => r.path === '/detect-sw.js')!, 'user-agent'), /HeadlessChrome/);
    });
  });

  test('a plain headful session keeps its tells', async () => {
    await withSession({ headless: false }, async (browser) => {
      const report = await detect(browser.contexts()[0]!.pages()[0]!);
      const tells = report.tells.join('\n');
      assert.match(tells, /^page: navigator\.webdriver is set: true$/m);
      assert.match(tells, /^page: no WebGL/m);
      assert.doesNotMatch(tells, /Headless/);
    });
  });

  test('a service worker stopped when idle and started again is patched again', async () => {
    await withSession({ headless: true, stealth: true }, async (browser) => {
      const page = browser.contexts()[0]!.pages()[0]!;
      await page.goto(`${fixtures.url}/hello.html`);
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('ServiceWorker.enable');
      let last = (await page.evaluate(SERVICE_WORKER_REPORT)) as ScopeReport & { instance: string };
      assert.deepEqual(last.tells, [], 'first start');
      for (const round of [1, 2]) {
        await cdp.send('ServiceWorker.stopAllWorkers');
        const previous = last.instance;
        last = (await waitFor(
          async () => {
            const report = (await page.evaluate(SERVICE_WORKER_REPORT)) as ScopeReport & { instance: string };
            return report.instance !== previous ? report : null;
          },
          30_000,
          'the service worker to start again',
        ))!;
        assert.deepEqual(last.tells, [], `restart ${round}`);
      }
    });
  });

  test("the daemon's own connection does not keep a stealth session alive", async () => {
    const session = await createSession({ headless: true, stealth: true, timeout_seconds: 10 });
    const ended = await waitFor(
      async () => {
        const res = await d.api('GET', `/browsers/${session.session_id}?include_deleted=true`);
        return res.body.deleted_at;
      },
      60_000,
      'the stealth session to time out without clients',
    );
    assert.ok(Date.parse(ended) - Date.parse(session.created_at) >= 10_000, 'not before its timeout');
  });

  test('pages a client creates, popups, other contexts, a start URL and Puppeteer clients are covered, and nothing hangs', async () => {
    const first = fixtures.requests.length;
    await withSession({ headless: true, stealth: true, start_url: `${fixtures.url}${DETECT}` }, async (browser, session) => {
      const context = browser.contexts()[0]!;
      // The start page opens once the patches are in, never before, and has loaded when the create
      // answers: a client attaching while its cross-site iframe waited for the patcher used to leave
      // that iframe empty. Loaded once: the page, its same-origin and its cross-site iframe.
      assert.equal(fixtures.requests.slice(first).filter((r) => r.path === '/detect.html').length, 3, 'the start page loaded once');
      assert.deepEqual((await reportOf(context.pages()[0]!)).tells, [], 'the start page');

      const created = await context.newPage();
      assert.deepEqual((await detect(created)).tells, [], 'a page made by context.newPage()');

      const [popup] = await Promise.all([
        created.waitForEvent('popup'),
        created.evaluate(`window.open(${JSON.stringify(`${fixtures.url}${DETECT}`)})`),
      ]);
      assert.deepEqual((await reportOf(popup)).tells, [], 'a popup');

      // viewport: null, or Playwright emulates its default 1280x720 window on the real screen.
      const other = await browser.newContext({ viewport: null });
      assert.deepEqual((await detect(await other.newPage())).tells, [], 'a page of a context made by browser.newContext()');
      await other.close();
      await browser.close();

      // Puppeteer auto-attaches with waitForDebuggerOnStart as well: both clients must resume each target.
      const pptr = await puppeteer.connect({ browserWSEndpoint: session.cdp_ws_url, defaultViewport: null });
      try {
        const page = await pptr.newPage();
        await page.goto(`${fixtures.url}${DETECT}`);
        await page.waitForFunction('window.detectReport', { timeout: REPORT_MS });
        const report = (await page.evaluate('window.detectReport')) as Report;
        assert.deepEqual(report.tells, [], 'a page made by Puppeteer');
        assert.deepEqual(report.reports.map((r) => r.where).sort(), [...SCOPES].sort());
      } finally {
        await pptr.disconnect();
      }
    });
  });
});
