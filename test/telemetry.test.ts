import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BadRequestError, NotFoundError } from '@onkernel/sdk';
import { chromium } from 'playwright';
import { resolveCategories } from '../daemon/features/telemetry/config.js';
import { readFile, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
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
  test('export over OTLP/HTTP to a destination: records with their headers, a header change applied at once, checks and conflicts', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const api = env.d.api.bind(env.d);
      const created = await api('POST', '/telemetry/destinations', {
        name: 'collector',
        endpoint: receiver.url,
        description: 'a local collector',
        headers: { authorization: 'Bearer one', 'x-team': 'qa' },
      });
      assert.equal(created.status, 200, created.text);
      const dest = created.body;
      assert.deepEqual(dest.headers, { Authorization: '', 'X-Team': '' }, 'names canonical, values redacted');
      assert.equal(dest.endpoint, receiver.url);
      // The values are kept apart, 0600, and nowhere in the state file.
      const secret = join(env.d.home, 'credentials', 'telemetry-destinations', dest.id);
      assert.equal((await stat(secret)).mode & 0o777, 0o600);
      assert.doesNotMatch(await readFile(join(env.d.home, 'state.json'), 'utf8'), /Bearer one/);
      assert.equal((await api('GET', '/telemetry/destinations/collector')).body.id, dest.id, 'by name');
      for (const [body, status] of [
        [{ name: 'signal', endpoint: `${receiver.url}/v1/logs` }, 400],
        [{ name: 'query', endpoint: `${receiver.url}?a=1` }, 400],
        [{ name: 'ftp', endpoint: 'ftp://127.0.0.1/' }, 400],
        [{ name: 'abcdefghijklmnopqrstuvwx', endpoint: receiver.url }, 400],
        [{ name: 'twice', endpoint: receiver.url, headers: { 'X-A': '1', 'x-a': '2' } }, 400],
        // Not a header name, and not a string under one (a 500 once).
        [{ name: 'not-a-token', endpoint: receiver.url, headers: { '(': 'a' } }, 400],
        [{ name: 'empty-name', endpoint: receiver.url, headers: { '': 'a' } }, 400],
        [{ name: 'number', endpoint: receiver.url, headers: { '(': 1.5e115 } }, 400],
        [{ name: 'collector', endpoint: receiver.url }, 409],
      ] as const) {
        const r = await api('POST', '/telemetry/destinations', body);
        assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.text}`);
      }

      const exportTo = { enabled: true, export: { otlp: { destination: { name: 'collector' } } } };
      assert.equal((await api('POST', '/browsers', { headless: true, telemetry: { export: exportTo.export } })).status, 400, 'export needs capture');
      assert.equal(
        (await api('POST', '/browsers', { headless: true, telemetry: { enabled: true, export: { otlp: { destination: { name: 'nope' } } } } }))
          .status,
        404,
      );
      assert.equal(
        (
          await api('POST', '/browsers', {
            headless: true,
            telemetry: { enabled: true, export: { otlp: { enabled: false, destination: { id: dest.id } } } },
          })
        ).status,
        400,
      );
      const b = await api('POST', '/browsers', { headless: true, timeout_seconds: 120, telemetry: exportTo });
      assert.equal(b.status, 200, b.text);
      const id = b.body.session_id;
      assert.deepEqual(b.body.telemetry.export, { otlp: { enabled: true, destination: dest.id } });
      // One API call of the session, then the first record a collector gets that matches.
      const exported = async (collector: typeof receiver, match: (r: ReturnType<typeof receiver.records>[number]) => boolean, what: string) => {
        await env.kernel.browsers.computer.captureScreenshot(id);
        return (await waitFor(() => collector.records().find(match), 30_000, what))!;
      };
      const first = await exported(receiver, (r) => r.attributes['telemetry.type'] === 'api_call', 'an exported api_call');
      assert.equal(first.headers.authorization, 'Bearer one');
      assert.equal(first.headers['x-team'], 'qa');
      assert.equal(first.resource['browser.session_id'], id);
      assert.equal(first.attributes['telemetry.category'], 'control');
      assert.equal(typeof first.attributes['telemetry.seq'], 'number');

      // A new key applies to the session exporting now, without a restart; a null removes a header.
      const patched = await api('PATCH', `/telemetry/destinations/${dest.id}`, { headers: { Authorization: 'Bearer two', 'x-team': null } });
      assert.equal(patched.status, 200, patched.text);
      assert.deepEqual(patched.body.headers, { Authorization: '' });
      const second = await exported(receiver, (r) => r.headers.authorization === 'Bearer two', 'an export with the new key');
      assert.equal(second.headers['x-team'], undefined);

      // A new endpoint too: the session's next batch goes to the other collector.
      const moved = await startOtlpReceiver();
      try {
        assert.equal((await api('PATCH', `/telemetry/destinations/${dest.id}`, { endpoint: moved.url })).status, 200);
        const there = await exported(moved, (r) => r.attributes['telemetry.type'] === 'api_call', 'an export to the new endpoint');
        assert.equal(there.headers.authorization, 'Bearer two');
      } finally {
        await moved.close();
      }

      assert.equal((await api('DELETE', `/telemetry/destinations/${dest.id}`)).status, 409, 'in use by the session');
      const stopped = await api('PATCH', `/browsers/${id}`, { telemetry: { export: { otlp: { enabled: false } } } });
      assert.equal(stopped.status, 200, stopped.text);
      assert.deepEqual(stopped.body.telemetry.export, { otlp: { enabled: false } });
      const other = await env.d.cli(['auth', 'create-key', '--org', 'otlp-other']);
      assert.equal((await api('GET', `/telemetry/destinations/${dest.id}`, undefined, other.stdout.trim())).status, 404);
      assert.equal((await api('DELETE', `/telemetry/destinations/${dest.id}`)).status, 204);
      await assert.rejects(stat(secret), /ENOENT/);
      // The CLI: create with a header, list, remove.
      const made = await env.d.cli(['telemetry', 'destinations', 'create', 'from-cli', receiver.url, '--header', 'X-Key: k1']);
      assert.equal(made.exitCode, 0, made.stderr);
      const ls = await env.d.cli(['telemetry', 'destinations', 'ls', '--json']);
      assert.deepEqual(
        JSON.parse(ls.stdout).map((d: { name: string; headers: object }) => [d.name, d.headers]),
        [['from-cli', { 'X-Key': '' }]],
      );
      assert.equal((await env.d.cli(['telemetry', 'destinations', 'rm', 'from-cli'])).exitCode, 0);
      await env.kernel.browsers.deleteByID(id);
    } finally {
      await receiver.close();
    }
  });

  test('cdp_command events for what a client drives over cdp_ws_url, with its connection id; excluded methods are counted, not reported; platform calls apart', async () => {
    const b = await env.kernel.browsers.create({
      headless: true,
      timeout_seconds: 120,
      telemetry: {
        enabled: true,
        browser: { platform: { enabled: true }, control: { cdp: { excluded_methods: ['Input.dispatchKeyEvent'] } } },
      } as never,
    });
    const config = b.telemetry?.browser as Record<string, { enabled: boolean; cdp?: { excluded_methods: string[] } }>;
    assert.deepEqual([config.platform?.enabled, config.control?.cdp], [true, { excluded_methods: ['Input.dispatchKeyEvent'] }]);
    const browser = await chromium.connectOverCDP(b.cdp_ws_url);
    const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
    await page.goto(`${env.fixtures.url}/hello.html?token=secret-in-url`);
    await page.mouse.click(5, 5);
    await page.keyboard.press('Tab');
    await browser.close();
    await env.kernel.browsers.process.exec(b.session_id, { command: 'true' });
    await env.kernel.browsers.computer.captureScreenshot(b.session_id);
    const all = (await waitFor(
      async () => {
        const got = await events(b.session_id, { limit: 1000 });
        return got.some((e) => e.event.type === 'cdp_disconnect') && got.some((e) => e.event.type === 'api_call') ? got : undefined;
      },
      15_000,
      'the events',
    ))!;
    const commands = all.filter((e) => e.event.type === 'cdp_command');
    const methods = new Set(commands.map((e) => e.event.data!.method));
    assert.ok(methods.has('Page.navigate') && methods.has('Input.dispatchMouseEvent'), [...methods].join(', '));
    assert.ok(!methods.has('Input.dispatchKeyEvent'), 'an excluded method gives no event');
    assert.ok(!methods.has('Runtime.evaluate') && !methods.has('Target.setAutoAttach'), "a client library's own traffic is not reported");
    const connect = all.find((e) => e.event.type === 'cdp_connect')!;
    const disconnect = all.find((e) => e.event.type === 'cdp_disconnect')!;
    for (const c of commands) {
      assert.equal(c.event.category, 'control');
      assert.equal(c.event.data!.connection_id, connect.event.data!.connection_id);
    }
    assert.equal(disconnect.event.data!.connection_id, connect.event.data!.connection_id);
    assert.ok(disconnect.event.data!.telemetry_excluded >= 2, `keydown and keyup counted: ${JSON.stringify(disconnect.event.data)}`);
    const navigate = commands.find((e) => e.event.data!.method === 'Page.navigate')!;
    assert.equal(navigate.event.data!.url_scheme, 'http');
    assert.doesNotMatch(JSON.stringify(commands), /secret-in-url|hello\.html/, 'no URL is kept');
    // Managing the machine is platform; driving the browser is control.
    const calls = all.filter((e) => e.event.type === 'platform_api_call' || e.event.type === 'api_call');
    assert.deepEqual(
      calls.map((e) => [e.event.type, e.event.category, e.event.data!.operation_id]),
      [
        ['platform_api_call', 'platform', 'processExec'],
        ['api_call', 'control', 'computerScreenshot'],
      ],
    );
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

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
interface ExportedRecord {
  headers: Record<string, string | undefined>;
  resource: Record<string, unknown>;
  attributes: Record<string, unknown>;
}

/** A collector's /v1/logs on loopback: the OTLP/JSON log records it was sent, each with its request's headers. */
async function startOtlpReceiver(): Promise<{ url: string; records: () => ExportedRecord[]; close: () => Promise<void> }> {
  const received: ExportedRecord[] = [];
  const value = (v: OtlpValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue));
  const attrs = (list: { key: string; value: OtlpValue }[] = []) => Object.fromEntries(list.map((a) => [a.key, value(a.value)]));
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    if (req.method !== 'POST' || req.url !== '/v1/logs') return void res.writeHead(404).end();
    const doc = JSON.parse(body) as {
      resourceLogs: {
        resource?: { attributes?: { key: string; value: OtlpValue }[] };
        scopeLogs: { logRecords: { attributes?: { key: string; value: OtlpValue }[] }[] }[];
      }[];
    };
    for (const rl of doc.resourceLogs)
      for (const sl of rl.scopeLogs)
        for (const r of sl.logRecords)
          received.push({
            headers: req.headers as Record<string, string>,
            resource: attrs(rl.resource?.attributes),
            attributes: attrs(r.attributes),
          });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    records: () => received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
