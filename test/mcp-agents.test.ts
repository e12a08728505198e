/**
 * Agents drive rbrowse as agents drive browsers: Playwright MCP's own page tools (@playwright/mcp,
 * run in each session's box) over stdio and streamable HTTP, on each MCP connection's own session
 * (made on first use, held while the connection lasts, ended with it unless kept); a pause longer
 * than the inactivity timeout keeps it; an ended session says how and when it ended; a page of
 * 20,000 items gives a bounded answer that says how to get the rest; eight agents at once each on
 * a session of their own; tools/list small enough for a model's context, with groups to leave out.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { sleep, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer, type FixtureServer } from './helpers/fixtures.js';

let d: TestDaemon;
let pages: FixtureServer;
before(async () => {
  // One standby browser: a connection's own session comes from it, as on a user's daemon.
  d = await startTestDaemon({ env: { RBROWSE_STANDBY: 'headless=1' } });
  pages = await startFixtureServer();
});
after(async () => {
  await pages?.close();
  await d?.stop();
});

type Content = { type: string; text?: string; data?: string; mimeType?: string };
type Answer = { content: Content[]; isError?: boolean };

const call = async (client: Client, name: string, args: Record<string, unknown> = {}): Promise<Answer> =>
  (await client.callTool({ name, arguments: args }, undefined, { timeout: 180_000 })) as Answer;
const textOf = (a: Answer) => a.content.map((c) => c.text ?? '').join('\n');
/** A tool's answer, failing the test with its own words when it is an error. */
async function ok(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const a = await call(client, name, args);
  assert.ok(!a.isError, `${name}: ${textOf(a)}`);
  return textOf(a);
}
/** The ref Playwright MCP's snapshot gives the element of that role and name. */
function refOf(snapshot: string, role: string, name: string): string {
  const m = new RegExp(`${role} "${name}"[^\\n]*\\[ref=([^\\]]+)\\]`).exec(snapshot);
  assert.ok(m, `no ${role} "${name}" in the snapshot:\n${snapshot.slice(0, 3000)}`);
  return m[1]!;
}

const stdioClient = async (name = 'stdio-agent') => {
  const client = new Client({ name, version: '1' });
  await client.connect(new StdioClientTransport({ command: join(process.cwd(), 'bin/rbrowse'), args: ['mcp'], env: d.env, stderr: 'pipe' }));
  return client;
};
/**
 * An HTTP client that ends its MCP session when closed, as the protocol has it (DELETE); one that
 * only drops its stream is waited for a minute.
 */
