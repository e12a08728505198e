import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Kernel from '@onkernel/sdk';
import { chromium, type Browser } from 'playwright';
import puppeteer from 'puppeteer-core';
import WebSocket from 'ws';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { forgetAfterMs, parseStandby, spareBoxCount } from '../src/standby.js';
import { BACKGROUND_START_MS, processesGone, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';
import { autogroupNices, lowersBackgroundLaunches } from './helpers/priority.js';
import { startFixtureProxy, TEST_HOST, type FixtureProxy } from './helpers/forward-proxy.js';

const HEADLESS = 'headless@1920x1080@25';
const HEADFUL = 'headful@1920x1080@25';

let d: TestDaemon;
let kernel: Kernel;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
let proxy: FixtureProxy;

before(async () => {
  fixtures = await startFixtureServer();
  proxy = await startFixtureProxy({ label: 'standby-proxy' });
  // The default standby set: one default headless and one default headful browser.
  d = await startTestDaemon({ env: { RBROWSE_STANDBY: 'headless=1,headful=1' } });
  kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
});
after(async () => {
  await d?.stop();
  await fixtures?.close();
  await proxy?.close();
});

async function daemonLog(t: TestDaemon): Promise<Record<string, any>[]> {
  const text = await readFile(join(t.home, 'logs', 'daemon.log'), 'utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** The ids of the browsers the daemon launched ahead of demand, so far. */
async function standbyIds(t: TestDaemon): Promise<string[]> {
  return (await daemonLog(t)).filter((l) => l.msg === 'standby browser ready').map((l) => l.session);
}

async function readyCount(t: TestDaemon, kind: string): Promise<number> {
  const health = await t.api('GET', '/health', undefined, null);
  assert.equal(health.status, 200);
  return health.body.standby?.[kind]?.ready ?? 0;
}

const standbyReady = (t: TestDaemon, kind: string) =>
  waitFor(async () => (await readyCount(t, kind)) >= 1, BACKGROUND_START_MS, `a ${kind} standby browser`);

async function pageOf(cdpUrl: string): Promise<{ browser: Browser; page: import('playwright').Page }> {
  const browser = await chromium.connectOverCDP(cdpUrl);
  const pages = browser.contexts()[0]!.pages();
  assert.equal(pages.length, 1, 'one page');
  return { browser, page: pages[0]! };
}

describe('warm standby', { timeout: 300_000 }, () => {
  test('a create takes a ready browser, which is refilled, and carries nothing of the session before it', async () => {
    await standbyReady(d, HEADLESS);
    const tally = async () => (await d.api('GET', '/health', undefined, null)).body.standby_served;
    const before = await tally();
    const a = await kernel.browsers.create({ headless: true });
    assert.ok((await standbyIds(d)).includes(a.session_id), 'the create was served by a standby browser');
    assert.equal(await readyCount(d, HEADLESS), 0, 'taken');

    const { browser, page } = await pageOf(a.cdp_ws_url);
    await page.goto(`${fixtures.url}/hello.html`);
    await page.evaluate(() => {
      document.cookie = 'left=behind; max-age=86400; path=/';
      localStorage.setItem('left', 'behind');
    });
    await browser.close();
    const written = await fetch(`${d.baseUrl}/browsers/${a.session_id}/fs/write_file?path=${encodeURIComponent('/home/kernel/Downloads/left.txt')}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${d.apiKey}`, 'content-type': 'application/octet-stream' },
      body: 'behind',
    });
    assert.equal(written.status, 204, await written.text());
    await kernel.browsers.deleteByID(a.session_id);

    // Refilled in the background with a browser of its own.
    await standbyReady(d, HEADLESS);
    const b = await kernel.browsers.create({ headless: true });
    assert.notEqual(b.session_id, a.session_id);
    assert.ok((await standbyIds(d)).includes(b.session_id), 'the next create was served by the refill');
    const after = await tally();
    assert.deepEqual(
      {
        creates: after.creates - before.creates,
        from_ready: after.from_ready - before.from_ready,
        from_launch: after.from_launch - before.from_launch,
      },
      { creates: 2, from_ready: 2, from_launch: 0 },
      '/health counts both creates as served by a ready browser',
    );
    const next = await pageOf(b.cdp_ws_url);
    try {
      assert.equal(next.page.url(), 'about:blank');
      assert.equal(await next.page.evaluate(() => history.length), 1, 'no history');
      await next.page.goto(`${fixtures.url}/hello.html`);
      assert.equal(await next.page.evaluate(() => document.cookie), '', 'no cookies');
      assert.equal(await next.page.evaluate(() => localStorage.length), 0, 'no localStorage');
      assert.deepEqual(await next.browser.contexts()[0]!.cookies(), []);
    } finally {
      await next.browser.close();
    }
    const listed = await d.api('GET', `/browsers/${b.session_id}/fs/list_files?path=${encodeURIComponent('/home/kernel/Downloads')}`);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body, [], 'no files or downloads of the session before');
    await kernel.browsers.deleteByID(b.session_id);
  });

  test("a handed-over browser gets the request's proxy, start URL, name, tags, timeout and jwts of its own", async () => {
    const created = await d.api('POST', '/proxies', { type: 'custom', config: { host: '127.0.0.1', port: proxy.port } });
    assert.equal(created.status, 200, created.text);
    await standbyReady(d, HEADLESS);
    const startUrl = `http://${TEST_HOST}/start`;
    const s = await kernel.browsers.create({
      headless: true,
      proxy_id: created.body.id,
      start_url: startUrl,
      name: 'warm-one',
      tags: { team: 'a' },
      timeout_seconds: 120,
    } as never);
    assert.ok((await standbyIds(d)).includes(s.session_id), 'served by a standby browser');
    assert.equal(s.proxy_id, created.body.id);
    assert.equal((s as any).name, 'warm-one');
    assert.deepEqual((s as any).tags, { team: 'a' });
    assert.equal(s.timeout_seconds, 120);
    const jwt = new URL(s.cdp_ws_url).searchParams.get('jwt');
    assert.ok(jwt && jwt.split('.').length === 3, 'a jwt of its own');
    const { browser, page } = await pageOf(s.cdp_ws_url);
    try {
      await waitFor(async () => (await page.title()) === 'standby-proxy', 15_000, 'the start URL through the proxy');
      assert.equal(page.url(), startUrl);
      assert.equal(await page.evaluate(() => history.length), 1, 'one history entry, as in a browser started with the URL');
      assert.ok(proxy.seen.includes(`GET ${startUrl}`), `the proxy served it: ${proxy.seen.join(', ')}`);
    } finally {
      await browser.close();
    }
    const listed = await kernel.browsers.list();
    const mine = (listed as any).items ?? (listed as any).data ?? listed;
    assert.ok(JSON.stringify(mine).includes(s.session_id), 'listed');
    await kernel.browsers.deleteByID(s.session_id);
    assert.equal((await d.api('DELETE', `/proxies/${created.body.id}`)).status, 204, 'the proxy is free at once after the delete');
  });

  test('the default headful session is warm too: its own display at 1920x1080, a live view jwt of its own', async () => {
    await standbyReady(d, HEADFUL);
    const s = await kernel.browsers.create({});
    assert.ok((await standbyIds(d)).includes(s.session_id), 'served by a standby browser');
    assert.ok(s.browser_live_view_url, 'a live view URL');
    const liveJwt = new URL(s.browser_live_view_url!).searchParams.get('jwt');
    assert.notEqual(liveJwt, new URL(s.cdp_ws_url).searchParams.get('jwt'));
    const live = await fetch(s.browser_live_view_url!);
    assert.equal(live.status, 200);
    const { browser, page } = await pageOf(s.cdp_ws_url);
    try {
      assert.deepEqual(await page.evaluate(() => [screen.width, screen.height, innerWidth]), [1920, 1080, 1920]);
    } finally {
      await browser.close();
    }
    await kernel.browsers.deleteByID(s.session_id);
  });

  test('a standby browser waits at the lowest CPU priority; handed over, it has the normal one', async (t) => {
    if (!(await lowersBackgroundLaunches())) return t.skip('needs autogroups and a daemon that may raise a priority again (root)');
    await standbyReady(d, HEADFUL);
    const id = (await standbyIds(d)).at(-1)!;
    const waiting = await autogroupNices(d.home, id);
    for (const command of ['Xvfb', 'x11vnc', 'bwrap'])
      assert.ok(waiting[command], `the standby browser has its ${command}: ${JSON.stringify(waiting)}`);
    for (const [command, values] of Object.entries(waiting)) assert.deepEqual(values, [19], `${command} waits at nice 19`);
    const s = await kernel.browsers.create({});
    assert.equal(s.session_id, id, 'the one measured was handed over');
    for (const [command, values] of Object.entries(await autogroupNices(d.home, id)))
      assert.deepEqual(values, [0], `${command} runs at nice 0 once handed over`);
    await kernel.browsers.deleteByID(s.session_id);
  });

  test('a create that finds none ready takes the launch of its kind under way, at normal priority, instead of a second launch', async () => {
    await standbyReady(d, HEADFUL);
    const first = await kernel.browsers.create({});
    // The refill of the kind starts a moment after the hand-over.
    await waitFor(
      async () => (await d.api('GET', '/health', undefined, null)).body.standby?.[HEADFUL]?.launching === true,
      30_000,
      'the refill to start',
    );
    const second = await kernel.browsers.create({});
    try {
      const taken = (await daemonLog(d)).filter((l) => l.msg === 'standby browser taken as it launched').map((l) => l.session);
      assert.ok(taken.includes(second.session_id), `the create took the launch under way: ${JSON.stringify(taken)}`);
      if (await lowersBackgroundLaunches()) {
        for (const [command, values] of Object.entries(await autogroupNices(d.home, second.session_id)))
          assert.deepEqual(values, [0], `${command} runs at nice 0`);
      }
      const { browser, page } = await pageOf(second.cdp_ws_url);
      try {
        await page.goto(`${fixtures.url}/hello.html`);
        assert.equal(await page.title(), 'rbrowse fixture');
      } finally {
        await browser.close();
      }
    } finally {
      await kernel.browsers.deleteByID(first.session_id);
      await kernel.browsers.deleteByID(second.session_id);
    }
  });

  test('a standby browser whose Chromium dies is replaced, and never handed out', async () => {
    await standbyReady(d, HEADLESS);
    const headlessIds = async () =>
      (await daemonLog(d)).filter((l) => l.msg === 'standby browser ready' && l.kind === HEADLESS).map((l) => l.session as string);
    const dead = (await headlessIds()).at(-1)!;
    const pids = await findMarkedProcesses(d.home, dead);
    assert.ok(pids.length > 0, 'the standby browser runs');
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone with its group already
      }
    }
    await waitFor(
      async () => (await headlessIds()).length > 0 && (await headlessIds()).at(-1) !== dead && (await readyCount(d, HEADLESS)) >= 1,
      BACKGROUND_START_MS,
      'a replacement',
    );
    await processesGone(d.home, dead);
    const s = await kernel.browsers.create({ headless: true });
    assert.notEqual(s.session_id, dead);
    const { browser, page } = await pageOf(s.cdp_ws_url);
    try {
      assert.equal(await page.evaluate(() => 6 * 7), 42);
    } finally {
      await browser.close();
    }
    await kernel.browsers.deleteByID(s.session_id);
  });

  test('creates that need a launch-time setting take the cold path', async () => {
    await standbyReady(d, HEADLESS);
    const kiosk = await kernel.browsers.create({ headless: true, kiosk_mode: true });
    const small = await kernel.browsers.create({ headless: true, viewport: { width: 1024, height: 768 } });
    const ids = await standbyIds(d);
    assert.ok(!ids.includes(kiosk.session_id) && !ids.includes(small.session_id), 'launched for the request');
    assert.equal(await readyCount(d, HEADLESS), 1, 'the standby browser is still there');
    for (const s of [kiosk, small]) await kernel.browsers.deleteByID(s.session_id);
  });

  test("a client's Browser.close, from Puppeteer or raw CDP, ends only its connection", async () => {
    await standbyReady(d, HEADLESS);
    const s = await kernel.browsers.create({ headless: true });
    const pptr = await puppeteer.connect({ browserWSEndpoint: s.cdp_ws_url, defaultViewport: null });
    await pptr.close();

    const ws = new WebSocket(s.cdp_ws_url);
    await new Promise((r, j) => ws.once('open', r).once('error', j));
    const answer = new Promise<any>((r) => ws.on('message', (m) => r(JSON.parse(String(m)))));
    const closed = new Promise<void>((r) => ws.once('close', () => r()));
    ws.send(JSON.stringify({ id: 7, method: 'Browser.close' }));
    assert.equal((await answer).id, 7, 'answered under its own id');
    await closed;

    assert.equal((await d.api('GET', `/browsers/${s.session_id}`)).body.deleted_at, undefined, 'the session lives');
    const again = new WebSocket(s.cdp_ws_url);
    await new Promise((r, j) => again.once('open', r).once('error', j));
    const version = new Promise<any>((r) => again.on('message', (m) => r(JSON.parse(String(m)))));
    again.send(JSON.stringify({ id: 1, method: 'Browser.getVersion' }));
    assert.match((await version).result.product, /Chrome\//);
    again.close();
    await kernel.browsers.deleteByID(s.session_id);
  });

  test('a profile saved by a session deleted a moment ago reaches the next session that loads it', async () => {
    const profile = await kernel.profiles.create({ name: 'standby-save' });
    const a = await kernel.browsers.create({ headless: true, profile: { id: profile.id, save_changes: true } });
    const first = await pageOf(a.cdp_ws_url);
    await first.page.goto(`${fixtures.url}/hello.html`);
    await first.page.evaluate(() => void (document.cookie = 'saved=yes; max-age=86400; path=/'));
    await first.browser.close();
    const deleted = await d.api('DELETE', `/browsers/${a.session_id}`);
    assert.equal(deleted.status, 204);
    // At once: the save is still under way in the background.
    const b = await kernel.browsers.create({ headless: true, profile: { id: profile.id } });
    const next = await pageOf(b.cdp_ws_url);
    try {
      await next.page.goto(`${fixtures.url}/hello.html`);
      assert.equal(await next.page.evaluate(() => document.cookie), 'saved=yes');
    } finally {
      await next.browser.close();
    }
    await kernel.browsers.deleteByID(b.session_id);
    await waitFor(async () => (await d.api('DELETE', `/profiles/${profile.id}`)).status === 204, 30_000, 'the profile to be free');
  });
});

