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
