import assert from 'node:assert/strict';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { BadRequestError, ConflictError } from '@onkernel/sdk';
import { chromium, type Browser } from 'playwright';
import { ROOT } from './helpers/daemon.js';
import { sdkDaemonWithFixtures } from './helpers/fixtures.js';
import { zipOf } from './helpers/zip.js';

const FIXTURES = join(ROOT, 'fixtures', 'extensions');

const env = sdkDaemonWithFixtures();

const zipFile = async (dir: string) =>
  new File([new Uint8Array(await zipOf({ dir: join(FIXTURES, dir) }))], `${dir}.zip`, { type: 'application/zip' });

/** The data-* marks the fixture extensions' content scripts set on a page of the session, and its cookies. */
async function inspect(cdpUrl: string): Promise<{ url: string; marks: Record<string, string>; cookie: string; width: number }> {
  const browser = await chromium.connectOverCDP(cdpUrl);
  try {
    const context = browser.contexts()[0]!;
    const url = context.pages()[0]?.url() ?? '';
    const page = await context.newPage();
    await page.goto(`${env.fixtures.url}/hello.html`);
    await page.waitForFunction(() => document.readyState === 'complete');
    const marks = await page.evaluate(() => ({ ...document.documentElement.dataset }) as Record<string, string>);
    const cookie = await page.evaluate(() => document.cookie);
    await page.close();
    const width = await context.pages()[0]!.evaluate(() => window.outerWidth);
    return { url, marks, cookie, width };
  } finally {
    await browser.close();
  }
}

async function setCookie(cdpUrl: string, path: string, value: string): Promise<void> {
  const browser = await chromium.connectOverCDP(cdpUrl);
  try {
    const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
    await page.goto(`${env.fixtures.url}${path}`);
    await page.evaluate((v) => void (document.cookie = `kept=${v}; max-age=3600`), value);
  } finally {
    await browser.close();
  }
}

describe('loadExtensions: extensions sent to a running session', () => {
  test('loaded by a restart in place: same session, jwts, files, cookies and page; an old CDP client is dropped', async () => {
    const b = await env.kernel.browsers.create({ headless: true, timeout_seconds: 120 });
    await env.kernel.browsers.update(b.session_id, { viewport: { width: 1024, height: 768 } });
    await setCookie(b.cdp_ws_url, '/hello.html', 'before-restart');
    await env.kernel.browsers.fs.writeFile(b.session_id, Buffer.from('still here'), { path: '/home/kernel/note.txt' });
    const connected: Browser = await chromium.connectOverCDP(b.cdp_ws_url);
    const dropped = new Promise<void>((resolve) => connected.once('disconnected', () => resolve()));
    try {
      assert.deepEqual((await inspect(b.cdp_ws_url)).marks, {});
      await env.kernel.browsers.loadExtensions(b.session_id, {
        extensions: [
          { name: 'content-mark', zip_file: await zipFile('content-mark') },
          { name: 'second', zip_file: await zipFile('second-mark') },
        ],
      });
      await dropped;
    } finally {
      await connected.close().catch(() => {});
    }
    const after = await env.kernel.browsers.retrieve(b.session_id);
    assert.equal(after.cdp_ws_url, b.cdp_ws_url, 'the same jwt opens the restarted browser');
    assert.equal(after.deleted_at, undefined);
    const seen = await inspect(b.cdp_ws_url);
    assert.equal(seen.marks.rbrowseExt, 'content-mark');
    assert.ok(seen.marks.rbrowseSecond, JSON.stringify(seen.marks));
    assert.equal(seen.cookie, 'kept=before-restart', 'the profile (its cookies) survives the restart');
    assert.equal(seen.url, `${env.fixtures.url}/hello.html`, 'the page it showed is opened again');
    assert.equal(seen.width, 1024, 'the browser comes back at the size it was given last');
    const note = await env.kernel.browsers.fs.readFile(b.session_id, { path: '/home/kernel/note.txt' });
    assert.equal(await note.text(), 'still here');
    await env.kernel.browsers.deleteByID(b.session_id);
  });

  test('a zip without a manifest, a missing name or no extension at all is a 400, and the browser is not restarted', async () => {
    const b = await env.kernel.browsers.create({ headless: true, timeout_seconds: 120 });
    const connected = await chromium.connectOverCDP(b.cdp_ws_url);
    try {
      const noManifest = new File([new Uint8Array(await zipOf([{ name: 'readme.txt', data: 'hi' }]))], 'x.zip');
      await assert.rejects(env.kernel.browsers.loadExtensions(b.session_id, { extensions: [{ name: 'x', zip_file: noManifest }] }), BadRequestError);
      await assert.rejects(
        env.kernel.browsers.loadExtensions(b.session_id, { extensions: [{ name: '../escape', zip_file: await zipFile('content-mark') }] }),
        BadRequestError,
      );
      await assert.rejects(env.kernel.browsers.loadExtensions(b.session_id, { extensions: [] }), BadRequestError);
      assert.equal(connected.isConnected(), true, 'a refused load leaves the running browser alone');
    } finally {
      await connected.close();
    }
    await env.kernel.browsers.deleteByID(b.session_id);
  });
});

