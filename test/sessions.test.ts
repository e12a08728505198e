import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import Kernel from '@onkernel/sdk';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright';
import puppeteer from 'puppeteer-core';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { sansUsage, startTestDaemon, tornDown, upgradeStatus, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

let d: TestDaemon;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;

before(async () => {
  // With the default standby set, so default creates here are served by standby browsers.
  d = await startTestDaemon({ env: { RBROWSE_STANDBY: 'headless=1,headful=1' } });
  fixtures = await startFixtureServer();
});
after(async () => {
  await fixtures?.close();
  await d?.stop();
});

async function create(body: object = { headless: true }) {
  const res = await d.api('POST', '/browsers', body);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

describe('sessions', () => {
  test('a headless session has every field of the spec, with defaults', async () => {
    const s = await create({ headless: true });
    assert.match(s.session_id, /^[a-z0-9]{24}$/);
    assert.match(s.created_at, ISO);
    assert.equal(s.headless, true);
    assert.equal(s.stealth, false);
    assert.equal(s.kiosk_mode, false);
    assert.equal(s.timeout_seconds, 60);
    assert.deepEqual(s.viewport, { width: 1920, height: 1080, refresh_rate: 25 });
    const url = new URL(s.cdp_ws_url);
    assert.equal(url.protocol, 'ws:');
    assert.equal(url.host, new URL(d.baseUrl).host);
    assert.ok(url.searchParams.get('jwt'), 'cdp_ws_url carries a jwt');
    assert.equal(s.deleted_at, undefined);
    assert.equal(s.browser_live_view_url, undefined);
    const got = await d.api('GET', `/browsers/${s.session_id}`);
    assert.deepEqual(sansUsage(got.body), sansUsage(s));
    // Its own home and /tmp, inside its box.
    for (const path of ['/home/kernel/user-data', '/home/kernel/Downloads', '/home/kernel/.config', '/home/kernel/.cache', '/tmp']) {
      const info = await d.api('GET', `/browsers/${s.session_id}/fs/file_info?path=${encodeURIComponent(path)}`);
      assert.equal(info.body?.is_dir, true, path);
    }
    assert.ok((await findMarkedProcesses(d.home, s.session_id)).length > 0, 'its own Chromium runs');
    assert.equal((await d.api('DELETE', `/browsers/${s.session_id}`)).status, 204);
    // Both go in the background, right after the answer.
    await tornDown(d, s.session_id); // its directories are deleted with it
    assert.deepEqual(await findMarkedProcesses(d.home, s.session_id), [], 'and its processes');
  });

  test('a headful session runs on its own display sized to the viewport', async () => {
    const s = await create({ viewport: { width: 1024, height: 768 }, name: 'headful-one', tags: { team: 'a' } });
    assert.equal(s.headless, false);
    assert.deepEqual(s.viewport, { width: 1024, height: 768, refresh_rate: 60 });
    assert.equal(s.name, 'headful-one');
    assert.deepEqual(s.tags, { team: 'a' });
    const browser = await chromium.connectOverCDP(s.cdp_ws_url);
    try {
      const page = browser.contexts()[0]!.pages()[0]!;
      const seen = await page.evaluate(() => [screen.width, screen.height, navigator.userAgent]);
      assert.equal(seen[0], 1024);
      assert.equal(seen[1], 768);
      assert.doesNotMatch(String(seen[2]), /HeadlessChrome/);
    } finally {
      await browser.close();
    }
    // Listed by its tags (every pair must match, as the SDKs send them: ?tags[team]=a), never by others.
    const other = await create({ headless: true, tags: { team: 'b' } });
    const kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    const listed = async (tags: Record<string, string>) => (await kernel.browsers.list({ tags })).getPaginatedItems().map((b) => b.session_id);
    assert.deepEqual(await listed({ team: 'a' }), [s.session_id]);
    assert.deepEqual(await listed({ team: 'b' }), [other.session_id]);
    assert.deepEqual(await listed({ team: 'a', env: 'x' }), []);
    assert.equal((await d.api('GET', '/browsers?tags=a')).status, 400, 'tags are key-value pairs');
    await d.api('DELETE', `/browsers/${other.session_id}`);
    // by name as well as by id
    assert.equal((await d.api('GET', '/browsers/headful-one')).body.session_id, s.session_id);
    assert.equal((await d.api('POST', '/browsers', { headless: true, name: 'headful-one' })).status, 409);
    assert.equal((await d.api('DELETE', '/browsers/headful-one')).status, 204);
  });

  test('Playwright connectOverCDP drives the session and loads a fixture page', async () => {
    const s = await create({ headless: true, viewport: { width: 1200, height: 800 } });
    const browser = await chromium.connectOverCDP(s.cdp_ws_url);
    const page = browser.contexts()[0]!.pages()[0]!;
    await page.goto(`${fixtures.url}/hello.html`);
    assert.equal(await page.title(), 'rbrowse fixture');
    await page.click('#btn');
    await page.click('#btn');
    assert.equal(await page.textContent('#clicks'), '2');
    assert.deepEqual(await page.evaluate(() => [screen.width, screen.height]), [1200, 800]);
    await browser.close();

    // browser.close() over CDP only disconnects: the session and its page live on.
    const again = await d.api('GET', `/browsers/${s.session_id}`);
    assert.equal(again.body.deleted_at, undefined);
    const browser2 = await chromium.connectOverCDP(s.cdp_ws_url.replace(/^ws:/, 'http:'));
    const urls = browser2
      .contexts()[0]!
      .pages()
      .map((p) => p.url());
    assert.ok(urls.includes(`${fixtures.url}/hello.html`), `page survived reconnect: ${urls}`);
    await browser2.close();
    await d.api('DELETE', `/browsers/${s.session_id}`);
  });

  test('Puppeteer connects, and its Browser.close ends only its own connection', async () => {
    const s = await create({ headless: true });
    const browser = await puppeteer.connect({ browserWSEndpoint: s.cdp_ws_url, defaultViewport: null });
    const page = (await browser.pages())[0] ?? (await browser.newPage());
    await page.goto(`${fixtures.url}/hello.html`);
    assert.equal(await page.title(), 'rbrowse fixture');
    await browser.close(); // sends CDP Browser.close
    const still = await d.api('GET', `/browsers/${s.session_id}`);
    assert.equal(still.body.deleted_at, undefined, 'session survives a client Browser.close');
    const pw = await chromium.connectOverCDP(s.cdp_ws_url);
    assert.equal(await pw.contexts()[0]!.pages()[0]!.title(), 'rbrowse fixture');
    await pw.close();
    await d.api('DELETE', `/browsers/${s.session_id}`);
  });

  test('/json/version answers in Chrome shape, pointing back at the gateway', async () => {
    const s = await create({ headless: true });
    const http = s.cdp_ws_url.replace(/^ws:/, 'http:').replace('/browser/cdp?', '/browser/cdp/json/version?');
    const res = await fetch(http);
    assert.equal(res.status, 200);
    const v = (await res.json()) as Record<string, string>;
    assert.match(v.Browser!, /^(Headless)?Chrome\//);
    assert.equal(v.webSocketDebuggerUrl, s.cdp_ws_url);
    assert.equal((await fetch(http.replace(/jwt=[^&]+/, 'jwt=nope'))).status, 401);
    await d.api('DELETE', `/browsers/${s.session_id}`);
  });

  test('a bad, missing, tampered or ended session jwt is refused before reaching Chromium', async () => {
    const a = await create({ headless: true });
    const b = await create({ headless: true });
    const base = a.cdp_ws_url.split('?')[0];
    const jwtA = new URL(a.cdp_ws_url).searchParams.get('jwt')!;
    const [h, p, sig] = jwtA.split('.');
    const payload = JSON.parse(Buffer.from(p!, 'base64url').toString());
    payload.session.id = b.session_id;
    payload.sub = b.session_id;
    const forged = `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${sig}`;

    assert.equal(await upgradeStatus(base), 401, 'missing jwt');
    assert.equal(await upgradeStatus(`${base}?jwt=garbage`), 401, 'garbage jwt');
    assert.equal(await upgradeStatus(`${base}?jwt=${forged}`), 401, "payload changed to another session's id");
    assert.equal(await upgradeStatus(`${base}?jwt=${jwtA.slice(0, -2)}xx`), 401, 'bad signature');
    assert.equal(await upgradeStatus(a.cdp_ws_url), 101, 'the real jwt opens');

    await d.api('DELETE', `/browsers/${a.session_id}`);
    assert.equal(await upgradeStatus(a.cdp_ws_url), 404, "an ended session's jwt");
    assert.equal(await upgradeStatus(b.cdp_ws_url), 101, 'the other session is untouched');
    assert.equal(await upgradeStatus(b.cdp_ws_url.replace('/browser/cdp', '/browser/nope')), 404);
    await d.api('DELETE', `/browsers/${b.session_id}`);
  });

  test('DELETE soft-deletes: include_deleted finds it, lists filter by status', async () => {
    const s = await create({ headless: true, name: 'to-delete' });
    const del = await d.api('DELETE', `/browsers/${s.session_id}`);
    assert.equal(del.status, 204);
    assert.equal(del.text, '');
    assert.equal((await d.api('GET', `/browsers/${s.session_id}`)).status, 404);
    const found = await d.api('GET', `/browsers/${s.session_id}?include_deleted=true`);
    assert.equal(found.status, 200);
    assert.match(found.body.deleted_at, ISO);
    assert.equal((await d.api('DELETE', `/browsers/${s.session_id}`)).status, 404, 'already deleted');
    const active = await d.api('GET', '/browsers');
    assert.ok(!active.body.some((x: any) => x.session_id === s.session_id));
    const deleted = await d.api('GET', '/browsers?status=deleted&limit=100');
    assert.ok(deleted.body.some((x: any) => x.session_id === s.session_id));
    // a deleted session's name is free again
    const again = await create({ headless: true, name: 'to-delete' });
    await d.api('DELETE', `/browsers/${again.session_id}`);
  });

  test('lists paginate with X-Has-More and X-Next-Offset', async () => {
    // An organization of its own, so sessions of other tests cannot change the counts.
    const key = (await d.cli(['auth', 'create-key', '--org', 'paging'])).stdout.trim();
    const mk = async () => (await d.api('POST', '/browsers', { headless: true }, key)).body;
    const made = [await mk(), await mk(), await mk()];
    const page1 = await d.api('GET', '/browsers?limit=2', undefined, key);
    assert.equal(page1.body.length, 2);
    assert.equal(page1.headers.get('x-has-more'), 'true');
    assert.equal(page1.headers.get('x-next-offset'), '2');
    const page2 = await d.api('GET', '/browsers?limit=2&offset=2', undefined, key);
    assert.equal(page2.headers.get('x-has-more'), 'false');
    assert.equal(page2.headers.get('x-next-offset'), '0');
    const ids = [...page1.body, ...page2.body].map((x: any) => x.session_id).sort();
    assert.deepEqual(ids, made.map((m) => m.session_id).sort());
    for (const m of made) assert.equal((await d.api('DELETE', `/browsers/${m.session_id}`, undefined, key)).status, 204);
  });

  test('PATCH: proxy_id "" removes, null leaves unchanged, an unknown proxy is 404', async () => {
    const s = await create();
    const empty = await d.api('PATCH', `/browsers/${s.session_id}`, { proxy_id: '' });
    assert.equal(empty.status, 200);
    assert.equal(empty.body.proxy_id, undefined);
    assert.equal((await d.api('PATCH', `/browsers/${s.session_id}`, { proxy_id: null })).status, 200);
    const unknown = await d.api('PATCH', `/browsers/${s.session_id}`, { proxy_id: 'zzzzzzzzzzzzzzzzzzzzzzzz' });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.code, 'not_found');
    const renamed = await d.api('PATCH', `/browsers/${s.session_id}`, { name: 'renamed' });
    assert.equal(renamed.body.name, 'renamed');
    assert.equal((await d.api('PATCH', '/browsers/nosuchsession', {})).status, 404);
    await d.api('DELETE', `/browsers/${s.session_id}`);
  });

  test("chrome_policy: the session's browser runs with its managed policies, which no other session and not the host sees; policies rbrowse manages are refused", async () => {
    const blocked = `${fixtures.url}/hello.html`;
    const chrome_policy = { URLBlocklist: [blocked.replace(/^http:\/\//, '')], BookmarkBarEnabled: true };
    const s = await create({ headless: true, chrome_policy });
    const plain = await create({ headless: true });
    try {
      assert.deepEqual(s.chrome_policy, chrome_policy);
      assert.equal((await d.api('GET', `/browsers/${s.session_id}`)).body.chrome_policy.URLBlocklist[0], chrome_policy.URLBlocklist[0]);
      assert.equal(plain.chrome_policy, undefined);
      const outcome = async (cdpUrl: string, url: string) => {
        const browser = await chromium.connectOverCDP(cdpUrl);
        try {
          const page = browser.contexts()[0]!.pages()[0]!;
          return await page.goto(url).then(
            () => 'loaded',
            (err: Error) => /ERR_BLOCKED_BY_ADMINISTRATOR/.exec(err.message)?.[0] ?? err.message,
          );
        } finally {
          await browser.close();
        }
      };
      assert.equal(await outcome(s.cdp_ws_url, blocked), 'ERR_BLOCKED_BY_ADMINISTRATOR');
      assert.equal(await outcome(s.cdp_ws_url, `${fixtures.url}/events.html`), 'loaded', 'only what the policy names is blocked');
      assert.equal(await outcome(plain.cdp_ws_url, blocked), 'loaded', 'another session has no such policy');
      assert.equal(existsSync('/etc/chromium/policies/managed/rbrowse.json'), false, "the host's Chromium has none");

      // A pool's browsers carry the pool's policies (set through the CLI here).
      const made = await d.cli(['pools', 'create', '--size', '1', '--headless', '--chrome-policy', JSON.stringify(chrome_policy), '--json']);
      assert.equal(made.exitCode, 0, made.stderr);
      const pool = JSON.parse(made.stdout);
      try {
        assert.deepEqual(pool.browser_pool_config.chrome_policy, chrome_policy);
        const leased = await d.api('POST', `/browser_pools/${pool.id}/acquire`, { acquire_timeout_seconds: 120 });
        assert.equal(leased.status, 200, leased.text);
        assert.deepEqual(leased.body.chrome_policy, chrome_policy);
        assert.equal(await outcome(leased.body.cdp_ws_url, blocked), 'ERR_BLOCKED_BY_ADMINISTRATOR');
      } finally {
        await d.api('DELETE', `/browser_pools/${pool.id}`, { force: true });
      }
    } finally {
      await d.api('DELETE', `/browsers/${s.session_id}`);
      await d.api('DELETE', `/browsers/${plain.session_id}`);
    }
    for (const managed of [{ ProxyMode: 'direct' }, { ExtensionInstallForcelist: [] }, { RemoteDebuggingAllowed: false }]) {
      const refused = await d.api('POST', '/browsers', { headless: true, chrome_policy: managed });
      assert.equal(refused.status, 400, refused.text);
      assert.match(refused.body.message, new RegExp(`chrome_policy: ${Object.keys(managed)[0]} is managed by rbrowse`));
    }
    const badName = await d.api('POST', '/browsers', { headless: true, chrome_policy: { 'not a policy': 1 } });
    assert.equal(badName.status, 400, badName.text);
    // The CLI takes it as JSON, and refuses what is not an object before sending anything.
    const cli = await d.cli(['create', '--headless', '--chrome-policy', '{"BookmarkBarEnabled": true}', '--json']);
    assert.equal(cli.exitCode, 0, cli.stderr);
    const made = JSON.parse(cli.stdout);
    assert.deepEqual(made.chrome_policy, { BookmarkBarEnabled: true });
    assert.equal((await d.api('DELETE', `/browsers/${made.session_id}`)).status, 204);
    const notJson = await d.cli(['create', '--headless', '--chrome-policy', '[1]']);
    assert.equal(notJson.exitCode, 2, notJson.stderr);
    assert.match(notJson.stderr, /expected a JSON object/);
  });

  test("another organization's sessions are invisible", async () => {
    const s = await create();
    const other = (await d.cli(['auth', 'create-key', '--org', 'other-org'])).stdout.trim();
    assert.match(other, /^sk_/);
    assert.equal((await d.api('GET', `/browsers/${s.session_id}`, undefined, other)).status, 404);
    assert.equal((await d.api('GET', `/browsers/${s.session_id}?include_deleted=true`, undefined, other)).status, 404);
    assert.equal((await d.api('PATCH', `/browsers/${s.session_id}`, {}, other)).status, 404);
    assert.equal((await d.api('DELETE', `/browsers/${s.session_id}`, undefined, other)).status, 404);
    assert.deepEqual((await d.api('GET', '/browsers?status=all', undefined, other)).body, []);
    assert.equal((await d.api('GET', `/browsers/${s.session_id}`)).body.deleted_at, undefined, 'untouched');
    await d.api('DELETE', `/browsers/${s.session_id}`);
  });
});
