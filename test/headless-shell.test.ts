import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { chromium } from 'playwright';
import { sdkDaemonWithFixtures } from './helpers/fixtures.js';
import { join } from 'node:path';
import { zipOf } from './helpers/zip.js';
import { ROOT, sessionProcessesNamed, startTestDaemon, tornDown, waitFor, type TestDaemon } from './helpers/daemon.js';

/** /proc's command names (cut at 15 characters) of the two builds. */
const SHELL = 'chromium-headle';
const FULL = 'chromium';

/** Which build runs a session's browser, from its processes' command names. */
async function buildOf(d: TestDaemon, id: string): Promise<'shell' | 'full'> {
  return waitFor(
    async () => {
      const [shell, full] = await Promise.all([sessionProcessesNamed(d.home, id, SHELL), sessionProcessesNamed(d.home, id, FULL)]);
      if (shell.length && !full.length) return 'shell';
      if (full.length && !shell.length) return 'full';
      return undefined;
    },
    10_000,
    `the browser of ${id}`,
  ) as Promise<'shell' | 'full'>;
}

describe('RBROWSE_HEADLESS_SHELL=on: headless sessions on the headless shell', { timeout: 300_000 }, () => {
  const env = sdkDaemonWithFixtures({ env: { RBROWSE_HEADLESS_SHELL: 'on' } });

  test('a headless session runs the shell; headful, stealth and Chrome policies run full Chromium', async () => {
    const { kernel, d } = env;
    const cases: [object, 'shell' | 'full'][] = [
      [{ headless: true }, 'shell'],
      [{ headless: false }, 'full'],
      // Its identity is probed from full Chromium, and the shell reads few policies.
      [{ headless: true, stealth: true }, 'full'],
      [{ headless: true, chrome_policy: { DefaultCookiesSetting: 1 } }, 'full'],
    ];
    for (const [body, expected] of cases) {
      const s = await kernel.browsers.create(body);
      try {
        assert.equal(await buildOf(d, s.session_id), expected, JSON.stringify(body));
      } finally {
        await kernel.browsers.deleteByID(s.session_id);
      }
    }
  });

  test('a profile saved by the shell loads in full Chromium, and the other way round', async () => {
    const { kernel, d, fixtures } = env;
    const profile = await kernel.profiles.create({ name: 'between-builds' });
    const visit = async (headless: boolean, write: string) => {
      const s = await kernel.browsers.create({ headless, profile: { id: profile.id, save_changes: true } });
      try {
        assert.equal(await buildOf(d, s.session_id), headless ? 'shell' : 'full');
        const browser = await chromium.connectOverCDP(s.cdp_ws_url);
        try {
          const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
          await page.goto(`${fixtures.url}/hello.html`);
          const seen = await page.evaluate(`(document.cookie.match(/(?:^|; )between=([^;]*)/) || [])[1] ?? null`);
          await page.evaluate(`document.cookie = 'between=${write}; max-age=86400; path=/'`);
          return seen;
        } finally {
          await browser.close();
        }
      } finally {
        await kernel.browsers.deleteByID(s.session_id);
        await tornDown(d, s.session_id);
      }
    };
    assert.equal(await visit(true, 'from-shell'), null);
    assert.equal(await visit(false, 'from-full'), 'from-shell');
    assert.equal(await visit(true, 'again'), 'from-full');
  });

  test('extensions loaded into a running session move it to full Chromium, which runs them', async () => {
    const { kernel, d, fixtures } = env;
    const s = await kernel.browsers.create({ headless: true });
    try {
      assert.equal(await buildOf(d, s.session_id), 'shell');
      const zip = new File([new Uint8Array(await zipOf({ dir: join(ROOT, 'fixtures', 'extensions', 'content-mark') }))], 'content-mark.zip');
      await kernel.browsers.loadExtensions(s.session_id, { extensions: [{ name: 'content-mark', zip_file: zip }] });
      assert.equal(await buildOf(d, s.session_id), 'full');
      const browser = await chromium.connectOverCDP(s.cdp_ws_url);
      try {
        const page = await browser.contexts()[0]!.newPage();
        await page.goto(`${fixtures.url}/hello.html`);
        await page.waitForFunction(() => document.documentElement.dataset.rbrowseExt === 'content-mark');
      } finally {
        await browser.close();
      }
    } finally {
      await kernel.browsers.deleteByID(s.session_id);
    }
  });

  test('browser curl and the clipboard, which need a page hidden from clients, are a 409 that says why', async () => {
    const { d, fixtures } = env;
    const s = await d.api('POST', '/browsers', { headless: true });
    try {
      const curl = await d.api('POST', `/browsers/${s.body.session_id}/curl`, { url: `${fixtures.url}/hello.html` });
      assert.equal(curl.status, 409, curl.text);
      assert.match(curl.body.message, /browser curl needs full Chromium: this session runs on the headless shell/);
      const clip = await d.api('POST', `/browsers/${s.body.session_id}/computer/clipboard/read`, {});
      assert.equal(clip.status, 409, clip.text);
      assert.match(clip.body.message, /the clipboard needs full Chromium/);
    } finally {
      await d.api('DELETE', `/browsers/${s.body.session_id}`);
    }
  });

  test('doctor says which build headless sessions run, and fails when the one asked for is not there', async () => {
    const { d } = env;
    const headless = async (value?: string) => {
      const r = await d.cli(['doctor', '--json'], { env: value === undefined ? {} : { RBROWSE_HEADLESS_SHELL: value } });
      return { exit: r.exitCode, check: JSON.parse(r.stdout).find((c: { name: string }) => c.name === 'headless') };
    };
    const on = await headless();
    assert.equal(on.check.state, 'ok');
    assert.match(on.check.detail, /headless sessions run \/usr\/lib\/chromium\/chromium-headless-shell \(RBROWSE_HEADLESS_SHELL\)/);
    assert.match((await headless('off')).check.detail, /headless sessions run full Chromium/);
    const missing = await headless('/nonexistent/shell');
    assert.equal(missing.exit, 1);
    assert.equal(missing.check.state, 'missing');
    assert.match(missing.check.detail, /the daemon will not start/);
  });

  test('a shell asked for but not there stops the daemon at start, saying so', async () => {
    await assert.rejects(
      startTestDaemon({ env: { RBROWSE_HEADLESS_SHELL: '/nonexistent/shell' } }),
      /RBROWSE_HEADLESS_SHELL=\/nonexistent\/shell: the headless shell is not there/,
    );
  });

  test('without it (the default) headless sessions run full Chromium, and curl works', async () => {
    const off = await startTestDaemon();
    const fixtures = env.fixtures;
    try {
      const s = await off.api('POST', '/browsers', { headless: true });
      assert.equal(s.status, 200, s.text);
      assert.equal(await buildOf(off, s.body.session_id), 'full');
      const curl = await off.api('POST', `/browsers/${s.body.session_id}/curl`, { url: `${fixtures.url}/hello.html` });
      assert.equal(curl.status, 200, curl.text);
      assert.equal((await off.api('DELETE', `/browsers/${s.body.session_id}`)).status, 204);
    } finally {
      await off.stop();
    }
  });
});
