import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { execa } from 'execa';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { callApi, cleanEnv, CLI, startTestDaemon, waitFor } from './helpers/daemon.js';
import { startCpuHog } from './helpers/cpu-hog.js';

test('daemon stop closes live sessions with Browser.close and leaves nothing behind', async () => {
  const d = await startTestDaemon();
  try {
    const created = [
      await d.api('POST', '/browsers', { headless: true }),
      await d.api('POST', '/browsers', { viewport: { width: 1440, height: 900 } }),
    ];
    for (const c of created) assert.equal(c.status, 200, c.text);
    const [headless, headful] = created.map((c) => c.body);
    for (const s of [headless, headful]) assert.ok(existsSync(join(d.home, 'sessions', s.session_id)));
    const stop = await d.cli(['daemon', 'stop']);
    assert.equal(stop.exitCode, 0, stop.stderr);
    assert.deepEqual(await findMarkedProcesses(d.home), [], 'no Chromium, Xvfb or helper survives');
    for (const s of [headless, headful]) {
      assert.equal(existsSync(join(d.home, 'sessions', s.session_id)), false, 'session directories are removed');
    }
    const log = (await readFile(join(d.home, 'logs', 'daemon.log'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    for (const s of [headless, headful]) {
      const ended = log.find((l) => l.msg === 'session ended' && l.session === s.session_id);
      assert.ok(ended, `the end of ${s.session_id} is logged`);
      assert.equal(ended.reason, 'daemon_stop');
      assert.equal(ended.graceful, true, 'Chromium exited on Browser.close, not by a kill');
    }
    const state = JSON.parse(await readFile(join(d.home, 'state.json'), 'utf8'));
    assert.equal(state.sessions.filter((s: any) => !s.deleted_at).length, 0, 'every session recorded as ended');
  } finally {
    await d.stop();
  }
});

test('creates in flight when the daemon stops are ended too, never orphaned', async () => {
  const d = await startTestDaemon();
  try {
    const creates = [1, 2, 3].map(() => d.api('POST', '/browsers', { headless: true }).catch(() => null));
    await new Promise((r) => setTimeout(r, 60));
    const stop = await d.cli(['daemon', 'stop']);
    assert.equal(stop.exitCode, 0, stop.stderr);
    const answers = await Promise.all(creates);
    for (const a of answers) assert.ok(a === null || [200, 503].includes(a.status), `answered ${a?.status}`);
    assert.deepEqual(await findMarkedProcesses(d.home), [], 'no browser outlives the daemon');
    const state = JSON.parse(await readFile(join(d.home, 'state.json'), 'utf8'));
    assert.equal(state.sessions.filter((s: any) => !s.deleted_at).length, 0);
  } finally {
    await d.stop();
  }
});

test('--foreground serves until SIGTERM and logs to stderr', async () => {
  const home = await mkdtemp(join(tmpdir(), 'rbrowse-fg-'));
  const child = execa(CLI, ['daemon', 'start', '--foreground', '--port', '0'], {
    env: cleanEnv(home),
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
  });
  try {
    const info = await waitFor(async () => JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8').catch(() => 'null')), 20_000, 'daemon.json');
    assert.equal(info.pid, child.pid, 'the foreground process is the daemon');
    assert.equal((await callApi(info.base_url, 'GET', '/health')).status, 200);
    const key = (await readFile(join(home, 'credentials', 'api-key'), 'utf8')).trim();
    const s = await callApi(info.base_url, 'POST', '/browsers', { headless: true }, key);
    assert.equal(s.status, 200);
    child.kill('SIGTERM');
    const result = await child;
    assert.equal(result.exitCode, 0);
    const stderr = String(result.stderr);
    assert.match(stderr, /"msg":"daemon listening"/);
    assert.match(stderr, /"msg":"session ended".*"reason":"daemon_stop"/);
    assert.match(stderr, /"msg":"daemon stopped"/);
    assert.equal(existsSync(join(home, 'daemon.json')), false);
    assert.deepEqual(await findMarkedProcesses(home), []);
  } finally {
    child.kill('SIGKILL');
    await rm(home, { recursive: true, force: true });
  }
});

test('two daemons with different homes and ports run side by side', async () => {
  const a = await startTestDaemon();
  const b = await startTestDaemon();
  try {
    assert.notEqual(a.baseUrl, b.baseUrl);
    assert.notEqual(a.apiKey, b.apiKey);
    const sa = await a.api('POST', '/browsers', {});
    const sb = await b.api('POST', '/browsers', {});
    assert.equal(sa.status, 200, sa.text);
    assert.equal(sb.status, 200, sb.text);
    // Each daemon knows only its own keys and sessions.
    assert.equal((await callApi(b.baseUrl, 'GET', `/browsers/${sa.body.session_id}`, undefined, a.apiKey)).status, 401);
    assert.equal((await b.api('GET', `/browsers/${sa.body.session_id}`)).status, 404);
    assert.equal((await a.api('DELETE', `/browsers/${sa.body.session_id}`)).status, 204);
    assert.equal((await b.api('GET', `/browsers/${sb.body.session_id}`)).body.deleted_at, undefined);
  } finally {
    await a.stop();
    await b.stop();
  }
});

test('under a CPU hog, daemon stop ends sessions, standby and pool browsers, exits 0 and leaves nothing', { timeout: 300_000 }, async (t) => {
  const d = await startTestDaemon({ env: { RBROWSE_STANDBY: 'headless=1' } });
  let hog: { stop(): Promise<void> } | undefined;
  try {
    for (const body of [{ headless: true }, { headless: true }, { viewport: { width: 1024, height: 768 } }]) {
      const created = await d.api('POST', '/browsers', body);
      assert.equal(created.status, 200, created.text);
    }
    const pool = await d.api('POST', '/browser_pools', { name: 'busy', size: 2, headless: true, fill_rate_per_minute: 100 });
    assert.equal(pool.status, 200, pool.text);
    await waitFor(async () => (await d.api('GET', '/browser_pools/busy')).body.available_count >= 1, 120_000, 'a pool browser to be idle');
    hog = startCpuHog({ maxSeconds: 180 });
    const started = Date.now();
    const stop = await d.cli(['daemon', 'stop']);
    t.diagnostic(`daemon stop under the hog took ${Date.now() - started} ms`);
    assert.equal(stop.exitCode, 0, stop.stderr);
    assert.deepEqual(await findMarkedProcesses(d.home), [], 'no browser, box or helper survives the stop');
    const state = JSON.parse(await readFile(join(d.home, 'state.json'), 'utf8'));
    assert.equal(state.sessions.filter((s: any) => !s.deleted_at).length, 0, 'every session recorded as ended');
  } finally {
    await hog?.stop();
    await d.stop();
  }
});
