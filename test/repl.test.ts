// The browser REPL (POST /browsers/{id}/repl, Kernel's browsers.repl in its newest SDKs): a
// persistent Node runtime in the session's box, driven over HTTP, under the session's base_url,
// through the CLI, and watched from outside with Playwright.
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Browser, chromium } from 'playwright';
import { PNG } from 'pngjs';
import type { ReplResult } from '../src/api/repl.js';
import { startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

let d: TestDaemon;
let id: string;
let session: { base_url: string; cdp_ws_url: string };
let browser: Browser;

before(async () => {
  d = await startTestDaemon();
  const created = await d.api('POST', '/browsers', { headless: true, viewport: { width: 1024, height: 768 }, timeout_seconds: 600 });
  assert.equal(created.status, 200, created.text);
  id = created.body.session_id;
  session = created.body;
  browser = await chromium.connectOverCDP(session.cdp_ws_url);
});
after(async () => {
  await browser?.close().catch(() => {});
  await d?.stop();
});

const run = async (code: string, extra: object = {}): Promise<ReplResult> => {
  const r = await d.api('POST', `/browsers/${id}/repl`, { code, ...extra });
  assert.equal(r.status, 200, r.text);
  return r.body;
};
/** The text a call wrote, all channels, in order. */
const textOf = (r: ReplResult) => (r.content ?? []).map((c) => (c.type === 'text' ? c.text : `[${c.mime_type}]`)).join('');
const html = (body: string) => `data:text/html,${encodeURIComponent(body)}`;
/** The page as a client of the session's own sees it (not through the REPL). */
const observed = () =>
  browser
    .contexts()[0]!
    .pages()
    .find((p) => !p.url().startsWith('chrome:'))!;

describe('browser REPL', () => {
  test('bindings persist between calls; output comes back in order on its channels; expression values are not output', async () => {
    const first = await run(
      'const a = await Promise.resolve(40); let b = 2; function sum() { return a + b }\nrepl.write(sum()); console.log("log", { n: 1 }); console.error("err"); repl.write("end")',
    );
    assert.equal(first.success, true, first.error);
    assert.deepEqual(first.content, [
      { type: 'text', channel: 'write', text: '42' },
      { type: 'text', channel: 'stdout', text: 'log { n: 1 }\n' },
      { type: 'text', channel: 'stderr', text: 'err\n' },
      { type: 'text', channel: 'write', text: 'end' },
    ]);
    assert.match(first.repl_id, /^[a-z][a-z0-9]{23}$/);
    assert.equal(typeof first.duration_ms, 'number');
    const second = await run('b = 3; sum() * 10');
    assert.deepEqual(second.content, [], 'the value of the last expression is not output');
    const third = await run('repl.write(sum()); process.stdout.write("raw")');
    assert.equal(textOf(third), '43raw', 'bindings (and the change to b) stayed; writes to the stream count as stdout');
    assert.equal(third.repl_id, first.repl_id);
  });

  test('an error fails the call and keeps the REPL; a timeout ends it and the next call gets a fresh one; reset clears the bindings', async () => {
    await run('var kept = "still here"');
    const thrown = await run('throw new TypeError("boom")');
    assert.equal(thrown.success, false);
    assert.equal(thrown.error, 'boom');
    assert.match(thrown.stack!, /^TypeError: boom\n\s+at repl:1/);
    assert.doesNotMatch(thrown.stack!, /node:repl|node:vm/, "the evaluator's own frames are not shown");
    const rejected = await run('await Promise.reject(new Error("later"))');
    assert.deepEqual([rejected.success, rejected.error], [false, 'later']);
    const syntax = await run('let = (');
    assert.equal(syntax.success, false);
    assert.equal(syntax.repl_terminated, undefined);
    const alive = await run('repl.write(kept)');
    assert.equal(textOf(alive), 'still here');

    const started = Date.now();
    const looped = await run('repl.write("before"); while (true) {}', { timeout_sec: 2 });
    assert.ok(Date.now() - started < 15_000, 'the loop was stopped');
    assert.equal(looped.success, false);
    assert.equal(looped.repl_terminated, true);
    assert.match(looped.error!, /timeout_sec \(2 s\)/);
    assert.equal(looped.repl_id, alive.repl_id, 'the answer names the REPL that ended');
    const fresh = await run('repl.write(typeof kept)');
    assert.equal(textOf(fresh), 'undefined');
    assert.notEqual(fresh.repl_id, looped.repl_id);

    // The code writing on the REPL's own answer channel (fd 3) ends that REPL, never the daemon.
    for (const forged of ['"not an answer\\n"', '"x".repeat(40 * 1024 * 1024)']) {
      const corrupted = await run(`require('node:fs').writeSync(3, ${forged}); await waitMs(5000)`);
      assert.equal(corrupted.success, false, forged);
      assert.equal(corrupted.repl_terminated, true);
      assert.match(corrupted.error!, /not understood/);
    }
    assert.equal((await d.api('GET', '/health')).status, 200);

    await run('var again = 1');
    const reset = await run('', { reset: true });
    assert.equal(reset.success, true);
    assert.notEqual(reset.repl_id, fresh.repl_id);
    assert.equal(textOf(await run('repl.write(typeof again)')), 'undefined');
  });

  test("the helpers drive the session's page, as another client of the session sees it; Playwright connects from the REPL", async () => {
    const page = html(
      '<title>form</title><input id="q" value="old"><button id="go" onclick="document.title = \'sent \' + q.value">Go</button><a href="#x">link</a>',
    );
    const r = await run(`
      await gotoUrl(${JSON.stringify(page)});
      await waitForLoad();
      await fillInput('#q', 'new words');
      await click('#go');
      const info = await pageInfo();
      repl.write(info.title + '|' + info.viewport.width + 'x' + info.viewport.height);
      const sum = await js(({ a, b }) => a + b, { arg: { a: 2, b: 3 } });
      repl.write('|' + sum + '|' + (await js('q.value')));
      const snapshot = await accessibilitySnapshot();
      const button = snapshot.nodes.find((n) => n.role === 'button');
      repl.write('|' + button.name);
      await click(button);
    `);
    assert.equal(r.success, true, `${r.error}\n${r.stack}`);
    assert.equal(textOf(r), 'sent new words|1024x768|5|new words|Go');
    assert.equal(await observed().title(), 'sent new words', 'the page the REPL drove is the session page');
    assert.equal(await observed().inputValue('#q'), 'new words');

    await observed().evaluate(() => {
      document.body.innerHTML = '<input id="k" autofocus>';
      (document.getElementById('k') as HTMLInputElement).focus();
    });
    const keys = await run(`await typeText('ab'); await pressKey('Backspace'); await pressKey('Return'); repl.write(await js('k.value'))`);
    assert.equal(textOf(keys), 'a');

    const tabs = await run(`
      const opened = await newTab(${JSON.stringify(html('<title>second</title>'))});
      await waitForLoad();
      repl.write((await listTabs(false)).map((t) => t.title).sort().join(','));
      await closeTab(opened);
      await ensureRealTab();
      repl.write('|' + (await currentTab()).title);
    `);
    assert.equal(textOf(tabs), 'second,sent new words|sent new words');
    const pw = await run(`
      var pwm = await import('playwright-core');
      var pwb = await pwm.chromium.connectOverCDP(process.env.CDP_ENDPOINT);
      repl.write(await pwb.contexts()[0].pages().find((p) => p.url().startsWith('data:')).title());
      await pwb.close();
    `);
    assert.equal(pw.success, true, pw.error);
    assert.equal(textOf(pw), 'sent new words');
  });

  test("emitImage sends the page's screenshot as PNG; text beyond 256 KiB is truncated and said so", async () => {
    await observed().setContent('<body style="margin:0;background:rgb(0,128,255)"></body>');
    const shot = await run('await repl.emitImage({ path: await captureScreenshot("/tmp/page.png") }); repl.write("after")');
    assert.equal(shot.success, true, shot.error);
    const [image, after] = shot.content ?? [];
    assert.equal(image?.type, 'image');
    assert.equal(image.type === 'image' && image.mime_type, 'image/png');
    const png = PNG.sync.read(Buffer.from(image.type === 'image' ? image.data_b64 : '', 'base64'));
    assert.deepEqual([png.width, png.height], [1024, 768]);
    assert.deepEqual([...png.data.subarray(0, 3)], [0, 128, 255], "the page's own colour");
    assert.deepEqual(after, { type: 'text', channel: 'write', text: 'after' });
    const small = await run('await repl.emitImage({ path: await captureScreenshot("/tmp/small.png", false, 200) })');
    const smallPng = PNG.sync.read(Buffer.from(small.content?.[0]?.type === 'image' ? small.content[0].data_b64 : '', 'base64'));
    assert.deepEqual([smallPng.width, smallPng.height], [200, 150], 'maxDim scales it down');
    const big = await run('repl.write("x".repeat(300 * 1024)); repl.write("lost")');
    assert.equal(big.content_truncated, true);
    assert.equal(textOf(big).length, 256 * 1024);
    const notImage = await run('await repl.emitImage(Buffer.from("plain text"))');
    assert.equal(notImage.success, false);
    assert.match(notImage.error!, /not a PNG, JPEG or WebP/);
  });

  test('calls run one at a time, in order of arrival', async () => {
    const slow = run('globalThis.firstEnded = undefined; await waitMs(700); globalThis.firstEnded = Date.now()');
    await new Promise((r) => setTimeout(r, 100));
    const second = await run('repl.write(JSON.stringify({ started: Date.now(), firstEnded: globalThis.firstEnded }))');
    await slow;
    const seen = JSON.parse(textOf(second));
    assert.equal(typeof seen.firstEnded, 'number', 'the first call had ended when the second began');
    assert.ok(seen.started >= seen.firstEnded);
  });

  test('a client gone while the REPL starts takes its call along: the next call is not held behind it', async () => {
    // A session of its own, so that its first call starts the runtime.
    const created = await d.api('POST', '/browsers', { headless: true });
    assert.equal(created.status, 200, created.text);
    const other = created.body.session_id;
    try {
      // The call is sent whole; its connection closes while the runtime is still starting.
      const body = JSON.stringify({ code: 'globalThis.leftBehind = 1; await waitMs(120000)', timeout_sec: 300 });
      const socket = net.connect(Number(new URL(d.baseUrl).port), '127.0.0.1', () => {
        socket.write(
          `POST /browsers/${other}/repl HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${d.apiKey}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        setTimeout(() => socket.destroy(), 20);
      });
      socket.on('error', () => {});
      await new Promise((r) => socket.once('close', r));
      // Held behind a call that runs on, this one would wait its two minutes.
      const next = await fetch(`${d.baseUrl}/browsers/${other}/repl`, {
        method: 'POST',
        headers: { authorization: `Bearer ${d.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ code: 'repl.write(String(globalThis.leftBehind))' }),
        signal: AbortSignal.timeout(30_000),
      });
      assert.equal(next.status, 200);
      assert.equal(textOf((await next.json()) as ReplResult), 'undefined', 'a fresh runtime: the gone call was stopped');
    } finally {
      await d.api('DELETE', `/browsers/${other}`);
    }
  });

  test("its code runs as the session's user in the session's box: no host file, no daemon secret; the host has them", async () => {
    const secretPath = join(d.home, 'credentials', 'admin-token');
    const token = (await readFile(secretPath, 'utf8')).trim();
    assert.ok(token.length >= 16, 'control: the secret is there on the host');
    const r = await run(`
      const fs = await import('node:fs');
      let read;
      try { read = fs.readFileSync(${JSON.stringify(secretPath)}, 'utf8'); } catch (e) { read = e.code; }
      repl.write(JSON.stringify({ uid: process.getuid(), read, home: process.env.HOME, env: Object.keys(process.env).filter((k) => k.startsWith('RBROWSE')) }));
    `);
    assert.equal(r.success, true, r.error);
    assert.deepEqual(JSON.parse(textOf(r)), { uid: 1000, read: 'ENOENT', home: '/home/kernel', env: [] });
  });

  test("it is served under the session's base_url with the jwt alone; another organization gets 404; bad bodies are 400", async () => {
    const jwt = new URL(session.cdp_ws_url).searchParams.get('jwt')!;
    const viaBase = await fetch(`${session.base_url}/repl?jwt=${encodeURIComponent(jwt)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: 'repl.write("via base_url")' }),
    });
    assert.equal(viaBase.status, 200);
    assert.equal(textOf((await viaBase.json()) as ReplResult), 'via base_url');
    const noJwt = await fetch(`${session.base_url}/repl`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"code":"1"}' });
    assert.equal(noJwt.status, 401);

    const other = (await d.cli(['auth', 'create-key', '--org', 'repl-other'])).stdout.trim();
    const theirs = await d.api('POST', `/browsers/${id}/repl`, { code: 'repl.write(1)' }, other);
    assert.equal(theirs.status, 404, theirs.text);
    for (const body of [
      {},
      { code: 1 },
      { code: '' },
      { code: 'x', timeout_sec: 0 },
      { code: 'x', timeout_sec: 301 },
      { code: 'x', colour: 'red' },
    ]) {
      const bad = await d.api('POST', `/browsers/${id}/repl`, body);
      assert.equal(bad.status, 400, `${JSON.stringify(body)}: ${bad.text}`);
      assert.equal(bad.body.code, 'bad_request');
    }
  });

  test('between calls the REPL holds no connection to the browser: a session used only through it still times out when idle', async () => {
    const idle = (await d.api('POST', '/browsers', { headless: true, timeout_seconds: 10 })).body;
    const r = await d.api('POST', `/browsers/${idle.session_id}/repl`, { code: 'const info = await pageInfo(); repl.write(info.url)' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.success, true, r.body.error);
    const again = await d.api('POST', `/browsers/${idle.session_id}/repl`, { code: 'repl.write((await currentTab()).url + " " + info.url)' });
    assert.equal(textOf(again.body), 'about:blank about:blank', 'the next call attaches to the same tab again, its bindings kept');
    await waitFor(
      async () => Boolean((await d.api('GET', `/browsers/${idle.session_id}?include_deleted=true`)).body.deleted_at),
      45_000,
      'the idle session to time out',
    );
  });

  test('the CLI prints the output in order, saves images and exits 1 on an error', async () => {
    const ok = await d.cli(['repl', id, 'repl.write(6 * 7); console.error("note")']);
    assert.equal(ok.exitCode, 0, ok.stderr);
    assert.equal(ok.stdout, '42');
    assert.equal(ok.stderr, 'note');
    const dir = await mkdtemp(join(tmpdir(), 'repl-images-'));
    try {
      const shot = await d.cli(['repl', id, 'await repl.emitImage({ path: await captureScreenshot() })', '--output', dir]);
      assert.equal(shot.exitCode, 0, shot.stderr);
      const [file] = await readdir(dir);
      assert.ok(file?.endsWith('.png'), `saved: ${file}`);
      assert.match(shot.stderr, new RegExp(`\\[image image/png saved to ${dir}/${file}\\]`));
      assert.deepEqual(PNG.sync.read(await readFile(join(dir, file!))).width, 1024);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const failed = await d.cli(['repl', id, 'throw new Error("nope")']);
    assert.equal(failed.exitCode, 1);
    assert.match(failed.stderr, /error: nope/);
  });
});
