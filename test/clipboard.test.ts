import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type Kernel from '@onkernel/sdk';
import { chromium, type Page } from 'playwright';
import WebSocket from 'ws';
import { startSdkDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

let d: TestDaemon;
let kernel: Kernel;
before(async () => ({ d, kernel } = await startSdkDaemon()));
after(async () => d?.stop());

const TEXT = 'héllo ✓ clipboard\nsecond line';

/**
 * Focuses an element as a person would, with a click through the computer API (a headful
 * session's keys go to the X window's focus, which Playwright's focus() does not move); repeated
 * until it holds, since a document that has not painted yet drops input.
 */
async function focusByClick(id: string, page: Page, selector: string): Promise<void> {
  const box = (await page.locator(selector).boundingBox())!;
  await waitFor(
    async () => {
      await kernel.browsers.computer.clickMouse(id, { x: Math.round(box.x + box.width / 2), y: Math.round(box.y + box.height / 2) });
      return page.evaluate(`document.activeElement?.id === ${JSON.stringify(selector.slice(1))}`);
    },
    10_000,
    `${selector} to take the focus`,
  );
}

describe('clipboard', () => {
  for (const headless of [true, false]) {
    test(`written through the API, ctrl+v pastes it; what a page copies, the API reads (${headless ? 'headless' : 'headful'})`, async () => {
      // kiosk_mode: the page fills the screen, so page coordinates are screen coordinates.
      const session = await kernel.browsers.create({ headless, kiosk_mode: true, viewport: { width: 1024, height: 768 } });
      const id = session.session_id;
      const browser = await chromium.connectOverCDP(session.cdp_ws_url);
      try {
        const page = browser.contexts()[0]!.pages()[0]!;
        await page.setContent('<textarea id="t" style="width:600px;height:200px"></textarea><input id="src" value="copied from the page">');
        const pagesBefore = browser.contexts().flatMap((c) => c.pages()).length;

        await kernel.browsers.computer.writeClipboard(id, { text: TEXT });
        await focusByClick(id, page, '#t');
        await kernel.browsers.computer.pressKey(id, { keys: ['ctrl+v'] });
        await page.waitForFunction(`document.getElementById('t').value.length > 0`, null, { timeout: 10_000 });
        assert.equal(await page.inputValue('#t'), TEXT);

        await focusByClick(id, page, '#src');
        await page.evaluate(`document.getElementById('src').select()`);
        await kernel.browsers.computer.pressKey(id, { keys: ['ctrl+c'] });
        assert.deepEqual(await kernel.browsers.computer.readClipboard(id), { text: 'copied from the page' });

        // The daemon's helper page came and went unseen by the client.
        assert.equal(browser.contexts().flatMap((c) => c.pages()).length, pagesBefore);

        const set = await d.cli(['computer', 'clipboard', 'set', id, 'from the cli']);
        assert.equal(set.exitCode, 0, set.stderr);
        const get = await d.cli(['computer', 'clipboard', 'get', id]);
        assert.equal(get.stdout, 'from the cli');

        // Clipboard calls between playwright.execute calls on the same session answer each time.
        for (const n of [1, 2]) {
          const ran = await kernel.browsers.playwright.execute(id, {
            code: `await page.setContent('<input id=i>'); await page.click('#i'); await page.keyboard.type('x${n}'); return page.inputValue('#i');`,
          });
          assert.equal(ran.result, `x${n}`);
          await kernel.browsers.computer.writeClipboard(id, { text: `round ${n}` });
          assert.deepEqual(await kernel.browsers.computer.readClipboard(id), { text: `round ${n}` });
        }

        // A client that auto-attached (pausing new targets for itself) and then only ended its side
        // of the connection, as a process that exits does: the daemon's clipboard page is not held.
        const halfClosed = new WebSocket(session.cdp_ws_url);
        await new Promise((resolve) => halfClosed.once('open', resolve));
        halfClosed.send(
          JSON.stringify({ id: 1, method: 'Target.setAutoAttach', params: { autoAttach: true, waitForDebuggerOnStart: true, flatten: true } }),
        );
        await new Promise((resolve) => halfClosed.once('message', resolve));
        (halfClosed as unknown as { _socket: import('node:net').Socket })._socket.end();
        await kernel.browsers.computer.writeClipboard(id, { text: 'after a half-close' });
        assert.deepEqual(await kernel.browsers.computer.readClipboard(id), { text: 'after a half-close' });
      } finally {
        await browser.close();
        await kernel.browsers.deleteByID(id);
      }
    });
  }

  test('bad bodies are 400s; another org gets 404', async () => {
    const { session_id: id } = await kernel.browsers.create({ headless: true });
    assert.equal((await d.api('POST', `/browsers/${id}/computer/clipboard/write`, {})).status, 400);
    assert.equal((await d.api('POST', `/browsers/${id}/computer/clipboard/write`, { text: 1 })).status, 400);
    const key = (await d.cli(['auth', 'create-key', '--org', 'clip-other'])).stdout.trim();
    assert.equal((await d.api('POST', `/browsers/${id}/computer/clipboard/read`, undefined, key)).status, 404);
    await kernel.browsers.deleteByID(id);
  });
});
