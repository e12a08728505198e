import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type Kernel from '@onkernel/sdk';
import { chromium, type Page } from 'playwright';
import { startSdkDaemon, type TestDaemon } from './helpers/daemon.js';
import { startFixtureProxy, TEST_HOST, type FixtureProxy } from './helpers/forward-proxy.js';

let d: TestDaemon;
let kernel: Kernel;
let managed: FixtureProxy; // the daemon's default stealth proxy, with credentials
let own: FixtureProxy; // a session's own proxy
before(async () => {
  managed = await startFixtureProxy({ label: 'managed', username: 'isp', password: 'p@ss:word' });
  own = await startFixtureProxy({ label: 'own' });
  ({ d, kernel } = await startSdkDaemon({
    env: { RBROWSE_STEALTH_PROXY: `http://isp:${encodeURIComponent('p@ss:word')}@127.0.0.1:${managed.port}` },
  }));
});
after(async () => {
  await d?.stop();
  await Promise.all([managed, own].map((p) => p?.close()));
});

/** Which proxy answered a page of TEST_HOST (a name only the fixture proxies know), or 'direct' when none did (an error page). */
async function route(page: Page): Promise<string> {
  const res = await page.goto(`http://${TEST_HOST}/?t=${Date.now()}`).catch(() => null);
  if (!res?.ok()) return 'direct';
  return (await page.$eval('#via', (e) => e.textContent ?? '').catch(() => null)) ?? 'direct';
}

async function withPage<T>(cdpUrl: string, use: (page: Page) => Promise<T>): Promise<T> {
  const browser = await chromium.connectOverCDP(cdpUrl);
  try {
    return await use(await browser.contexts()[0]!.newPage());
  } finally {
    await browser.close();
  }
}

describe('the default stealth proxy and disable_default_proxy', () => {
  test('a stealth session goes through the default proxy; PATCH disable_default_proxy switches it off and on, live', async () => {
    const b = await kernel.browsers.create({ stealth: true, headless: true, timeout_seconds: 120 });
    await withPage(b.cdp_ws_url, async (page) => {
      assert.equal(await route(page), 'managed');
      await kernel.browsers.update(b.session_id, { disable_default_proxy: true });
      assert.equal(await route(page), 'direct');
      await kernel.browsers.update(b.session_id, { disable_default_proxy: false });
      assert.equal(await route(page), 'managed');
    });
    await kernel.browsers.deleteByID(b.session_id);
  });

  test("a session's own proxy wins over the default; removing it falls back to the default; plain sessions never use it", async () => {
    const proxy = await kernel.proxies.create({ type: 'custom', config: { host: '127.0.0.1', port: own.port } });
    assert.ok(proxy.id);
    const b = await kernel.browsers.create({ stealth: true, headless: true, proxy_id: proxy.id!, timeout_seconds: 120 });
    const plain = await kernel.browsers.create({ headless: true, timeout_seconds: 120 });
    const off = await kernel.browsers.create({ stealth: true, headless: true, timeout_seconds: 120 });
    await kernel.browsers.update(off.session_id, { disable_default_proxy: true });
    await withPage(b.cdp_ws_url, async (page) => {
      assert.equal(await route(page), 'own');
      await kernel.browsers.update(b.session_id, { proxy_id: '' });
      assert.equal(await route(page), 'managed');
    });
    await withPage(plain.cdp_ws_url, async (page) => assert.equal(await route(page), 'direct'));
    await withPage(off.cdp_ws_url, async (page) => assert.equal(await route(page), 'direct'));
    for (const s of [b, plain, off]) await kernel.browsers.deleteByID(s.session_id);
    await kernel.proxies.delete(proxy.id!);
  });
});
