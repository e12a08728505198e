import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { chromium } from 'playwright';
import puppeteer from 'puppeteer-core';
import WebSocket from 'ws';
import { readFile } from 'node:fs/promises';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { upgradeStatus, waitFor } from './helpers/daemon.js';
import { sdkDaemonWithFixtures } from './helpers/fixtures.js';

const env = sdkDaemonWithFixtures();

/** The session's BiDi mapper processes (Node names its main thread, so comm is no help). */
async function mappers(sessionId: string): Promise<number[]> {
  const pids = await findMarkedProcesses(env.d.home, sessionId);
  const lines = await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')));
  return pids.filter((_, i) => {
    const [program, script] = lines[i]!.split('\0');
    return program!.endsWith('/node') && script!.endsWith('/bidi-runner.mjs');
  });
}

/** A raw BiDi conversation: sends each command and collects its answer. */
async function bidiCommands(url: string, commands: { method: string; params: object }[]): Promise<any[]> {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const answers: any[] = [];
  try {
    for (const [i, c] of commands.entries()) {
      const answer = new Promise<any>((resolve) => {
        const onMessage = (data: WebSocket.RawData) => {
          const m = JSON.parse(data.toString());
          if (m.id !== i + 1) return;
          ws.off('message', onMessage);
          resolve(m);
        };
        ws.on('message', onMessage);
      });
      ws.send(JSON.stringify({ id: i + 1, ...c }));
      answers.push(await answer);
    }
  } finally {
    ws.close();
  }
  return answers;
}

describe('WebDriver BiDi (webdriver_ws_url)', () => {
  test("a BiDi client (Puppeteer's WebDriver BiDi mode) drives the session's own browser", async () => {
    const b = await env.kernel.browsers.create({ headless: true });
    const jwt = new URL(b.cdp_ws_url).searchParams.get('jwt');
    assert.equal(new URL(b.webdriver_ws_url).searchParams.get('jwt'), jwt, 'the same jwt as cdp_ws_url');
    assert.equal(new URL(b.webdriver_ws_url).pathname, '/browser/webdriver/session');

    const bidi = await puppeteer.connect({ browserWSEndpoint: b.webdriver_ws_url, protocol: 'webDriverBiDi' });
    const page = (await bidi.pages())[0] ?? (await bidi.newPage());
    await page.goto(`${env.fixtures.url}/hello.html`);
    const title = await page.evaluate(() => document.title);
    assert.ok(title.length > 0);
    // The page BiDi navigated is the one a CDP client of the session sees.
    const cdp = await chromium.connectOverCDP(b.cdp_ws_url);
    try {
      const urls = cdp.contexts().flatMap((c) => c.pages().map((p) => p.url()));
      assert.ok(urls.includes(`${env.fixtures.url}/hello.html`), urls.join(', '));
    } finally {
      await cdp.close();
    }
    // A BiDi browser.close ends that connection, never the session.
    await bidi.close();
    const again = await env.kernel.browsers.retrieve(b.session_id);
    assert.equal(again.deleted_at, undefined);
    const [, tree] = await bidiCommands(b.webdriver_ws_url, [
      { method: 'session.new', params: { capabilities: {} } },
      { method: 'browsingContext.getTree', params: {} },
    ]);
    assert.equal(tree.type, 'success', JSON.stringify(tree));
    assert.ok(
      tree.result.contexts.some((c: { url: string }) => c.url === `${env.fixtures.url}/hello.html`),
      JSON.stringify(tree.result),
    );
    await env.kernel.browsers.deleteByID(b.session_id);
  });

  test('session.status and session.new answer a raw client; a bad jwt is refused before anything starts', async () => {
    const b = await env.kernel.browsers.create({ headless: true });
    const [status, created] = await bidiCommands(b.webdriver_ws_url, [
      { method: 'session.status', params: {} },
      { method: 'session.new', params: { capabilities: {} } },
    ]);
    assert.equal(status.type, 'success');
    assert.equal(created.type, 'success', JSON.stringify(created));
    assert.match(created.result.capabilities.browserName, /Chrome/);
    const bad = new URL(b.webdriver_ws_url);
    bad.searchParams.set('jwt', 'nope');
    assert.equal(await upgradeStatus(bad.toString()), 401);
    // Each connection's mapper ends with it.
    await waitFor(async () => (await mappers(b.session_id)).length === 0, 10_000, 'the mapper to end');
    await env.kernel.browsers.deleteByID(b.session_id);
    assert.equal(await upgradeStatus(b.webdriver_ws_url), 404);
  });

  test('deleting the session closes its BiDi connections', async () => {
    const b = await env.kernel.browsers.create({ headless: true });
    const ws = new WebSocket(b.webdriver_ws_url);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const closed = new Promise<number>((resolve) => ws.once('close', resolve));
    // Its mapper runs in the session, as one of its processes.
    assert.equal((await mappers(b.session_id)).length, 1);
    await env.kernel.browsers.deleteByID(b.session_id);
    assert.ok([1000, 1001, 1006].includes(await closed));
  });
});