const httpClient = async (name = 'http-agent', query = '', key = d.apiKey) => {
  const client = new Client({ name, version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(`${d.baseUrl}/mcp${query}`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  const close = client.close.bind(client);
  client.close = async () => {
    await transport.terminateSession().catch(() => {});
    await close();
  };
  return client;
};

/** The session the connection's client name labels (its own session), from the API. */
async function ownSessionOf(clientName: string): Promise<{ session_id: string; name: string }> {
  const list = (await d.api('GET', '/browsers')).body as { session_id: string; name?: string }[];
  const mine = list.filter((s) => s.name?.startsWith(`mcp ${clientName} `));
  assert.equal(mine.length, 1, `one session named for ${clientName}: ${JSON.stringify(list.map((s) => s.name))}`);
  return mine[0] as { session_id: string; name: string };
}

/** navigate, snapshot, type by ref, select, click by ref, snapshot: the loop every agent runs. */
async function formLoop(client: Client, agent: string, sessionArgs: Record<string, unknown> = {}): Promise<string> {
  const nav = await ok(client, 'browser_navigate', { url: `${pages.url}/agent-form.html?agent=${agent}`, ...sessionArgs });
  assert.match(nav, /<untrusted-page-content source="browser_navigate">/, 'page content is marked');
  const snap = await ok(client, 'browser_snapshot', sessionArgs);
  assert.match(snap, new RegExp(`heading "Agent form ${agent}"`), 'its own page');
  await ok(client, 'browser_type', { element: 'Name', target: refOf(snap, 'textbox', 'Name'), text: `Ada ${agent}`, ...sessionArgs });
  await ok(client, 'browser_select_option', { element: 'Size', target: refOf(snap, 'combobox', 'Size'), values: ['large'], ...sessionArgs });
  await ok(client, 'browser_click', { element: 'Greet', target: refOf(snap, 'button', 'Greet'), ...sessionArgs });
  const after = await ok(client, 'browser_snapshot', sessionArgs);
  assert.match(after, new RegExp(`Hello, Ada ${agent} \\(large\\)!`));
  return after;
}

describe('Playwright MCP on rbrowse sessions', () => {
  test('the loop over stdio and over HTTP, each on its connection’s own session, which ends with the connection', async () => {
    for (const [clientName, connect] of [
      ['stdio-agent', () => stdioClient('stdio-agent')],
      ['http-agent', () => httpClient('http-agent')],
    ] as const) {
      const client = await connect();
      let own: { session_id: string } | undefined;
      try {
        const { tools } = await client.listTools();
        const byName = new Map(tools.map((t) => [t.name, t]));
        for (const name of [
          'browser_navigate',
          'browser_navigate_back',
          'browser_snapshot',
          'browser_click',
          'browser_type',
          'browser_fill_form',
          'browser_select_option',
          'browser_hover',
          'browser_press_key',
          'browser_wait_for',
          'browser_take_screenshot',
          'browser_evaluate',
          'browser_tabs',
          'browser_console_messages',
          'browser_network_requests',
          'browser_file_upload',
          'browser_handle_dialog',
          'browser_close',
        ]) {
          const tool = byName.get(name);
          assert.ok(tool, `${name} is listed`);
          const props = tool.inputSchema.properties as Record<string, { type?: string }>;
          assert.equal(props.session_id?.type, 'string', `${name} takes a session_id`);
          assert.ok(!(tool.inputSchema.required ?? []).includes('session_id'), `${name}: session_id is optional`);
        }
        // The argument shapes are @playwright/mcp's own: its refs are `target`.
        assert.deepEqual(byName.get('browser_click')!.inputSchema.required, ['target']);
        assert.deepEqual(byName.get('browser_type')!.inputSchema.required, ['target', 'text']);

        await formLoop(client, clientName);
        own = await ownSessionOf(clientName);
        // Its key's organization sees it; the REST API drives the same session the page tools did.
        const title = (await d.api('POST', `/browsers/${own.session_id}/playwright/execute`, { code: 'return await page.title()' })).body;
        assert.equal(title.result, 'Agent form');
        // A screenshot of Playwright MCP is an image; the press of a key goes to the same page.
        const shot = await call(client, 'browser_take_screenshot', { type: 'png' });
        assert.ok(
          shot.content.some((c) => c.type === 'image' && c.mimeType === 'image/png'),
          textOf(shot),
        );
        await ok(client, 'browser_press_key', { key: 'Tab' });
      } finally {
        await client.close();
      }
      // The connection's end ends its own session, and says so to whoever asks after it.
      await waitFor(async () => (await d.api('GET', `/browsers/${own!.session_id}`)).status === 404, 30_000, `${clientName}'s session to end`);
      const gone = await d.api('GET', `/browsers/${own!.session_id}`);
      assert.match(gone.body.message, /ended at .*: the MCP connection that held it ended/);
    }
  });

  test('keep_browser keeps the own session after the connection; a session_id reaches another session of the key', async () => {
    const other = (await d.api('POST', '/browsers', { headless: true })).body;
    const client = await httpClient('keeper');
    let own: { session_id: string };
    try {
      await formLoop(client, 'k');
      own = await ownSessionOf('keeper');
      await ok(client, 'keep_browser');
      // The same tools on a session the key made elsewhere.
      await formLoop(client, 'other', { session_id: other.session_id });
      assert.equal(
        (await d.api('POST', `/browsers/${other.session_id}/playwright/execute`, { code: 'return page.url()' })).body.result.includes('agent=other'),
        true,
      );
      // Another organization's key reaches none of it.
      const otherOrg = (await d.cli(['auth', 'create-key', '--org', 'mcp-agents-other'])).stdout.trim();
      const stranger = await httpClient('stranger', '', otherOrg);
      try {
        const stolen = await call(stranger, 'browser_snapshot', { session_id: own.session_id });
        assert.equal(stolen.isError, true);
        assert.match(textOf(stolen), /^404 /);
      } finally {
        await stranger.close();
      }
    } finally {
      await client.close();
    }
    await sleep(2000);
    assert.equal((await d.api('GET', `/browsers/${own!.session_id}`)).status, 200, 'kept');
    await d.api('DELETE', `/browsers/${own!.session_id}`);
    await d.api('DELETE', `/browsers/${other.session_id}`);
  });

  test('a pause longer than the inactivity timeout keeps the sessions a connection made; they time out only after it ends, and say so', async () => {
    const client = await httpClient('pauser');
    const made = JSON.parse(await ok(client, 'create_browser', { headless: true, timeout_seconds: 10 })) as { session_id: string };
    await ok(client, 'browser_navigate', { url: `${pages.url}/agent-form.html?agent=pause` });
    const own = await ownSessionOf('pauser');
    // Longer than both the own session's timeout (60 s) and the made one's (10 s), with no call.
    await sleep(90_000);
    assert.match(await ok(client, 'browser_snapshot'), /heading "Agent form pause"/, 'the page is still there');
    assert.equal((await d.api('GET', `/browsers/${made.session_id}`)).status, 200);
    await client.close();
    // Once the connection has ended, the made session's 10 s start.
    await waitFor(async () => (await d.api('GET', `/browsers/${made.session_id}`)).status === 404, 60_000, 'the made session to time out');
    const gone = await d.api('GET', `/browsers/${made.session_id}`);
    assert.match(gone.body.message, new RegExp(`^browser session ${made.session_id} ended after 10 s without a client at \\d{4}-`));
    // Through MCP too: the tool's answer says the same, not a bare "not found".
    const late = await httpClient('late');
    try {
      const a = await call(late, 'get_browser', { session_id: made.session_id });
      assert.equal(a.isError, true);
      assert.match(textOf(a), /^404 not_found: browser session \S+ ended after 10 s without a client at /);
      const typo = await call(late, 'get_browser', { session_id: 'no-such-session' });
      assert.match(textOf(typo), /^404 not_found: browser session no-such-session not found$/);
    } finally {
      await late.close();
    }
    await waitFor(async () => (await d.api('GET', `/browsers/${own.session_id}`)).status === 404, 30_000, 'the own session to end');
  });

  test('a snapshot of 20,000 items answers at most 100,000 characters, with the whole of it in a session file and how to ask for less', async () => {
    const client = await httpClient('big-page');
    try {
      const nav = await call(client, 'browser_navigate', { url: `${pages.url}/many-items.html` });
      assert.ok(!nav.isError, textOf(nav));
      const snap = await call(client, 'browser_snapshot');
      const text = textOf(snap);
      const total = snap.content.reduce((n, c) => n + (c.text?.length ?? 0), 0);
      assert.ok(total <= 101_500, `${total} characters`);
      assert.match(text, /Item number 1\b/);
      assert.doesNotMatch(text, /Item number 19999\b/);
      const file = /the session's file (\S+\.md)/.exec(text)?.[1];
      assert.ok(file, text.slice(-1000));
      assert.match(text, /depth/);
      // The file holds all of it, for the fs tools.
      const own = await ownSessionOf('big-page');
      const wc = (await d.api('POST', `/browsers/${own.session_id}/process/exec`, { command: 'grep', args: ['-c', 'Item number', file!] })).body;
      assert.equal(Buffer.from(wc.stdout_b64, 'base64').toString().trim(), '20000');
      // A shallower snapshot fits whole.
      const shallow = textOf(await call(client, 'browser_snapshot', { depth: 1 }));
      assert.doesNotMatch(shallow, /Truncated/);
    } finally {
      await client.close();
    }
  });

  test('eight agents at once: each on its own session, seeing only its own page, each in watch and its live view', async () => {
    const clients = await Promise.all(Array.from({ length: 8 }, (_, i) => httpClient(`agent-${i}`)));
    try {
      const results = await Promise.allSettled(clients.map((c, i) => formLoop(c, String(i))));
      const failed = results.map((r, i) => (r.status === 'rejected' ? `agent ${i}: ${(r.reason as Error).message}` : '')).filter(Boolean);
      assert.deepEqual(failed, []);
      results.forEach((r, i) => {
        const text = (r as PromiseFulfilledResult<string>).value;
        for (let j = 0; j < 8; j++) if (j !== i) assert.doesNotMatch(text, new RegExp(`Agent form ${j}\\b`), `agent ${i} sees agent ${j}'s page`);
      });
      const owns = await Promise.all(clients.map((_, i) => ownSessionOf(`agent-${i}`)));
      assert.equal(new Set(owns.map((o) => o.session_id)).size, 8);
      const watch = (await d.api('GET', '/watch/snapshot')).body as { sessions: { session: { session_id: string } }[] };
      for (const o of owns)
        assert.ok(
          watch.sessions.some((w) => w.session.session_id === o.session_id),
          `${o.name} in watch`,
        );
      for (const o of owns) {
        const live = (await d.api('GET', `/browsers/${o.session_id}/live_view`)).body as { url: string };
        assert.equal((await fetch(live.url)).status, 200, `${o.name}'s live view`);
      }
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  test('tools/list stays under 40 kB; tool groups can be left out', async () => {
    const all = await httpClient('lister');
    const some = await httpClient('lister-page', '?tools=browsers,page');
    try {
      const { tools } = await all.listTools();
      const size = JSON.stringify(tools).length;
      assert.ok(size < 40_000, `tools/list is ${size} characters`);
      assert.ok(tools.length > 50, `${tools.length} tools`);
      const few = (await some.listTools()).tools.map((t) => t.name);
      assert.ok(few.includes('browser_snapshot') && few.includes('create_browser'));
      assert.ok(!few.includes('process_exec') && !few.includes('computer_click'), few.join(' '));
      // Playwright MCP's less used tools come when asked for by their group.
      assert.ok(!tools.some((t) => t.name === 'browser_drag'));
      const more = await httpClient('lister-more', '?tools=page,page-more');
      try {
        assert.ok((await more.listTools()).tools.some((t) => t.name === 'browser_drag'));
      } finally {
        await more.close();
      }
    } finally {
      await all.close();
      await some.close();
    }
  });
});
