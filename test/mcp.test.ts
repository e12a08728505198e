/**
 * The MCP server, driven by the official MCP client as an agent's editor drives it: over stdio
 * (`rbrowse mcp`, what `rbrowse mcp install` configures) and over streamable HTTP (the daemon's
 * /mcp). A session is created, navigated with Playwright code, looked at through a screenshot
 * that is decoded, written and read, and deleted, all through tools.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PNG } from 'pngjs';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';

let d: TestDaemon;
before(async () => {
  d = await startTestDaemon();
});
after(async () => {
  await d?.stop();
});

type Content = { type: string; text?: string; data?: string; mimeType?: string };
type Answer = { content: Content[]; isError?: boolean };

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Answer> {
  return (await client.callTool({ name, arguments: args })) as Answer;
}

/** A tool's JSON answer; the test fails with the tool's own words when it answered an error. */
async function callJson(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const answer = await call(client, name, args);
  assert.ok(!answer.isError, `${name}: ${answer.content[0]?.text}`);
  return JSON.parse(answer.content[0]!.text!);
}

const stdioClient = async (env: Record<string, string>) => {
  const client = new Client({ name: 'rbrowse-test', version: '1' });
  await client.connect(new StdioClientTransport({ command: join(process.cwd(), 'bin/rbrowse'), args: ['mcp'], env, stderr: 'pipe' }));
  return client;
};

const httpClient = async (key: string) => {
  const client = new Client({ name: 'rbrowse-test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${d.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
  );
  return client;
};

/** What an agent does with a browser, start to end. */
async function endToEnd(client: Client): Promise<void> {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const name of [
    'create_browser',
    'list_browsers',
    'get_browser',
    'delete_browser',
    'execute_playwright_code',
    'browser_repl',
    'take_screenshot',
    'computer_click',
    'computer_type_text',
    'fs_read_file',
    'fs_write_file',
    'fs_list_files',
    'process_exec',
    'acquire_browser',
    'release_browser',
    'list_profiles',
    'setup_profile',
    'list_replays',
    'invoke_action',
    'get_live_view_url',
  ]) {
    assert.ok(names.includes(name), `tool ${name} is listed`);
  }
  // The input schemas are the routes' own: create_browser takes the API's options.
  const create = tools.find((t) => t.name === 'create_browser')!;
  assert.equal((create.inputSchema.properties as any).headless.type, 'boolean');
  assert.equal((create.inputSchema.properties as any).viewport.type, 'object');

  const browser = await callJson(client, 'create_browser', { headless: true, viewport: { width: 1024, height: 768 }, tags: { by: 'agent' } });
  assert.match(browser.cdp_ws_url, /^ws:/);
  const id = browser.session_id as string;
  assert.ok((await callJson(client, 'list_browsers')).some((b: any) => b.session_id === id));
  // A deepObject filter reaches the API as one: only the tagged session, none for another tag.
  assert.deepEqual(
    (await callJson(client, 'list_browsers', { tags: { by: 'agent' } })).map((b: any) => b.session_id),
    [id],
  );
  assert.deepEqual(await callJson(client, 'list_browsers', { tags: { by: 'someone-else' } }), []);

  const page = `<html><head><title>from mcp</title></head><body style="margin:0;background:rgb(255,0,128)"><h1>MCP</h1></body></html>`;
  const run = await callJson(client, 'execute_playwright_code', {
    session_id: id,
    code: `await page.goto('data:text/html,' + encodeURIComponent(${JSON.stringify(page)})); return await page.title();`,
  });
  assert.equal(run.success, true, JSON.stringify(run));
  assert.equal(run.result, 'from mcp');

  const shot = await call(client, 'take_screenshot', { session_id: id });
  assert.ok(!shot.isError, shot.content[0]?.text);
  assert.equal(shot.content[0]!.type, 'image');
  assert.equal(shot.content[0]!.mimeType, 'image/png');
  const png = PNG.sync.read(Buffer.from(shot.content[0]!.data!, 'base64'));
  assert.deepEqual([png.width, png.height], [1024, 768]);
  // A pixel below the heading: the page's own colour, so the image is this page's.
  const at = (png.width * 600 + 512) * 4;
  assert.deepEqual([...png.data.subarray(at, at + 3)], [255, 0, 128]);

  // The REPL answers with its output in order, text and images as MCP content; its bindings stay.
  const cell = await call(client, 'browser_repl', {
    session_id: id,
    code: 'const info = await pageInfo(); repl.write(info.title); await repl.emitImage({ path: await captureScreenshot() }); console.log("done")',
  });
  assert.equal(cell.isError, undefined, cell.content.at(-1)?.text);
  assert.deepEqual(
    cell.content.map((c) => c.type),
    ['text', 'image', 'text'],
  );
  assert.equal(cell.content[0]!.text, 'from mcp');
  assert.equal(cell.content[1]!.mimeType, 'image/png');
  assert.equal(cell.content[2]!.text, 'done\n');
  const failed = await call(client, 'browser_repl', { session_id: id, code: 'repl.write(info.url); throw new Error("no such thing")' });
  assert.equal(failed.isError, true);
  assert.equal(failed.content[0]!.text, `data:text/html,${encodeURIComponent(page)}`, 'info is still bound');
  assert.match(failed.content.at(-1)!.text!, /^error: no such thing/);

  assert.equal(
    (await call(client, 'fs_write_file', { session_id: id, path: '/tmp/mcp/note.txt', content: 'hello from an agent' })).isError,
    undefined,
  );
  const read = await call(client, 'fs_read_file', { session_id: id, path: '/tmp/mcp/note.txt' });
  assert.equal(read.content[0]!.text, 'hello from an agent');
  const exec = await callJson(client, 'process_exec', { session_id: id, command: 'cat', args: ['/tmp/mcp/note.txt'] });
  assert.deepEqual([exec.exit_code, exec.stdout], [0, 'hello from an agent']);

  // Errors are the tool's answer, in the API's words, not a broken protocol.
  const bad = await call(client, 'create_browser', { timeout_seconds: 1 });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0]!.text!, /^400 /);
  const unknown = await call(client, 'get_browser', { session_id: id, colour: 'red' });
  assert.equal(unknown.isError, true);
  assert.match(unknown.content[0]!.text!, /unknown input colour/);

  assert.equal((await call(client, 'delete_browser', { session_id: id })).isError, undefined);
  const gone = await call(client, 'get_browser', { session_id: id });
  assert.equal(gone.isError, true);
  assert.match(gone.content[0]!.text!, /^404 /);
}

