import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Kernel from '@onkernel/sdk';
import { chromium, type Browser } from 'playwright';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';

let d: TestDaemon;
let kernel: Kernel;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
let id: string;
let browser: Browser;
before(async () => {
  d = await startTestDaemon();
  fixtures = await startFixtureServer();
  kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
  const session = await kernel.browsers.create({ headless: true });
  id = session.session_id;
  browser = await chromium.connectOverCDP(session.cdp_ws_url);
});
after(async () => {
  await browser?.close();
  await fixtures?.close();
  await d?.stop();
});

describe('browser curl', () => {
  test("the request is the browser's: its cookies, user agent and headers, with the asked method, headers and body", async () => {
    const page = browser.contexts()[0]!.pages()[0]!;
    await page.goto(`${fixtures.url}/hello.html`);
    await page.evaluate(`document.cookie = 'from_page=set-in-page; path=/'`);
    const pagesBefore = browser.contexts()[0]!.pages().length;

    const r = await kernel.browsers.curl(id, {
      url: `${fixtures.url}/echo-request`,
      method: 'POST',
      headers: { 'X-Test': 'yes', 'Content-Type': 'application/json' },
      body: '{"a":1}',
    });
    assert.equal(r.status, 200);
    const seen = JSON.parse(r.body) as { method: string; headers: Record<string, string>; body: string };
    assert.equal(seen.method, 'POST');
    assert.equal(seen.body, '{"a":1}');
    assert.equal(seen.headers['x-test'], 'yes');
    assert.equal(seen.headers['content-type'], 'application/json');
    assert.match(seen.headers.cookie ?? '', /from_page=set-in-page/);
    assert.equal(seen.headers['user-agent'], await page.evaluate('navigator.userAgent'));
    assert.deepEqual(r.headers['content-type'], ['application/json']);
    assert.ok(r.duration_ms >= 0);
    assert.equal(browser.contexts()[0]!.pages().length, pagesBefore, 'the helper page was never seen');
  });

  test("a response's Set-Cookie lands in the browser's jar; multi-valued headers; redirects followed; HEAD and base64", async () => {
    const r = await kernel.browsers.curl(id, { url: `${fixtures.url}/set-cookie` });
    assert.equal(r.body, 'cookie set');
    assert.deepEqual(r.headers['x-multi'], ['one', 'two']);
    const page = browser.contexts()[0]!.pages()[0]!;
    await page.goto(`${fixtures.url}/hello.html`);
    assert.match(String(await page.evaluate('document.cookie')), /from_response=set-by-curl/);

    const redirected = await kernel.browsers.curl(id, { url: `${fixtures.url}/redirect` });
    assert.equal(redirected.status, 200);
    assert.match(redirected.body, /<html/i);

    const empty = await kernel.browsers.curl(id, { url: `${fixtures.url}/no-content`, method: 'DELETE' });
    assert.deepEqual([empty.status, empty.body], [204, '']);
    const head = await kernel.browsers.curl(id, { url: `${fixtures.url}/hello.html`, method: 'HEAD' });
    assert.deepEqual([head.status, head.body], [200, '']);
    const b64 = await kernel.browsers.curl(id, { url: `${fixtures.url}/set-cookie`, response_encoding: 'base64' });
    assert.equal(Buffer.from(b64.body, 'base64').toString(), 'cookie set');
  });

  test('limits and failures are 4xx or 503 with a reason, never a hang', async () => {
    const call = (body: object) => d.api('POST', `/browsers/${id}/curl`, body);
    assert.equal((await call({ url: 'ftp://example.com/x' })).status, 400);
    assert.equal((await call({ url: 'not a url' })).status, 400);
    assert.equal((await call({ url: `${fixtures.url}/`, method: 'BREW' })).status, 400);
    const slow = await call({ url: `${fixtures.url}/slow`, timeout_ms: 1000 });
    assert.equal(slow.status, 503, slow.text);
    assert.match(slow.body.message, /timeout_ms/);
    const refused = await call({ url: 'http://127.0.0.1:9/' });
    assert.equal(refused.status, 503, refused.text);
    assert.match(refused.body.message, /ERR_/);
    const big = await call({ url: `${fixtures.url}/big` });
    assert.equal(big.status, 413, big.text);
    // The session still works afterwards.
    assert.equal((await kernel.browsers.curl(id, { url: `${fixtures.url}/hello.html` })).status, 200);
    const key = (await d.cli(['auth', 'create-key', '--org', 'curl-other'])).stdout.trim();
    assert.equal((await d.api('POST', `/browsers/${id}/curl`, { url: `${fixtures.url}/` }, key)).status, 404);
  });

  test('CLI: rbrowse curl prints the body; --json the object', async () => {
    const r = await d.cli(['curl', id, `${fixtures.url}/echo-request`, '-X', 'PUT', '-H', 'X-Cli: 1', '-d', 'payload']);
    assert.equal(r.exitCode, 0, r.stderr);
    const seen = JSON.parse(r.stdout);
    assert.deepEqual([seen.method, seen.body, seen.headers['x-cli']], ['PUT', 'payload', '1']);
    const j = JSON.parse((await d.cli(['curl', id, `${fixtures.url}/set-cookie`, '--json'])).stdout);
    assert.equal(j.status, 200);
  });

  test("browsers.fetch(): the raw form through base_url, as the SDK routes it; the target's status, headers and body pass through", async () => {
    const session = await kernel.browsers.retrieve(id);
    assert.equal(session.base_url, `${d.baseUrl}/browser/${id}`);
    const res = await kernel.browsers.fetch(id, `${fixtures.url}/echo-request`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'x-raw': 'yes' },
      body: 'raw body',
    });
    assert.equal(res.status, 200);
    const seen = (await res.json()) as { method: string; headers: Record<string, string>; body: string };
    assert.deepEqual([seen.method, seen.body, seen.headers['x-raw'], seen.headers['content-type']], ['POST', 'raw body', 'yes', 'text/plain']);
    assert.equal(seen.headers.authorization, undefined, 'the API key never reaches the target');
    // It goes out as the browser: its user agent, none of the SDK's own headers.
    assert.doesNotMatch(seen.headers['user-agent'] ?? '', /^Kernel\//);
    assert.match(seen.headers['user-agent'] ?? '', /Chrome\//);
    assert.deepEqual(
      Object.keys(seen.headers).filter((h) => h.startsWith('x-stainless-')),
      [],
    );

    // The target's own status passes through (the SDK turns a non-2xx one into an error).
    await assert.rejects(kernel.browsers.fetch(id, `${fixtures.url}/no-such-page`), (e: any) => e.status === 404);
    const jwt = new URL(session.cdp_ws_url).searchParams.get('jwt')!;
    const missing = await fetch(`${d.baseUrl}/browser/curl/raw?url=${encodeURIComponent(`${fixtures.url}/no-such-page`)}&jwt=${jwt}`);
    assert.deepEqual([missing.status, await missing.text()], [404, 'not found']);
    const got = await kernel.browsers.fetch(id, `${fixtures.url}/set-cookie`);
    assert.equal(got.headers.get('x-multi'), 'one, two');

    // The routed endpoints take the session's jwt, nothing else.
    const bad = await fetch(`${d.baseUrl}/browser/curl/raw?url=${encodeURIComponent(`${fixtures.url}/`)}&jwt=forged`);
    assert.equal(bad.status, 401);
    const badJson = await fetch(`${d.baseUrl}/browser/curl?jwt=forged`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${fixtures.url}/` }),
    });
    assert.equal(badJson.status, 401);
  });

  test('concurrent curls each get their own answer; the hidden pages that carry them are never listed to clients', async () => {
    const bodies = Array.from({ length: 10 }, (_, i) => `request ${i}`);
    const answers = await Promise.all(bodies.map((body) => kernel.browsers.curl(id, { url: `${fixtures.url}/echo-request`, method: 'POST', body })));
    answers.forEach((r, i) => {
      assert.equal(r.status, 200);
      assert.equal(JSON.parse(r.body).body, bodies[i]);
    });
    // The hidden pages that carried them are not the client's to see.
    assert.equal(browser.contexts()[0]!.pages().length, 1);
  });

  test('a curl right after a client left answers (a page its leaving auto-attach held is replaced)', async () => {
    // playwright.execute's process connects, auto-attaches and exits just before it answers.
    for (let i = 0; i < 3; i++) {
      assert.equal((await kernel.browsers.playwright.execute(id, { code: 'return 1;' })).success, true);
      const r = await d.api('POST', `/browsers/${id}/curl`, { url: `${fixtures.url}/hello.html`, timeout_ms: 10_000 });
      assert.equal(r.status, 200, r.text);
    }
  });
});
