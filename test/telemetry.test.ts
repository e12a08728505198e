import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BadRequestError, NotFoundError } from '@onkernel/sdk';
import { chromium } from 'playwright';
import { resolveCategories } from '../daemon/features/telemetry/config.js';
import { waitFor } from './helpers/daemon.js';
import { sdkDaemonWithFixtures } from './helpers/fixtures.js';

type Envelope = { seq: number; event: { type: string; category: string; ts: number; source: { kind: string }; data?: Record<string, any> } };

describe('telemetry configuration (pure)', () => {
  test("create and PATCH resolve categories as Kernel's SDK documents", () => {
    assert.equal(resolveCategories(undefined, undefined, 'create'), null);
    assert.equal(resolveCategories({}, undefined, 'create'), null);
    assert.equal(resolveCategories({ enabled: false }, undefined, 'create'), null);
    const defaults = resolveCategories({ enabled: true }, undefined, 'create')!;
    assert.deepEqual(
      Object.entries(defaults)
        .filter(([, on]) => on)
        .map(([c]) => c)
        .sort(),
      ['captcha', 'connection', 'control', 'system'],
    );
    // Categories alone on create layer onto the defaults.
    const withConsole = resolveCategories({ browser: { console: { enabled: true }, control: { enabled: false } } }, undefined, 'create')!;
    assert.equal(withConsole.console, true);
    assert.equal(withConsole.control, false);
    assert.equal(withConsole.connection, true);
    // PATCH: empty leaves it, categories merge, enabled:true starts afresh, enabled:false stops.
    assert.equal(resolveCategories({}, withConsole, 'update'), withConsole);
    assert.equal(resolveCategories({ browser: { network: { enabled: true } } }, withConsole, 'update')!.console, true);
    assert.equal(resolveCategories({ enabled: true }, withConsole, 'update')!.console, false);
    assert.equal(resolveCategories({ enabled: false }, withConsole, 'update'), null);
    // Every category off is off.
    const none = Object.fromEntries(['control', 'connection', 'system', 'captcha'].map((c) => [c, { enabled: false }]));
    assert.equal(resolveCategories({ browser: none }, undefined, 'create'), null);
    assert.throws(() => resolveCategories({ enabled: false, browser: { console: { enabled: true } } }, undefined, 'create'), /cannot be combined/);
  });
});

