import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright';
import type { WebmcpTool } from '../src/api/webmcp.js';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';

let d: TestDaemon;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
let id: string;
let browser: Browser;
let page: Page;
before(async () => {
  d = await startTestDaemon();
  fixtures = await startFixtureServer();
  const created = await d.api('POST', '/browsers', { headless: true });
  assert.equal(created.status, 200, created.text);
  id = created.body.session_id;
  browser = await chromium.connectOverCDP(created.body.cdp_ws_url);
  const [first] = browser.contexts()[0]?.pages() ?? [];
  assert.ok(first);
  page = first;
});
after(async () => {
  await browser?.close().catch(() => {});
  await fixtures?.close();
  await d?.stop();
});

const list = async (): Promise<WebmcpTool[]> => {
  const r = await d.api('GET', `/browsers/${id}/webmcp/tools`);
  assert.equal(r.status, 200, r.text);
  return r.body.tools;
};
const named = (tools: WebmcpTool[], name: string) => {
  const tool = tools.find((t) => t.tool.name === name);
  assert.ok(tool, `${name} among ${tools.map((t) => t.tool.name).join(', ')}`);
  return tool;
};
const invoke = (tool_ref: string, input: object, extra: object = {}) => d.api('POST', `/browsers/${id}/webmcp/invoke`, { tool_ref, input, ...extra });

