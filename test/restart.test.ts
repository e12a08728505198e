import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { findMarkedProcesses, isAlive } from '../daemon/lib/procs.js';
import { sleep, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

let d: TestDaemon;
before(async () => {
  d = await startTestDaemon();
});
after(async () => {
  await d?.stop();
});

async function daemonPid(): Promise<number> {
  const status = JSON.parse((await d.cli(['daemon', 'status', '--json'])).stdout);
  // A daemon that went away by itself says why in its log's last lines.
  const log = status.running ? '' : await readFile(join(d.home, 'logs', 'daemon.log'), 'utf8').catch((err: Error) => String(err));
  assert.equal(status.running, true, `the daemon is not running; the end of its log:\n${log.split('\n').slice(-30).join('\n')}`);
  return status.pid;
}

async function killDaemonHard(): Promise<void> {
  const pid = await daemonPid();
  process.kill(pid, 'SIGKILL');
  await waitFor(() => !isAlive(pid), 5000, 'the daemon to die');
}

const readState = async () => JSON.parse(await readFile(join(d.home, 'state.json'), 'utf8'));

test('after kill -9 with live sessions, nothing of them is left once the daemon is back, and the sessions are ended', async () => {
  const headless = (await d.api('POST', '/browsers', { headless: true })).body;
  const headful = (await d.api('POST', '/browsers', { viewport: { width: 1024, height: 768 } })).body;
  await killDaemonHard();

  const state = await readState();
  assert.equal(state.sessions.filter((s: any) => !s.deleted_at).length, 2, 'state parses and has both live sessions');
  // The daemon's launcher outlives it only to close the boxes' browsers and end them (their disks
  // kept for the next daemon); whatever is still running when the next daemon starts, it reaps.

  // Any command restarts the daemon; it reaps before it serves.
  const ls = await d.cli(['ls', '--json']);
  assert.equal(ls.exitCode, 0, ls.stderr);
  assert.deepEqual(JSON.parse(ls.stdout), [], 'no session is active after the restart');
  d.baseUrl = JSON.parse((await d.cli(['daemon', 'status', '--json'])).stdout).base_url;
  assert.deepEqual(await findMarkedProcesses(d.home), [], 'every orphan was killed');
  for (const s of [headless, headful]) {
    const got = await d.api('GET', `/browsers/${s.session_id}?include_deleted=true`);
    assert.equal(got.status, 200);
    assert.ok(got.body.deleted_at, 'ended sessions are soft-deleted');
  }
  // and it still works
  const fresh = await d.api('POST', '/browsers', { headless: true });
  assert.equal(fresh.status, 200, fresh.text);
  assert.equal((await d.api('DELETE', `/browsers/${fresh.body.session_id}`)).status, 204);
});

test('kill -9 in the middle of writes never leaves a state file that fails to parse', async () => {
  for (let round = 0; round < 4; round++) {
    const pid = await daemonPid();
    let stop = false;
    // Keep the daemon writing: creates and deletes in flight when the kill lands.
    const churn = (async () => {
      while (!stop) {
        const s = await d.api('POST', '/browsers', { headless: true }).catch(() => null);
        if (s?.status === 200) await d.api('DELETE', `/browsers/${s.body.session_id}`).catch(() => null);
      }
    })();
    await sleep(300 + round * 250);
    process.kill(pid, 'SIGKILL');
    stop = true;
    await churn;
    await waitFor(() => !isAlive(pid), 5000, 'the daemon to die');
    const state = await readState();
    assert.equal(state.version, 1);
    assert.ok(Array.isArray(state.sessions));
    // restart (it reaps) and point the helper at the new port
    const started = await d.cli(['daemon', 'start']);
    assert.equal(started.exitCode, 0, started.stderr);
    d.baseUrl = started.stdout.trim();
    assert.deepEqual(await findMarkedProcesses(d.home), []);
  }
});