describe('telemetry of a session (events and stream)', () => {
  const env = sdkDaemonWithFixtures();

  const events = async (id: string, query: object = {}) =>
    (await env.kernel.browsers.telemetry.events(id, query)).getPaginatedItems() as unknown as Envelope[];

  test('off unless asked; PATCH turns it on and off; a contradictory request is a 400', async () => {
    const b = await env.kernel.browsers.create({ headless: true, timeout_seconds: 120 });
    assert.equal(b.telemetry ?? null, null);
    await env.kernel.browsers.computer.captureScreenshot(b.session_id);
    assert.deepEqual(await events(b.session_id), []);
    const on = await env.kernel.browsers.update(b.session_id, { telemetry: { enabled: true } });
    assert.equal(on.telemetry?.browser?.control?.enabled, true);
    assert.equal(on.telemetry?.browser?.console?.enabled, false);
    await env.kernel.browsers.computer.captureScreenshot(b.session_id);
    assert.deepEqual(
      (await events(b.session_id)).map((e) => e.event.type),
      ['api_call'],
    );
    await assert.rejects(
      env.kernel.browsers.update(b.session_id, { telemetry: { enabled: false, browser: { page: { enabled: true } } } }),
      BadRequestError,
    );
    const off = await env.kernel.browsers.update(b.session_id, { telemetry: { enabled: false } });
    assert.equal(off.telemetry ?? null, null);
    await env.kernel.browsers.deleteByID(b.session_id);
  });
  test('connections, API calls, console, network and page events of a session, filtered by category; the stream resumes by Last-Event-ID', async () => {
    const b = await env.kernel.browsers.create({
      headless: true,
      timeout_seconds: 120,
      telemetry: { enabled: true, browser: { console: { enabled: true }, network: { enabled: true }, page: { enabled: true } } },
    });
    assert.equal(b.telemetry?.browser?.console?.enabled, true);
    assert.equal(b.telemetry?.browser?.control?.enabled, true);
    assert.equal(b.telemetry?.browser?.interaction?.enabled, false);

    const browser = await chromium.connectOverCDP(b.cdp_ws_url);
    const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
    await page.goto(`${env.fixtures.url}/hello.html`);
    await page.evaluate(() => console.log('hello telemetry', 42));
    await env.kernel.browsers.computer.captureScreenshot(b.session_id);
    await browser.close();

    const all = (await waitFor(
      async () => {
        const got = await events(b.session_id, { limit: 1000 });
        return got.some((e) => e.event.type === 'cdp_disconnect') && got.some((e) => e.event.type === 'console_log') ? got : undefined;
      },
      15_000,
      'the events',
    ))!;
    const types = new Set(all.map((e) => e.event.type));
    for (const t of [
      'cdp_connect',
      'cdp_disconnect',
      'api_call',
      'network_request',
      'network_response',
      'page_navigation',
      'page_load',
      'console_log',
    ]) {
      assert.ok(types.has(t), `${t} among ${[...types].join(', ')}`);
    }
    const seqs = all.map((e) => e.seq);
    assert.deepEqual(
      seqs,
      [...seqs].sort((a, b) => a - b),
      'oldest first',
    );
    const log = all.find((e) => e.event.type === 'console_log')!;
    assert.equal(log.event.data!.text, 'hello telemetry');
    assert.deepEqual(log.event.data!.args, ['hello telemetry', '42']);
    assert.equal(log.event.source.kind, 'cdp');
    const call = all.find((e) => e.event.type === 'api_call')!;
    assert.equal(call.event.data!.operation_id, 'computerScreenshot');
    assert.equal(call.event.data!.status, 200);
    const response = all.find((e) => e.event.type === 'network_response' && String(e.event.data!.url).endsWith('/hello.html'))!;
    assert.equal(response.event.data!.status, 200);
    assert.equal(all.find((e) => e.event.type === 'cdp_disconnect')!.event.data!.reason, 'client_close');

    const onlyConsole = await events(b.session_id, { category: ['console'], limit: 1000 });
    assert.ok(onlyConsole.length > 0 && onlyConsole.every((e) => e.event.category === 'console'));
    const newest = await events(b.session_id, { order: 'desc', limit: 2 });
    assert.deepEqual(
      newest.map((e) => e.seq),
      [seqs.at(-1), seqs.at(-2)],
    );

    // The stream replays what is kept, then resumes after a Last-Event-ID without gaps or repeats.
    const res = await fetch(`${env.d.baseUrl}/browsers/${b.session_id}/telemetry/stream?replay=all`, {
      headers: { authorization: `Bearer ${env.d.apiKey}` },
    });
    assert.equal(res.headers.get('content-type')?.startsWith('text/event-stream'), true);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes(`id: ${log.seq}\n`)) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    assert.match(text, new RegExp(`id: ${seqs[0]}\\ndata: \\{"seq":${seqs[0]},`));
    assert.doesNotMatch(text, /^event:/m, 'no event: field');
    const resumed = await env.kernel.browsers.telemetry.stream(b.session_id, { 'Last-Event-ID': String(log.seq) });
    const first = await (async () => {
      for await (const e of resumed) return e as unknown as Envelope;
    })();
    assert.equal(first!.seq, log.seq + 1);
    await env.kernel.browsers.deleteByID(b.session_id);
    // Once the session has ended its events are still there (archived), and its stream is a 404.
    const archived = await events(b.session_id, { limit: 1000 });
    assert.ok(archived.length >= all.length, `${archived.length} archived, ${all.length} before`);
    assert.deepEqual(
      archived.find((e) => e.seq === log.seq),
      log,
    );
    await assert.rejects(env.kernel.browsers.telemetry.stream(b.session_id), NotFoundError);
    // They outlive the daemon too (restarted on another port: RBROWSE_PORT=0).
    assert.equal((await env.d.cli(['daemon', 'stop'])).exitCode, 0);
    const restarted = await env.d.cli(['daemon', 'start']);
    assert.equal(restarted.exitCode, 0, restarted.stderr);
    env.d.baseUrl = restarted.stdout.trim();
    const again = await env.d.api('GET', `/browsers/${b.session_id}/telemetry/events?limit=1000`);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(
      (again.body as Envelope[]).map((e) => e.seq),
      archived.map((e) => e.seq),
    );
  });
});
