import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Kernel from '@onkernel/sdk';
import { startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';
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

describe('Playwright executors', () => {
  test('a named executor owns a background tab; calls on one run one at a time, on others at once; list, the limit of 8 (409), delete', async () => {
    const sid = (await kernel.browsers.create({ headless: true, timeout_seconds: 300 })).session_id;
    const exec = async (body: { code: string; executor?: string; timeout_sec?: number }) => {
      const res = await d.api('POST', `/browsers/${sid}/playwright/execute`, body);
      assert.equal(res.status, 200, res.text);
      return res.body;
    };
    const hello = `${fixtures.url}/hello.html`;
    const events = `${fixtures.url}/events.html`;
    try {
      const active = await exec({ code: `await page.goto(${JSON.stringify(hello)}); return page.url();` });
      assert.equal(active.success, true, active.error);
      assert.equal(active.tab.created, false, 'the default executor drives the active tab');
      const first = await exec({ executor: 'x', code: `await page.goto(${JSON.stringify(events)}); return page.url();` });
      assert.equal(first.success, true, first.error);
      assert.equal(first.result, events);
      assert.equal(first.tab.created, true, 'its first call opens its tab');
      assert.notEqual(first.tab.target_id, active.tab.target_id);
      const again = await exec({ executor: 'x', code: 'return page.url();' });
      assert.deepEqual([again.result, again.tab], [events, { created: false, target_id: first.tab.target_id }], 'later calls get the same tab');
      assert.equal((await exec({ code: 'return page.url();' })).result, hello, 'the active tab was left alone');

      // One at a time on an executor, at once across executors: x's first call and y's each wait
      // for the other's mark in the session's /tmp, which only calls running at once both see.
      const handshake = (mine: string, theirs: string) => `
        const { existsSync, writeFileSync } = await import('node:fs');
        const start = Date.now();
        writeFileSync('/tmp/${mine}', '');
        while (!existsSync('/tmp/${theirs}') && Date.now() - start < 30_000) await new Promise((r) => setTimeout(r, 50));
        return [start, Date.now(), existsSync('/tmp/${theirs}')];`;
      const span = 'const start = Date.now(); await new Promise((r) => setTimeout(r, 500)); return [start, Date.now(), true];';
      const [x1, x2, y] = await Promise.all([
        exec({ executor: 'x', code: handshake('x1', 'y') }),
        exec({ executor: 'x', code: span }),
        exec({ executor: 'y', code: handshake('y', 'x1') }),
      ]);
      type Span = [number, number, boolean];
      const [[s1, e1, sawY], [s2, e2], [, , sawX]] = [x1.result, x2.result, y.result] as [Span, Span, Span];
      assert.ok(s2 >= e1 || s1 >= e2, `calls on x overlapped: ${JSON.stringify([x1.result, x2.result])}`);
      assert.deepEqual([sawY, sawX], [true, true], `x and y ran at once: ${JSON.stringify([x1.result, y.result])}`);

      const listed = (await d.api('GET', `/browsers/${sid}/playwright/executors`)).body.executors;
      assert.deepEqual(
        listed.map((e: { name: string }) => e.name),
        ['default', 'x', 'y'],
      );
      const x = listed.find((e: { name: string }) => e.name === 'x');
      assert.deepEqual([x.busy, x.target_id, x.url], [false, first.tab.target_id, events]);
      assert.equal(listed[0].target_id, undefined, 'the default executor owns no tab');

      // Eight named at most; the ninth is a 409 that lists them.
      const more = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'];
      for (const r of await Promise.all(more.map((executor) => exec({ executor, code: 'return 1;' })))) assert.equal(r.success, true, r.error);
      const ninth = await d.api('POST', `/browsers/${sid}/playwright/execute`, { executor: 'n7', code: 'return 1;' });
      assert.equal(ninth.status, 409, ninth.text);
      assert.equal(ninth.body.executors.length, 9);

      // Deleting fails the call running on it and closes its tab; the default one is restarted, not removed.
      const long = exec({ executor: 'x', code: 'await new Promise((r) => setTimeout(r, 60_000));', timeout_sec: 120 });
      const busy = async (name: string) =>
        (await d.api('GET', `/browsers/${sid}/playwright/executors`)).body.executors.find((e: { name: string }) => e.name === name)?.busy;
      await waitFor(() => busy('x'), 30_000, 'x to run');
      assert.equal((await d.api('DELETE', `/browsers/${sid}/playwright/executors/x`)).status, 204);
      const cut = await long;
      assert.deepEqual([cut.success, cut.error], [false, 'the executor x was deleted']);
      const after = (await d.api('GET', `/browsers/${sid}/playwright/executors`)).body.executors;
      assert.equal(after.length, 8);
      const pages = await exec({ code: 'return context.pages().map((p) => p.url());' });
      assert.ok(!pages.result.includes(events), `x's tab was closed: ${pages.result}`);
      const longDefault = exec({ code: 'await new Promise((r) => setTimeout(r, 60_000));', timeout_sec: 120 });
      await waitFor(() => busy('default'), 30_000, 'default to run');
      assert.equal((await d.api('DELETE', `/browsers/${sid}/playwright/executors/default`)).status, 204);
      assert.equal((await longDefault).error, 'the executor default was restarted');
      assert.equal((await exec({ code: 'return 2;' })).result, 2, 'the default executor runs on');
      assert.equal((await d.api('DELETE', `/browsers/${sid}/playwright/executors/nope`)).status, 404);
      // The CLI lists them.
      const cli = await d.cli(['executors', 'ls', sid, '-q']);
      assert.equal(cli.exitCode, 0, cli.stderr);
      assert.deepEqual(cli.stdout.trim().split('\n'), ['default', 'y', ...more]);
    } finally {
      await kernel.browsers.deleteByID(sid);
    }
  });
});