describe('MCP', () => {
  test('over stdio (rbrowse mcp), the official client drives a session end to end', async () => {
    const client = await stdioClient(d.env);
    try {
      await endToEnd(client);
    } finally {
      await client.close();
    }
  });

  test("over streamable HTTP (/mcp), behind the API key, with the caller's organization", async () => {
    const refused = await fetch(`${d.baseUrl}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(refused.status, 401);
    assert.equal((await refused.json()).code, 'unauthorized');

    const client = await httpClient(d.apiKey);
    try {
      await endToEnd(client);
      // Another organization's agent sees nothing of this one's.
      const mine = await callJson(client, 'create_browser', { headless: true });
      const otherKey = (await d.cli(['auth', 'create-key', '--org', 'mcp-other'])).stdout.trim();
      const other = await httpClient(otherKey);
      try {
        assert.deepEqual(await callJson(other, 'list_browsers'), []);
        const stolen = await call(other, 'delete_browser', { session_id: mine.session_id });
        assert.equal(stolen.isError, true);
        assert.match(stolen.content[0]!.text!, /^404 /);
      } finally {
        await other.close();
      }
      assert.equal((await d.api('GET', `/browsers/${mine.session_id}`)).status, 200, 'still there');
      await callJson(client, 'list_browsers');
      assert.equal((await call(client, 'delete_browser', { session_id: mine.session_id })).isError, undefined);
    } finally {
      await client.close();
    }
  });

  test("Playwright's own MCP server (@playwright/mcp --cdp-endpoint) drives a session, as the README shows", async () => {
    const session = (await d.api('POST', '/browsers', { headless: true })).body;
    const client = new Client({ name: 'rbrowse-test', version: '1' });
    // It keeps its own files (snapshots, logs) in its working directory.
    const cwd = await mkdtemp(join(tmpdir(), 'rbrowse-pw-mcp-'));
    try {
      const cli = join(process.cwd(), 'node_modules/@playwright/mcp/cli.js');
      await client.connect(
        new StdioClientTransport({ command: process.execPath, args: [cli, '--cdp-endpoint', session.cdp_ws_url], cwd, stderr: 'pipe' }),
      );
      const html = '<title>pw mcp</title><h1>Driven by Playwright MCP</h1>';
      const nav = await call(client, 'browser_navigate', { url: `data:text/html,${encodeURIComponent(html)}` });
      assert.ok(!nav.isError, nav.content[0]?.text);
      const snapshot = await call(client, 'browser_snapshot');
      assert.match(snapshot.content.map((c) => c.text ?? '').join('\n'), /Driven by Playwright MCP/);
      // The page it drove is the session's own.
      const title = await d.api('POST', `/browsers/${session.session_id}/playwright/execute`, { code: 'return await page.title()' });
      assert.equal(title.body.result, 'pw mcp');
    } finally {
      await client.close();
      await d.api('DELETE', `/browsers/${session.session_id}`);
      await rm(cwd, { recursive: true, force: true });
    }
  });

  test('mcp install writes each client its own format, keeps what was there, and replaces its own entry', async () => {
    const home = await mkdtemp(join(tmpdir(), 'rbrowse-mcp-'));
    const env = { ...d.env, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), CODEX_HOME: join(home, '.codex') };
    try {
      await writeFile(join(home, '.mcp.json'), JSON.stringify({ mcpServers: { other: { command: 'other' } } }));
      // Claude Code's and VS Code's files are the project's: the current directory's.
      const run = (client: string) => d.cli(['mcp', 'install', client], { env, cwd: home });
      for (const client of ['claude-code', 'claude-desktop', 'cursor', 'vscode', 'windsurf', 'zed', 'codex']) {
        const r = await run(client);
        assert.equal(r.exitCode, 0, `${client}: ${r.stderr}`);
      }
      const json = async (path: string) => JSON.parse(await readFile(join(home, path), 'utf8'));
      const command = join(process.cwd(), 'bin/rbrowse');
      const claude = await json('.mcp.json');
      assert.deepEqual(claude.mcpServers.other, { command: 'other' }, 'what was there is kept');
      assert.equal(claude.mcpServers.rbrowse.command, command);
      assert.deepEqual(claude.mcpServers.rbrowse.args, ['mcp']);
      assert.equal(claude.mcpServers.rbrowse.env.RBROWSE_HOME, d.home);
      assert.equal((await json('.config/Claude/claude_desktop_config.json')).mcpServers.rbrowse.command, command);
      assert.equal((await json('.cursor/mcp.json')).mcpServers.rbrowse.command, command);
      assert.equal((await json('.vscode/mcp.json')).servers.rbrowse.type, 'stdio');
      assert.equal((await json('.codeium/windsurf/mcp_config.json')).mcpServers.rbrowse.command, command);
      assert.equal((await json('.config/zed/settings.json')).context_servers.rbrowse.command, command);
      // Twice is the same as once.
      assert.equal((await run('codex')).exitCode, 0);
      const toml = await readFile(join(home, '.codex/config.toml'), 'utf8');
      assert.equal(toml.match(/\[mcp_servers\.rbrowse\]/g)?.length, 1);
      assert.match(toml, new RegExp(`command = ${JSON.stringify(command).replace(/[/.]/g, '\\$&')}`));
      // A file it cannot merge safely is left alone, and the user told what to add.
      await writeFile(join(home, '.cursor/mcp.json'), '// mine\n{}');
      const refused = await run('cursor');
      assert.notEqual(refused.exitCode, 0);
      assert.match(refused.stderr, /not plain JSON/);
      assert.equal(await readFile(join(home, '.cursor/mcp.json'), 'utf8'), '// mine\n{}');
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});

test("the page tools rbrowse lists are @playwright/mcp's own, as the installed version declares them (RBROWSE_UPDATE_PAGE_TOOLS=1 rewrites the copy)", async () => {
  const { createConnection } = await import('@playwright/mcp');
  const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
  const server = await createConnection({ browser: { cdpEndpoint: 'http://127.0.0.1:1' } });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  const client = new Client({ name: 'rbrowse-test', version: '1' });
  await client.connect(b);
  try {
    const { tools } = await client.listTools();
    const file = join(process.cwd(), 'daemon/in-session/page-tools/tools.json');
    if (process.env.RBROWSE_UPDATE_PAGE_TOOLS === '1') await writeFile(file, `${JSON.stringify(tools, null, 2)}\n`);
    assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), JSON.parse(JSON.stringify(tools)));
  } finally {
    await client.close();
  }
});