describe('DELETE answers at once', { timeout: 120_000 }, () => {
  test('a deleted session is gone for its clients before the answer; daemon stop right after leaves no process', async () => {
    const t = await startTestDaemon({ env: { RBROWSE_STANDBY: 'headful=1' } });
    try {
      const s = (await t.api('POST', '/browsers', { headless: true })).body;
      const ws = new WebSocket(s.cdp_ws_url);
      await new Promise((r, j) => ws.once('open', r).once('error', j));
      const closed = new Promise<void>((r) => ws.once('close', () => r()));
      assert.equal((await t.api('DELETE', `/browsers/${s.session_id}`)).status, 204);
      assert.ok((await t.api('GET', `/browsers/${s.session_id}?include_deleted=true`)).body.deleted_at, 'reads as deleted');
      await closed;
      const refused = await fetch(s.cdp_ws_url.replace(/^ws:/, 'http:').replace('/browser/cdp?', '/browser/cdp/json/version?'));
      assert.equal(refused.status, 404, 'its jwt no longer opens anything');
    } finally {
      const stopped = await t.cli(['daemon', 'stop']);
      assert.equal(stopped.exitCode, 0, stopped.stderr);
      assert.deepEqual(await findMarkedProcesses(t.home), [], 'no browser, display or helper is left');
      await t.stop();
    }
  });
});

