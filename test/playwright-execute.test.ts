import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Kernel from '@onkernel/sdk';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';

let d: TestDaemon;
let kernel: Kernel;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
let id: string;
before(async () => {
  d = await startTestDaemon();
  fixtures = await startFixtureServer();
  kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0, timeout: 120_000 });
  id = (await kernel.browsers.create({ headless: true })).session_id;
});
after(async () => {
  await fixtures?.close();
  await d?.stop();
});

describe('Playwright execution', () => {
  test("the code drives the session's page and returns a value; console output comes back; TypeScript is fine", async () => {
    const r = await kernel.browsers.playwright.execute(id, {
      code: `const url: string = ${JSON.stringify(`${fixtures.url}/hello.html`)};
        await page.goto(url);
        console.log('visited', url);
        console.error('to stderr');
        return { title: await page.title(), pages: context.pages().length, connected: browser.isConnected() };`,
    });
    assert.equal(r.success, true, r.error);
    assert.deepEqual(r.result, { title: await titleOfHello(), pages: 1, connected: true });
    assert.equal(r.stdout, `visited ${fixtures.url}/hello.html\n`);
    assert.equal(r.stderr, 'to stderr\n');
    // The page it left is the session's: the next run, and any client, sees it.
    const again = await kernel.browsers.playwright.execute(id, { code: 'return page.url();' });
    assert.equal(again.result, `${fixtures.url}/hello.html`);
  });

  test('a throw is success: false with the message, and the stack in stderr; code that does not compile says so', async () => {
    const r = await kernel.browsers.playwright.execute(id, { code: "throw new Error('boom here');" });
    assert.equal(r.success, false);
    assert.equal(r.error, 'boom here');
    assert.match(r.stderr ?? '', /Error: boom here\n\s+at /);
    const bad = await kernel.browsers.playwright.execute(id, { code: 'return (;' });
    assert.equal(bad.success, false);
    assert.match(bad.error ?? '', /does not compile/);
  });

  test('an endless loop is stopped at timeout_sec, a crash is an answer, and neither touches the daemon or the session', async () => {
    const started = Date.now();
    const looping = kernel.browsers.playwright.execute(id, { code: 'while (true) {}', timeout_sec: 3 });
    // Meanwhile the daemon answers at once.
    const t0 = Date.now();
    assert.equal((await d.api('GET', '/health')).status, 200);
    assert.ok(Date.now() - t0 < 1000);
    const r = await looping;
    assert.equal(r.success, false);
    assert.match(r.error ?? '', /timeout_sec \(3 s\)/);
    assert.ok(Date.now() - started < 30_000);

    const crash = await kernel.browsers.playwright.execute(id, { code: 'process.exit(3);' });
    assert.equal(crash.success, false);
    assert.match(crash.error ?? '', /ended without an answer \(exit code 3\)/);

    const closing = await kernel.browsers.playwright.execute(id, { code: 'await browser.close(); return 1;' });
    assert.equal(closing.success, true, closing.error);
    const after = await kernel.browsers.playwright.execute(id, { code: 'return 40 + 2;' });
    assert.deepEqual([after.success, after.result], [true, 42], 'the session survived browser.close()');
  });

  test("it runs inside the session's namespace, as the session's user", async () => {
    const r = await kernel.browsers.playwright.execute(id, {
      code: "const fs = await import('node:fs'); return { home: fs.readdirSync('/home'), uid: process.getuid() };",
    });
    assert.equal(r.success, true, r.error);
    const result = r.result as { home: string[]; uid: number };
    assert.deepEqual(result.home, ['kernel']);
    if (process.getuid?.() === 0) assert.notEqual(result.uid, 0);
  });

  test('bad bodies are 400s; an unknown session is a 404', async () => {
    for (const body of [{}, { code: '' }, { code: 'return 1', timeout_sec: 0 }, { code: 1 }]) {
      const res = await d.api('POST', `/browsers/${id}/playwright/execute`, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    }
    assert.equal((await d.api('POST', '/browsers/nope/playwright/execute', { code: 'return 1' })).status, 404);
  });

  test('CLI: rbrowse playwright runs code from the argument or stdin', async () => {
    const r = await d.cli(['playwright', id, 'return 6 * 7;']);
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.stdout, '42');
    const failed = await d.cli(['playwright', id, "throw new Error('nope')"]);
    assert.equal(failed.exitCode, 1);
    assert.match(failed.stderr, /nope/);
  });
});

async function titleOfHello(): Promise<string> {
  const html = await (await fetch(`${fixtures.url}/hello.html`)).text();
  return /<title>([^<]*)<\/title>/.exec(html)?.[1] ?? '';
}