describe('restarts in place, the harder cases', () => {
  test("a link the session's code left at /home/kernel/extensions cannot make the daemon write on the host", async () => {
    const b = await env.kernel.browsers.create({ headless: true, timeout_seconds: 120 });
    // A host directory the session cannot see (its namespace hides the daemon's home).
    const hostTarget = join(env.d.home, 'planted');
    mkdirSync(hostTarget);
    const r = await env.kernel.browsers.process.exec(b.session_id, { command: 'ln', args: ['-s', hostTarget, '/home/kernel/extensions'] });
    assert.equal(r.exit_code, 0);
    const form = new FormData();
    form.append('extensions[0][name]', 'mark');
    form.append('extensions[0][zip_file]', await zipFile('content-mark'));
    const load = await fetch(`${env.d.baseUrl}/browsers/${b.session_id}/extensions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.d.apiKey}` },
      body: form,
    });
    assert.ok(load.status < 500, `${load.status} ${await load.text()}`);
    assert.deepEqual(readdirSync(hostTarget), [], 'nothing was written on the host through the link');
    await env.kernel.browsers.deleteByID(b.session_id);
  });

  test('an extension Chromium will not load is a 400 after the restart, which is undone: the session runs on without it', async () => {
    const b = await env.kernel.browsers.create({ headless: true, timeout_seconds: 120 });
    // Its content script is missing: Chromium skips the extension without a word.
    const broken = await zipOf([
      {
        name: 'manifest.json',
        data: JSON.stringify({ manifest_version: 3, name: 'broken', version: '1', content_scripts: [{ matches: ['<all_urls>'], js: ['gone.js'] }] }),
      },
    ]);
    await assert.rejects(
      env.kernel.browsers.loadExtensions(b.session_id, { extensions: [{ name: 'broken', zip_file: new File([new Uint8Array(broken)], 'b.zip') }] }),
      (err: unknown) => err instanceof BadRequestError && /did not load extension "broken"/.test(err.message),
    );
    // A manifest_version 2 extension is refused before any restart.
    await assert.rejects(
      env.kernel.browsers.loadExtensions(b.session_id, { extensions: [{ name: 'legacy', zip_file: await zipFile('legacy-mv2') }] }),
      (err: unknown) => err instanceof BadRequestError && /manifest_version 2/.test(err.message),
    );
    const seen = await inspect(b.cdp_ws_url);
    assert.deepEqual(seen.marks, {});
    assert.equal((await env.kernel.browsers.retrieve(b.session_id)).deleted_at, undefined);
    await env.kernel.browsers.deleteByID(b.session_id);
  });

  test('a headful stealth session stays stealthy and keeps its display across the restart', async () => {
    const b = await env.kernel.browsers.create({ headless: false, stealth: true, timeout_seconds: 120 });
    const shot = async () => Buffer.from(await (await env.kernel.browsers.computer.captureScreenshot(b.session_id)).arrayBuffer());
    assert.ok((await shot()).length > 0);
    await env.kernel.browsers.loadExtensions(b.session_id, { extensions: [{ name: 'content-mark', zip_file: await zipFile('content-mark') }] });
    const browser = await chromium.connectOverCDP(b.cdp_ws_url);
    try {
      const page = await browser.contexts()[0]!.newPage();
      await page.goto(`${env.fixtures.url}/hello.html`);
      const probe = await page.evaluate(() => ({
        webdriver: navigator.webdriver,
        ua: navigator.userAgent,
        mark: document.documentElement.dataset.rbrowseExt,
      }));
      assert.equal(probe.webdriver, false);
      assert.doesNotMatch(probe.ua, /Headless/);
      assert.equal(probe.mark, 'content-mark');
    } finally {
      await browser.close();
    }
    assert.ok((await shot()).length > 0, 'the display is still there');
    await env.kernel.browsers.deleteByID(b.session_id);
  });
});

describe('PATCH /browsers/{id} with a profile', () => {
  test("a session without a profile gets one: the browser restarts with the profile's user data; a second is a 409", async () => {
    const profile = await env.kernel.profiles.create({ name: `patched-${Date.now()}` });
    const writer = await env.kernel.browsers.create({ headless: true, profile: { id: profile.id, save_changes: true } });
    await setCookie(writer.cdp_ws_url, '/hello.html', 'from-profile');
    await env.kernel.browsers.deleteByID(writer.session_id);

    const b = await env.kernel.browsers.create({ headless: true, timeout_seconds: 120 });
    assert.equal((await inspect(b.cdp_ws_url)).cookie, '');
    const updated = await env.kernel.browsers.update(b.session_id, { profile: { name: profile.name! } });
    assert.equal(updated.profile?.id, profile.id);
    assert.equal((await inspect(b.cdp_ws_url)).cookie, 'kept=from-profile');
    await assert.rejects(env.kernel.browsers.update(b.session_id, { profile: { id: profile.id } }), ConflictError);
    assert.equal((await env.kernel.browsers.retrieve(b.session_id)).profile?.id, profile.id);
    await env.kernel.browsers.deleteByID(b.session_id);
  });
});