describe('learned standby kinds', { timeout: 180_000 }, () => {
  test('a kind created twice is kept ready and served from then on; learn=K caps the kinds; forgotten when no create asks', async () => {
    // Forgotten 20 s after the last create of it: long enough for the learned browser to start
    // on a loaded machine (with 6 s it was sometimes forgotten before it was ready).
    const t = await startTestDaemon({ env: { RBROWSE_STANDBY: 'learn=1', RBROWSE_STANDBY_FORGET_SECONDS: '20' } });
    const SMALL = 'headless@1024x768@60';
    const OTHER = 'headless@1440x900@25';
    const standbySet = async () => (await t.api('GET', '/health', undefined, null)).body.standby;
    const ids: string[] = [];
    const create = async (width: number, height: number) => {
      const r = await t.api('POST', '/browsers', { headless: true, viewport: { width, height } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      ids.push(r.body.session_id);
      return r.body.session_id as string;
    };
    try {
      assert.deepEqual(await standbySet(), {}, 'nothing kept before a create');
      await create(1024, 768);
      assert.deepEqual(await standbySet(), {}, 'one create is not a pattern');
      await create(1024, 768);
      assert.deepEqual(await standbyIds(t), [], 'both launched cold');
      // Its first browser may be launching already (launching: true), or not yet.
      const { launching, learned_until, ...learnedKind } = (await standbySet())[SMALL];
      assert.deepEqual(learnedKind, { ready: 0, wanted: 1, learned: true });
      // While it launches it is not forgotten, so no date is given; else 20 s from the create.
      if (launching) assert.equal(learned_until, undefined);
      else assert.ok(Date.parse(learned_until) <= Date.now() + 20_000 && Date.parse(learned_until) > Date.now() + 10_000, learned_until);
      await standbyReady(t, SMALL);
      const until = Date.parse((await standbySet())[SMALL].learned_until);
      assert.ok(until > Date.now() && until <= Date.now() + 20_000, 'counted from when its first browser was ready');
      const third = await create(1024, 768);
      assert.ok((await standbyIds(t)).includes(third), 'the third create was served by the learned kind');

      // learn=1: while one kind is kept, another asked for twice is not.
      await create(1440, 900);
      await create(1440, 900);
      assert.equal((await standbySet())[OTHER], undefined);

      for (const id of ids) assert.equal((await t.api('DELETE', `/browsers/${id}`)).status, 204);
      // No create of it for 20 s: forgotten, and its browser (the refill after the third create) stopped.
      await waitFor(async () => (await standbySet())[SMALL] === undefined, 60_000, 'the learned kind to be forgotten');
      const unused = (await standbyIds(t)).filter((id) => !ids.includes(id));
      assert.ok(unused.length >= 1, 'the learned kind was refilled after the create that took it');
      for (const id of unused) await processesGone(t.home, id);
      assert.ok((await daemonLog(t)).some((l) => l.msg === 'standby kind forgotten' && l.kind === SMALL));
    } finally {
      await t.stop();
    }
  });
});

describe('standby that follows a burst', { timeout: 300_000 }, () => {
  test('creates in a burst keep more of their kind ready, within the memory budget; the extra ones end when the burst stops', async () => {
    // 320 MiB: two more headless browsers at most (160 each); a burst is over 8 s after its last
    // create, or after its browsers were all ready if that came later.
    const b = await startTestDaemon({
      env: { RBROWSE_STANDBY: 'headless=1', RBROWSE_STANDBY_BURST_MB: '320', RBROWSE_STANDBY_BURST_HOLD_SECONDS: '8' },
    });
    const health = async () => (await b.api('GET', '/health', undefined, null)).body;
    const cycle = async () => {
      const s = await b.api('POST', '/browsers', { headless: true });
      assert.equal(s.status, 200, s.text);
      assert.equal((await b.api('DELETE', `/browsers/${s.body.session_id}`)).status, 204);
    };
    try {
      await standbyReady(b, HEADLESS);
      assert.deepEqual((await health()).standby_burst, { burst_budget_mb: 320, burst_used_mb: 0, burst_hold_seconds: 8 });
      // Six creates back to back, as a test suite makes them: beyond the kind's count (1) and one
      // more a refill covers, four more are asked for, and the budget's two are kept ready.
      for (let i = 0; i < 6; i++) await cycle();
      const during = await health();
      assert.equal(during.standby[HEADLESS].wanted, 3, JSON.stringify(during));
      assert.equal(during.standby[HEADLESS].burst, 2);
      assert.equal(during.standby_burst.burst_used_mb, 320);
      assert.equal(during.standby[HEADLESS].burst_until === undefined, during.standby[HEADLESS].ready < 3, 'no end while it fills');
      await waitFor(async () => (await readyCount(b, HEADLESS)) === 3, 120_000, 'three ready browsers');
      const full = (await health()).standby[HEADLESS];
      // (Unless the hold is over already: a very slow poll.)
      if (full.burst) assert.ok(Date.parse(full.burst_until) <= Date.now() + 8_000, 'the hold counts from when it was full');
      // The next creates of the burst take ready browsers: none of them waited for a launch.
      const ready = await standbyIds(b);
      const served: string[] = [];
      for (let i = 0; i < 2; i++) {
        const s = (await b.api('POST', '/browsers', { headless: true })).body;
        served.push(s.session_id);
        await b.api('DELETE', `/browsers/${s.session_id}`);
      }
      assert.ok(
        served.every((id) => ready.includes(id)),
        `served from standby: ${served.filter((id) => ready.includes(id)).length} of 2`,
      );
      // The burst stops: once its hold is over, the kind is back to its count, its extra browsers stopped.
      await waitFor(
        async () => {
          const h = await health();
          return h.standby[HEADLESS].wanted === 1 && h.standby[HEADLESS].ready === 1 && h.standby_burst.burst_used_mb === 0;
        },
        120_000,
        'the burst to end',
      );
      assert.equal((await health()).standby[HEADLESS].burst, undefined);
    } finally {
      await b.stop();
    }
  });
});

describe('standby off', { timeout: 120_000 }, () => {
  test('RBROWSE_STANDBY=0: nothing runs ahead of demand, and creates launch as before', async () => {
    const t = await startTestDaemon({ env: { RBROWSE_STANDBY: '0' } });
    try {
      assert.deepEqual((await t.api('GET', '/health', undefined, null)).body.standby, {});
      assert.deepEqual(await findMarkedProcesses(t.home), [], 'no browser before a create');
      const s = (await t.api('POST', '/browsers', { headless: true })).body;
      assert.ok(s.cdp_ws_url);
      assert.deepEqual(await standbyIds(t), []);
      const { browser, page } = await pageOf(s.cdp_ws_url);
      await page.goto(`${fixtures.url}/hello.html`);
      assert.equal(await page.title(), 'rbrowse fixture');
      await browser.close();
      assert.equal((await t.api('DELETE', `/browsers/${s.session_id}`)).status, 204);
    } finally {
      await t.stop();
    }
  });

  test('daemon start --standby refuses a bad set with a usage error', async () => {
    const t = await startTestDaemon({ env: { RBROWSE_STANDBY: '0' } });
    try {
      await t.cli(['daemon', 'stop']);
      const bad = await t.cli(['daemon', 'start', '--standby', 'headless@800x600']);
      assert.equal(bad.exitCode, 2, bad.stderr);
      assert.match(bad.stderr, /not a supported viewport/);
    } finally {
      await t.stop();
    }
  });
});

describe('spare boxes', { timeout: 180_000 }, () => {
  /** The session ids the processes of a home are marked with (a spare box's is its future session's); the launcher's mark is not one. */
  async function markedIds(home: string): Promise<string[]> {
    const ids = new Set<string>();
    for (const pid of await findMarkedProcesses(home)) {
      const vars = (await readFile(`/proc/${pid}/environ`, 'latin1').catch(() => '')).split('\0');
      const mark = vars.find((v) => v.startsWith('RBROWSE_SESSION='));
      if (mark && mark !== 'RBROWSE_SESSION=launcher') ids.add(mark.slice('RBROWSE_SESSION='.length));
    }
    return [...ids];
  }

  test('a cold create starts only its browser, in the box kept started, named by its id; the next box is started after it; none outlives the daemon', async () => {
    const t = await startTestDaemon({ env: { RBROWSE_SPARE_BOXES: '1' } });
    try {
      const health = async () => (await t.api('GET', '/health', undefined, null)).body.spare_boxes;
      await waitFor(async () => (await health())?.ready === 1, BACKGROUND_START_MS, 'a spare box');
      assert.deepEqual(await health(), { ready: 1, wanted: 1, served: 0 });
      const [spareId, ...others] = await markedIds(t.home);
      assert.ok(spareId, 'the spare box runs, marked with its id');
      assert.deepEqual(others, []);
      const boxProcesses = await findMarkedProcesses(t.home, spareId);

      const s = (await t.api('POST', '/browsers', { headless: true })).body;
      assert.equal(s.session_id, spareId, 'the session is the spare box');
      const now = await findMarkedProcesses(t.home, spareId);
      for (const pid of boxProcesses) assert.ok(now.includes(pid), `the box's process ${pid} runs on: the box was not started again`);
      const { browser, page } = await pageOf(s.cdp_ws_url);
      await page.goto(`${fixtures.url}/hello.html`);
      assert.equal(await page.title(), 'rbrowse fixture');
      await browser.close();

      await waitFor(async () => (await health())?.ready === 1, BACKGROUND_START_MS, 'the next spare box');
      assert.deepEqual(await health(), { ready: 1, wanted: 1, served: 1 });
      const ids = await markedIds(t.home);
      assert.equal(ids.length, 2, `the session and a new spare: ${ids}`);
      assert.ok(ids.includes(spareId));
      assert.equal((await t.api('DELETE', `/browsers/${s.session_id}`)).status, 204);
      await processesGone(t.home, spareId);
    } finally {
      await t.stop();
    }
    assert.deepEqual(await findMarkedProcesses(t.home), [], 'no spare box outlives the daemon');
  });
});

describe('the standby set (pure)', () => {
  test('parses 0, N and lists; refuses what it cannot keep', () => {
    const vp = { width: 1920, height: 1080, refresh_rate: 25 };
    const none = { entries: [], learn: 0 };
    assert.deepEqual(parseStandby('0'), none);
    assert.deepEqual(parseStandby(''), none);
    assert.deepEqual(parseStandby(undefined), {
      entries: [
        { headless: true, viewport: vp, count: 1 },
        { headless: false, viewport: vp, count: 1 },
      ],
      learn: 2,
    });
    assert.deepEqual(parseStandby('2'), {
      entries: [
        { headless: true, viewport: vp, count: 2 },
        { headless: false, viewport: vp, count: 2 },
      ],
      learn: 2,
    });
    assert.deepEqual(parseStandby('headless=3, headful@1024x768'), {
      entries: [
        { headless: true, viewport: vp, count: 3 },
        { headless: false, viewport: { width: 1024, height: 768, refresh_rate: 60 }, count: 1 },
      ],
      learn: 0,
    });
    assert.deepEqual(parseStandby('learn=1'), { entries: [], learn: 1 });
    assert.deepEqual(parseStandby('headless=0'), none);
    assert.throws(() => parseStandby('headles=1'), /not headless\|headful/);
    assert.throws(() => parseStandby('headless@1024x768@25'), /not a supported viewport/);
    assert.throws(() => parseStandby('headless=21'), /at most 20/);
    assert.throws(() => parseStandby('learn=5'), /learn at most 4/);
    assert.throws(() => parseStandby('learn=x'), /learn=K/);
  });

  test('RBROWSE_SPARE_BOXES: 1 unless set; 0 turns them off; whole numbers only', () => {
    assert.equal(spareBoxCount({}), 1);
    assert.equal(spareBoxCount({ RBROWSE_SPARE_BOXES: '0' }), 0);
    assert.equal(spareBoxCount({ RBROWSE_SPARE_BOXES: '2' }), 2);
    assert.throws(() => spareBoxCount({ RBROWSE_SPARE_BOXES: '-1' }), /whole number/);
  });

  test('RBROWSE_STANDBY_FORGET_SECONDS: 5 minutes unless set; whole seconds, at least 1', () => {
    assert.equal(forgetAfterMs({}), 300_000);
    assert.equal(forgetAfterMs({ RBROWSE_STANDBY_FORGET_SECONDS: '3' }), 3000);
    assert.throws(() => forgetAfterMs({ RBROWSE_STANDBY_FORGET_SECONDS: '0' }), /at least 1/);
    assert.throws(() => forgetAfterMs({ RBROWSE_STANDBY_FORGET_SECONDS: '1.5' }), /whole number/);
  });
});
