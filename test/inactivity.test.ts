import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright';
import { processesGone, sleep, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

let d: TestDaemon;
before(async () => {
  d = await startTestDaemon();
});
after(async () => {
  await d?.stop();
});

const isDeleted = async (id: string) => Boolean((await d.api('GET', `/browsers/${id}?include_deleted=true`)).body.deleted_at);

// Both cases run side by side: the spec's 10 s minimum and 5 s check period make each take ~20 s.
test('inactivity ends an idle session; an open CDP connection holds it until it leaves', async () => {
  const idle = (await d.api('POST', '/browsers', { headless: true, timeout_seconds: 10 })).body;
  const idleCreatedAt = Date.now();
  const held = (await d.api('POST', '/browsers', { timeout_seconds: 10 })).body; // headful
  const createdAt = Date.now();
  const browser = await chromium.connectOverCDP(held.cdp_ws_url);
  try {
    await waitFor(() => isDeleted(idle.session_id), 30_000, 'the idle session to time out');
    const idleFor = (Date.now() - idleCreatedAt) / 1000;
    assert.ok(idleFor >= 9, `ended after ${idleFor}s, not before its 10 s timeout`);
    assert.ok(idleFor <= 25, `ended after ${idleFor}s, within timeout + check period (+ slack for a loaded machine)`);
    // Its processes stop in the background, right after it reads as deleted.
    await processesGone(d.home, idle.session_id);

    // Well past its timeout, the connected session lives, and is usable.
    await sleep(Math.max(0, createdAt + 22_000 - Date.now()));
    assert.equal(await isDeleted(held.session_id), false, 'a connected session does not time out');
    const page = browser.contexts()[0]!.pages()[0]!;
    assert.equal(await page.evaluate(() => 6 * 7), 42);
  } finally {
    await browser.close();
  }
  const leftAt = Date.now();
  await waitFor(() => isDeleted(held.session_id), 30_000, 'the session to time out after its client left');
  const after = (Date.now() - leftAt) / 1000;
  assert.ok(after >= 9 && after <= 25, `ended ${after}s after the last client left`);
  await processesGone(d.home, held.session_id);
});