describe('WebMCP', () => {
  test("a page's tools are listed across the tab and its frames, with where they come from; a blank page has none", async () => {
    assert.deepEqual(await list(), [], 'about:blank registers nothing');
    await page.goto(`${fixtures.url}/webmcp.html#top`);
    await page.frameLocator('#frame').locator('body').waitFor({ state: 'attached' });
    const tools = await list();
    assert.deepEqual(tools.map((t) => t.tool.name).sort(), ['add', 'fail', 'frame_echo', 'never', 'search_products']);
    const add = named(tools, 'add');
    assert.match(add.tool_ref, /^wmt_/);
    assert.equal(add.tool.description, 'Adds two numbers');
    assert.deepEqual(add.tool.inputSchema.required, ['a', 'b']);
    assert.equal(add.tool.annotations?.readOnlyHint, true);
    assert.equal(add.source.frame, null);
    assert.equal(add.source.page_url, `${fixtures.url}/webmcp.html`, 'without its fragment');
    assert.equal(add.source.page_title, 'WebMCP shop');
    assert.ok(Number.isInteger(add.source.tab_id) && Number.isInteger(add.source.window_id));
    const framed = named(tools, 'frame_echo');
    assert.equal(framed.source.frame?.url, `${fixtures.url}/webmcp-frame.html`);
    assert.equal(framed.source.page_url, add.source.page_url, 'a frame names the page it is in');
    assert.equal(framed.source.tab_id, add.source.tab_id);
    const form = named(tools, 'search_products');
    assert.equal(form.tool.description, "Search the shop's products");
    assert.ok((form.tool.inputSchema.properties as Record<string, unknown>).query, 'the form field is its input');
  });

  test('invoke: a result, an error, a frame tool, a form filled in but left to submit, the input checked', async () => {
    const tools = await list();
    const added = await invoke(named(tools, 'add').tool_ref, { a: 2, b: 40 });
    assert.equal(added.status, 200, added.text);
    assert.equal(added.body.status, 'completed');
    assert.deepEqual(added.body.output, { sum: 42 });
    assert.ok(added.body.invocation_id);
    assert.equal(await page.evaluate('window.added'), 1, 'the tool ran once in the page');

    const failed = await invoke(named(tools, 'fail').tool_ref, {});
    assert.equal(failed.status, 200, failed.text);
    assert.equal(failed.body.status, 'error');
    assert.match(failed.body.error_text, /out of stock/);

    const echoed = await invoke(named(tools, 'frame_echo').tool_ref, { text: 'hi' });
    assert.equal(echoed.body.status, 'completed', echoed.text);
    assert.deepEqual(echoed.body.output, { echoed: 'hi', from: '/webmcp-frame.html' });

    const search = await invoke(named(tools, 'search_products').tool_ref, { query: 'shoes' });
    assert.equal(search.status, 200, search.text);
    assert.equal(search.body.status, 'awaiting_submission');
    assert.equal(await page.inputValue('#search input[name=query]'), 'shoes', 'filled in');
    assert.equal(new URL(page.url()).pathname, '/webmcp.html', 'not submitted');

    const big = await invoke(named(tools, 'add').tool_ref, { a: 'x'.repeat(1024 * 1024), b: 1 });
    assert.equal(big.status, 413, big.text);
    assert.equal(big.body.code, 'payload_too_large');
    assert.equal((await d.api('POST', `/browsers/${id}/webmcp/invoke`, { tool_ref: 'x' })).status, 400, 'input is required');
  });

  test('a tool with no result by timeout_sec is outcome_unknown (504, never retried); the daemon is not held', async () => {
    const tools = await list();
    const started = Date.now();
    const r = await invoke(named(tools, 'never').tool_ref, {}, { timeout_sec: 1 });
    assert.equal(r.status, 504, r.text);
    assert.equal(r.body.code, 'outcome_unknown');
    assert.ok(r.body.invocation_id, 'names the invocation that started');
    assert.equal(r.headers.get('x-should-retry'), 'false');
    assert.ok(Date.now() - started < 15_000);
    assert.equal(await page.evaluate('window.neverStarted'), true, 'it did start');
    const again = await invoke(named(tools, 'add').tool_ref, { a: 1, b: 1 });
    assert.equal(again.body.status, 'completed', 'the page still answers');
  });

  test("tool_refs go stale with their document; a second tab's tools have their own tab_id", async () => {
    const before = await list();
    await page.goto(`${fixtures.url}/hello.html`);
    const stale = await invoke(named(before, 'add').tool_ref, { a: 1, b: 2 });
    assert.equal(stale.status, 404, stale.text);
    assert.match(stale.body.message, /list the tools again/);
    assert.deepEqual(await list(), []);
    assert.equal((await invoke('wmt_never-listed', {})).status, 404);

    // The second tab embeds its tool frame from another site (localhost against 127.0.0.1): an out-of-process frame.
    const second = await browser.contexts()[0]!.newPage();
    const otherSite = fixtures.url.replace('127.0.0.1', 'localhost');
    await second.goto(`${fixtures.url}/webmcp.html?frame=${encodeURIComponent(`${otherSite}/webmcp-frame.html`)}`);
    await second.frameLocator('#frame').locator('body').waitFor({ state: 'attached' });
    await page.goto(`${fixtures.url}/webmcp.html`);
    const tools = await waitForToolCount(10);
    const tabs = new Set(tools.filter((t) => t.tool.name === 'add').map((t) => t.source.tab_id));
    assert.equal(tabs.size, 2, 'add from each tab, told apart by tab_id');
    const remote = tools.find((t) => t.tool.name === 'frame_echo' && t.source.frame?.url.startsWith(otherSite));
    assert.ok(remote, `the other site's frame tool: ${JSON.stringify(tools.map((t) => t.source))}`);
    const echoed = await invoke(remote.tool_ref, { text: 'far' });
    assert.deepEqual(echoed.body.output, { echoed: 'far', from: '/webmcp-frame.html' }, echoed.text);
    await second.close();
    await waitForToolCount(5);
  });

  test("a frame's tools stay listed when its move to a process of its own is reported after them", async () => {
    // The page's renderer reports the frame's move (a detach, for it) only once its stall ends; by
    // then the frame's new process has registered the frame's tools. Listing first has the
    // daemon watch the page before it starts.
    await list();
    const otherSite = fixtures.url.replace('127.0.0.1', 'localhost');
    await page.goto(`${fixtures.url}/webmcp.html?stall=1500&frame=${encodeURIComponent(`${otherSite}/webmcp-frame.html`)}`);
    const remoteEcho = (tools: WebmcpTool[]) => tools.find((t) => t.tool.name === 'frame_echo' && t.source.frame?.url.startsWith(otherSite));
    const deadline = Date.now() + 10_000;
    while (!remoteEcho(await list())) {
      assert.ok(Date.now() < deadline, 'the frame registered its tool');
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(await page.evaluate('1'), 1, 'the stall is over');
    await new Promise((r) => setTimeout(r, 300));
    const echo = remoteEcho(await list());
    assert.ok(echo, 'still listed once the move is reported');
    const echoed = await invoke(echo.tool_ref, { text: 'moved' });
    assert.deepEqual(echoed.body.output, { echoed: 'moved', from: '/webmcp-frame.html' }, echoed.text);
    await page.goto(`${fixtures.url}/webmcp.html`);
    await waitForToolCount(5);
  });

  test('another organization sees none of it; the CLI lists and invokes', async () => {
    const otherKey = (await d.cli(['auth', 'create-key', '--org', 'webmcp-other'])).stdout.trim();
    assert.equal((await d.api('GET', `/browsers/${id}/webmcp/tools`, undefined, otherKey)).status, 404);
    const add = named(await list(), 'add');
    assert.equal((await d.api('POST', `/browsers/${id}/webmcp/invoke`, { tool_ref: add.tool_ref, input: { a: 1, b: 1 } }, otherKey)).status, 404);

    const ls = await d.cli(['webmcp', 'ls', id, '-q']);
    assert.equal(ls.exitCode, 0, ls.stderr);
    assert.ok(ls.stdout.split('\n').includes(add.tool_ref));
    const r = await d.cli(['webmcp', 'invoke', id, '--tool-ref', add.tool_ref, '--input', '{"a": 20, "b": 22}']);
    assert.equal(r.exitCode, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { sum: 42 });
    const failed = await d.cli(['webmcp', 'invoke', id, '--tool-ref', named(await list(), 'fail').tool_ref, '--input', '{}']);
    assert.equal(failed.exitCode, 1);
    assert.match(failed.stderr, /error: .*out of stock/);
    assert.equal((await d.cli(['webmcp', 'invoke', id, '--tool-ref', add.tool_ref, '--input', '[1]'])).exitCode, 2, 'not an object: a usage error');
  });
});

describe('WebMCP custom tools', () => {
  const custom = (body: object, key?: string) => d.api('POST', `/browsers/${id}/webmcp/custom-tools`, body, key);
  const customOnly = async () => (await list()).filter((t) => t.source.custom);
  const hello = () => `${fixtures.url}/hello.html`;
  const shopSource = (prefix: string) => `[
    { kind: 'page', match: { url_patterns: ['${prefix}/hello.html*'] },
      tool: { name: 'title_plus', description: 'The title and a suffix', inputSchema: { type: 'object', properties: { suffix: { type: 'string' } } } },
      execute: (input) => document.title + input.suffix },
    { kind: 'cdp', match: { url_patterns: ['${prefix}/*'] },
      tool: { name: 'where', description: 'The URL, through the REPL helpers', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
      async execute(input, { targetId }) { const info = await pageInfo(); return { url: info.url, n: input.n, same: (await currentTab()).targetId === targetId }; } },
    { kind: 'page', match: { url_patterns: ['${prefix}/*'] },
      tool: { name: 'broken', description: 'Throws', inputSchema: { type: 'object' } },
      execute: () => { throw new Error('no luck here'); } },
    { kind: 'page', match: { url_patterns: ['https://nowhere.example/*'] },
      tool: { name: 'elsewhere', description: 'Offered on another site only', inputSchema: { type: 'object' } },
      execute: () => 1 },
  ]`;

  test('a batch is added; its page and CDP tools are offered on matching pages only and run there with their input', async () => {
    const added = await custom({ namespace: 'shop', source: shopSource(fixtures.url) });
    assert.equal(added.status, 201, added.text);
    assert.deepEqual(
      added.body.tools.map((t: any) => [t.namespace, t.tool.name, t.kind]),
      [
        ['shop', 'title_plus', 'page'],
        ['shop', 'where', 'cdp'],
        ['shop', 'broken', 'page'],
        ['shop', 'elsewhere', 'page'],
      ],
    );
    for (const t of added.body.tools) assert.match(t.id, /^ct_[a-z][a-z0-9]{23}$/);
    assert.deepEqual((await d.api('GET', `/browsers/${id}/webmcp/custom-tools`)).body, added.body);

    await page.goto(`${fixtures.url}/hello.html#part`);
    const offered = await customOnly();
    assert.deepEqual(offered.map((t) => t.tool.name).sort(), ['broken', 'title_plus', 'where'], 'not the one for another site');
    const titlePlus = offered.find((t) => t.tool.name === 'title_plus')!;
    assert.deepEqual(titlePlus.source.custom, { id: added.body.tools[0].id, namespace: 'shop' });
    assert.equal(titlePlus.source.page_url, hello());
    assert.equal(titlePlus.source.frame, null);
    assert.ok(titlePlus.source.target_id);
    assert.deepEqual(
      (await d.api('GET', `/browsers/${id}/webmcp/tools?exclude_custom=true`)).body.tools.filter((t: WebmcpTool) => t.source.custom),
      [],
    );

    const ran = await invoke(titlePlus.tool_ref, { suffix: '!' });
    assert.equal(ran.status, 200, ran.text);
    assert.deepEqual([ran.body.status, ran.body.output], ['completed', `${await page.title()}!`]);
    const where = await invoke(offered.find((t) => t.tool.name === 'where')!.tool_ref, { n: 5 });
    assert.equal(where.status, 200, where.text);
    assert.deepEqual(where.body.output, { url: `${hello()}#part`, n: 5, same: true });
    const broken = await invoke(offered.find((t) => t.tool.name === 'broken')!.tool_ref, {});
    assert.equal(broken.body.status, 'error');
    assert.match(broken.body.error_text, /no luck here/);

    // A CDP tool that never answers: outcome unknown at timeout_sec, and the REPL that ran it is stopped.
    const stuck = await custom({
      namespace: 'stuck',
      source: `[{ kind: 'cdp', match: { url_patterns: ['*'] }, tool: { name: 'loop', description: 'Never ends', inputSchema: { type: 'object' } }, execute: () => { while (true) {} } }]`,
    });
    assert.equal(stuck.status, 201, stuck.text);
    const loop = (await customOnly()).find((t) => t.tool.name === 'loop')!;
    const started = Date.now();
    const unknown = await invoke(loop.tool_ref, {}, { timeout_sec: 1 });
    assert.equal(unknown.status, 504, unknown.text);
    assert.equal(unknown.body.code, 'outcome_unknown');
    assert.ok(Date.now() - started < 10_000);
    assert.equal((await d.api('DELETE', `/browsers/${id}/webmcp/custom-tools/${stuck.body.tools[0].id}`)).status, 204);
    assert.equal((await invoke(offered.find((t) => t.tool.name === 'where')!.tool_ref, { n: 6 })).body.output.n, 6, 'a fresh REPL runs the next one');

    // Another document: the old refs name nothing; the new page offers the tools again.
    await page.goto(`${fixtures.url}/hello.html?again`);
    assert.equal((await invoke(titlePlus.tool_ref, { suffix: '?' })).status, 404);
    assert.equal((await customOnly()).length, 3);
    await page.goto('about:blank');
    assert.deepEqual(await customOnly(), []);
  });

  test('a namespace is replaced atomically with force_overwrite_namespace; a clash, bad source or bad definition adds nothing; one tool is removed by id', async () => {
    const before = (await d.api('GET', `/browsers/${id}/webmcp/custom-tools`)).body.tools;
    const one = `[{ kind: 'page', match: { url_patterns: ['*'] }, tool: { name: 'title_plus', description: 'Again', inputSchema: { type: 'object' } }, execute: () => 2 }]`;
    const clash = await custom({ namespace: 'shop', source: one });
    assert.equal(clash.status, 400, clash.text);
    assert.match(clash.body.message, /already has a tool named title_plus/);
    for (const [source, why] of [
      ['({})', /non-empty array/],
      ['[]', /non-empty array/],
      ['[{ kind: "page"', /source/],
      ['[{ kind: "page", match: { url_patterns: ["*"] }, tool: { name: "x", description: "", inputSchema: {} } }]', /execute must be a function/],
      ['[{ kind: "other", match: { url_patterns: ["*"] }, tool: { name: "x", description: "", inputSchema: {} }, execute() {} }]', /definition 0/],
      [
        '[{ kind: "page", match: { url_patterns: ["https://example.com/(unclosed"] }, tool: { name: "x", description: "", inputSchema: {} }, execute() {} }]',
        /not a URL pattern/,
      ],
      ['(() => { while (true) {} })()', /timed out/],
    ] as const) {
      const bad = await custom({ namespace: 'other', source });
      assert.equal(bad.status, 400, `${source}: ${bad.text}`);
      assert.match(bad.body.message, why, source);
    }
    assert.deepEqual((await d.api('GET', `/browsers/${id}/webmcp/custom-tools`)).body.tools, before, 'nothing was added');

    const replaced = await custom({ namespace: 'shop', source: one, force_overwrite_namespace: true });
    assert.equal(replaced.status, 201, replaced.text);
    const now = (await d.api('GET', `/browsers/${id}/webmcp/custom-tools`)).body.tools;
    assert.deepEqual(
      now.map((t: any) => t.tool.name),
      ['title_plus'],
    );
    assert.notEqual(now[0].id, before[0].id);
    const otherKey = (await d.cli(['auth', 'create-key', '--org', 'webmcp-custom-other'])).stdout.trim();
    assert.equal((await d.api('GET', `/browsers/${id}/webmcp/custom-tools`, undefined, otherKey)).status, 404);
    assert.equal((await custom({ namespace: 'x', source: one }, otherKey)).status, 404);
    assert.equal((await d.api('DELETE', `/browsers/${id}/webmcp/custom-tools/${now[0].id}`, undefined, otherKey)).status, 404);

    const ls = await d.cli(['webmcp', 'custom-tools', 'ls', id, '-q']);
    assert.deepEqual(ls.stdout.split('\n'), [now[0].id]);
    const rm = await d.cli(['webmcp', 'custom-tools', 'rm', id, now[0].id]);
    assert.equal(rm.exitCode, 0, rm.stderr);
    assert.deepEqual((await d.api('GET', `/browsers/${id}/webmcp/custom-tools`)).body.tools, []);
    assert.equal((await d.api('DELETE', `/browsers/${id}/webmcp/custom-tools/${now[0].id}`)).status, 404);
    const viaCli = await d.cli(['webmcp', 'custom-tools', 'add', id, '--namespace', 'cli', '--source', one]);
    assert.equal(viaCli.exitCode, 0, viaCli.stderr);
    assert.match(viaCli.stdout, /^added 1 custom tool to cli: title_plus \(ct_/);
    const last = (await d.api('GET', `/browsers/${id}/webmcp/custom-tools`)).body.tools[0];
    assert.equal((await d.api('DELETE', `/browsers/${id}/webmcp/custom-tools/${last.id}`)).status, 204);
  });
});

/** The tools once there are n (pages register theirs as their scripts run). */
async function waitForToolCount(n: number): Promise<WebmcpTool[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const tools = await list();
    if (tools.length === n) return tools;
    if (Date.now() > deadline) assert.fail(`expected ${n} tools, have ${tools.map((t) => t.tool.name).join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
