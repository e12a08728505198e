/**
 * Faults a real machine has: a session's Chromium, Xvfb or x11vnc killed, the daemon killed under
 * load, a full disk. Each must end in a clear answer and a clean state, never a 5xx or an orphan.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { request } from 'node:http';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { children } from '../daemon/lib/proc-tree.js';
import { chromium } from 'playwright';
import {
  BACKGROUND_START_MS,
  callApi,
  cleanEnv,
  CLI,
  daemonPid,
  killDaemonHard,
  startTestDaemon,
  tornDown,
  waitFor,
  type TestDaemon,
} from './helpers/daemon.js';
import { execa } from 'execa';
import Kernel from '@onkernel/sdk';
import { deployFixtureApp } from './helpers/apps.js';

const comm = async (pid: number) => (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim();
const cmdline = async (pid: number) => (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replace(/\0/g, ' ');

/** Full Chromium's and the headless shell's command names (cut at 15 characters). */
const BROWSER_COMMS = ['chromium', 'chromium-headle'];

/** The session's processes whose command is `name` (for chromium: the browser's main process, of either build). */
async function processesOf(d: TestDaemon, id: string, name: string): Promise<number[]> {
  const found: number[] = [];
  for (const pid of await findMarkedProcesses(d.home, id)) {
    const own = await comm(pid);
    if (name === 'chromium' ? !BROWSER_COMMS.includes(own) : own !== name) continue;
    if (name === 'chromium' && (await cmdline(pid)).includes('--type=')) continue;
    found.push(pid);
  }
  return found;
}

/** Waits until the session has ended by itself and its teardown is done; none of its processes is left. */
async function endedWithoutProcesses(d: TestDaemon, id: string): Promise<void> {
  const ended = await waitFor(
    async () => {
      const r = await d.api('GET', `/browsers/${id}?include_deleted=true`);
      return r.body.deleted_at ? r : undefined;
    },
    15_000,
    'the session to end',
  );
  assert.equal(ended?.status, 200);
  await tornDown(d, id);
  assert.deepEqual(await findMarkedProcesses(d.home, id), []);
}

describe('a session process killed', () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon();
  });
  after(async () => {
    await d?.stop();
  });

  for (const name of ['chromium', 'Xvfb']) {
    test(`kill -9 of a headful session's ${name} ends the session (browser_exited) and leaves none of its processes`, async () => {
      const s = (await d.api('POST', '/browsers', { viewport: { width: 1024, height: 768 } })).body;
      const [pid] = await processesOf(d, s.session_id, name);
      assert.ok(pid, `the session's ${name} runs`);
      process.kill(pid, 'SIGKILL');
      // Requests racing the death: answered (or 404 once it is noticed), never a 5xx.
      const racing = await Promise.all([
        fetch(`${d.baseUrl}/browsers/${s.session_id}/computer/screenshot`, {
          method: 'POST',
          headers: { authorization: `Bearer ${d.apiKey}`, 'content-type': 'application/json' },
          body: '{}',
        }),
        d.api('POST', `/browsers/${s.session_id}/computer/click_mouse`, { x: 5, y: 5 }),
        d.api('GET', `/browsers/${s.session_id}/fs/list_files?path=/tmp`),
      ]);
      for (const r of racing) assert.ok([200, 204, 404].includes(r.status), `${r.status} while the ${name} died`);
      await endedWithoutProcesses(d, s.session_id);
      assert.equal((await d.api('GET', `/browsers/${s.session_id}`)).status, 404);
    });
  }

  test('browsers are forked by the launcher, not the daemon; kill -9 of the launcher ends its sessions, leaves no process, and the next create works', async () => {
    const launcherPid = async () => {
      for (const pid of await findMarkedProcesses(d.home, 'launcher')) if ((await cmdline(pid)).includes('launcher.mjs')) return pid;
      return undefined;
    };
    const s = (await d.api('POST', '/browsers', { headless: true })).body;
    const launcher = await launcherPid();
    assert.ok(launcher, 'the launcher runs');
    const [browser] = await processesOf(d, s.session_id, 'chromium');
    assert.ok(browser, "the session's chromium runs");
    // The marked ancestor of the browser (bubblewrap, or Chromium itself without it) is the launcher's child.
    const ancestors: number[] = [];
    for (let pid = browser; pid > 1; ) {
      const stat = await readFile(`/proc/${pid}/stat`, 'latin1');
      pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      ancestors.push(pid);
    }
    assert.ok(ancestors.includes(launcher), `the launcher ${launcher} is among the browser's ancestors ${ancestors.join(',')}`);
    // A headful session's display, window manager and VNC server are in its box, below the launcher too.
    const headful = (await d.api('POST', '/browsers', { viewport: { width: 1024, height: 768 } })).body;
    for (const name of ['Xvfb', 'matchbox-window', 'x11vnc']) {
      const [pid] = await processesOf(d, headful.session_id, name);
      assert.ok(pid, `the headful session's ${name} runs`);
      const above: number[] = [];
      for (let p = pid!; p > 1; ) {
        const stat = await readFile(`/proc/${p}/stat`, 'latin1');
        p = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        above.push(p);
      }
      assert.ok(above.includes(launcher), `the launcher ${launcher} is among ${name}'s ancestors ${above.join(',')}`);
    }
    assert.equal((await d.api('DELETE', `/browsers/${headful.session_id}`)).status, 204);

    process.kill(launcher, 'SIGKILL');
    await endedWithoutProcesses(d, s.session_id);

    const next = await d.api('POST', '/browsers', { headless: true });
    assert.equal(next.status, 200, JSON.stringify(next.body));
    const again = await launcherPid();
    assert.ok(again && again !== launcher, 'a new launcher runs');
    assert.equal((await d.api('DELETE', `/browsers/${next.body.session_id}`)).status, 204);
  });

  test('kill -9 of the CDP relay ends the connections it carried, and only them: the session lives on, their places are free, the next connect works through a new relay', async () => {
    const relayPid = async () => {
      for (const pid of await children(await daemonPid(d))) if ((await cmdline(pid)).includes('cdp-relay')) return pid;
      return undefined;
    };
    const admin = (await readFile(join(d.home, 'credentials', 'admin-token'), 'utf8')).trim();
    const websockets = async () => (await callApi(d.baseUrl, 'GET', '/admin/resources', undefined, admin)).body.connections.websockets as number;
    const s = (await d.api('POST', '/browsers', { headless: true })).body;
    try {
      const relay = await relayPid();
      assert.ok(relay, 'the relay runs, a child of the daemon');
      const before = await websockets();
      const browser = await chromium.connectOverCDP(s.cdp_ws_url);
      const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
      assert.equal(await page.evaluate(() => 1 + 1), 2);
      assert.equal(await websockets(), before + 1, 'the connection holds a place');
      const disconnected = new Promise<void>((r) => browser.once('disconnected', () => r()));
      process.kill(relay, 'SIGKILL');
      await disconnected;
      await waitFor(async () => (await websockets()) === before, 10_000, "the dead relay's connection to give its place back");
      assert.equal((await d.api('GET', `/browsers/${s.session_id}`)).status, 200, 'the session lives on');
      const again = await chromium.connectOverCDP(s.cdp_ws_url);
      try {
        const [p] = again.contexts()[0]!.pages();
        assert.equal(await p!.evaluate(() => 2 + 2), 4);
        const next = await relayPid();
        assert.ok(next && next !== relay, 'a new relay carries it');
      } finally {
        await again.close();
      }
    } finally {
      assert.equal((await d.api('DELETE', `/browsers/${s.session_id}`)).status, 204);
    }
  });

  test("kill -9 of a headful session's x11vnc: a new one serves the live view, the session lives on", async () => {
    const s = (await d.api('POST', '/browsers', { viewport: { width: 1024, height: 768 } })).body;
    try {
      const [vnc] = await processesOf(d, s.session_id, 'x11vnc');
      assert.ok(vnc, 'x11vnc runs');
      process.kill(vnc, 'SIGKILL');
      const replaced = await waitFor(async () => (await processesOf(d, s.session_id, 'x11vnc')).find((p) => p !== vnc), 15_000, 'a new x11vnc');
      assert.ok(replaced);
      assert.equal((await d.api('GET', `/browsers/${s.session_id}`)).body.deleted_at, undefined);
      const shot = await fetch(`${d.baseUrl}/browsers/${s.session_id}/computer/screenshot`, {
        method: 'POST',
        headers: { authorization: `Bearer ${d.apiKey}`, 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(shot.status, 200);
    } finally {
      await d.api('DELETE', `/browsers/${s.session_id}`);
      await tornDown(d, s.session_id);
    }
  });
});

describe('a client that goes away mid-upload', () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon();
  });
  after(async () => {
    await d?.stop();
  });

  /** Sends the headers and part of a body, then cuts the connection. */
  function cutUpload(path: string, headers: Record<string, string>, firstPart: Buffer): Promise<void> {
    return new Promise((resolve) => {
      const req = request(`${d.baseUrl}${path}`, {
        method: path.includes('write_file') ? 'PUT' : 'POST',
        headers: { authorization: `Bearer ${d.apiKey}`, ...headers },
      });
      req.on('error', () => resolve());
      req.write(firstPart, () =>
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 300),
      );
    });
  }

  test('write_file and upload cut off mid-body leave no file, temporary or partial, and no process', async () => {
    const s = (await d.api('POST', '/browsers', { headless: true })).body;
    try {
      const chunk = Buffer.alloc(2 * 1024 * 1024, 7);
      await cutUpload(
        `/browsers/${s.session_id}/fs/write_file?path=${encodeURIComponent('/tmp/partial.bin')}`,
        { 'content-type': 'application/octet-stream', 'content-length': String(20 * chunk.length) },
        chunk,
      );
      const boundary = 'cutcutcut';
      const head = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="files[0][dest_path]"\r\n\r\n/tmp/up.bin\r\n--${boundary}\r\nContent-Disposition: form-data; name="files[0][file]"; filename="up.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      );
      await cutUpload(
        `/browsers/${s.session_id}/fs/upload`,
        { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + 20 * chunk.length) },
        Buffer.concat([head, chunk]),
      );
      const listing = await waitFor(
        async () => {
          const files = (await d.api('GET', `/browsers/${s.session_id}/fs/list_files?path=/tmp`)).body as { name: string }[];
          return files.some((f) => /partial|up\.bin|rbrowse-/.test(f.name)) ? undefined : files;
        },
        10_000,
        'no trace of the cut uploads in /tmp',
      );
      assert.ok(listing);
      const running = [];
      for (const pid of await findMarkedProcesses(d.home, s.session_id)) if ((await comm(pid)) === 'cat') running.push(pid);
      assert.deepEqual(running, [], 'no writer left waiting for the rest');
      const log = await readFile(join(d.home, 'logs', 'daemon.log'), 'utf8');
      assert.doesNotMatch(log, /request failed/, 'no 5xx');
    } finally {
      await d.api('DELETE', `/browsers/${s.session_id}`);
      await tornDown(d, s.session_id);
    }
  });
});

describe('the daemon killed under load', () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon();
  });
  after(async () => {
    await d?.stop();
  });

  test('kill -9 while sessions run, a pool fills, an invocation runs and creates and reads are in flight: the restart finds a parsable state, no orphan, a refilled pool, the invocation failed', {
    timeout: 300_000,
  }, async () => {
    const kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0, timeout: 180_000 });
    await deployFixtureApp(kernel, 'sample');
    const running = await kernel.invocations.create({
      app_name: 'sample',
      version: 'latest',
      action_name: 'sleep',
      payload: '{"ms":600000}',
      async: true,
    });
    await waitFor(async () => (await kernel.invocations.retrieve(running.id)).status === 'running', 60_000, 'the invocation to run');
    const sessions = await Promise.all([
      d.api('POST', '/browsers', { headless: true }),
      d.api('POST', '/browsers', { viewport: { width: 1024, height: 768 } }),
    ]);
    const pool = (await d.api('POST', '/browser_pools', { name: 'faulty', size: 1, headless: true })).body;
    assert.ok(pool.id, JSON.stringify(pool));
    // Load that is still under way when the daemon dies.
    let stop = false;
    const load = (async () => {
      const answers: number[] = [];
      while (!stop) {
        const batch = await Promise.allSettled([
          d.api('POST', '/browsers', { headless: true }),
          d.api('GET', '/browsers'),
          d.api('PATCH', `/browsers/${sessions[0]!.body.session_id}`, { tags: { at: String(Date.now()) } }),
        ]);
        for (const r of batch) if (r.status === 'fulfilled') answers.push(r.value.status);
      }
      return answers;
    })();
    await new Promise((r) => setTimeout(r, 1500));
    await killDaemonHard(d);
    stop = true;
    const answers = await load;
    assert.ok(
      answers.every((s) => s < 500),
      `no 5xx before the kill: ${answers}`,
    );
    JSON.parse(await readFile(join(d.home, 'state.json'), 'utf8'));

    const started = await d.cli(['daemon', 'start']);
    assert.equal(started.exitCode, 0, started.stderr);
    d.baseUrl = started.stdout.trim();
    for (const s of sessions) {
      assert.deepEqual(await findMarkedProcesses(d.home, s.body.session_id), [], 'no orphan of a session from before');
      const got = await d.api('GET', `/browsers/${s.body.session_id}?include_deleted=true`);
      assert.ok(got.body.deleted_at, 'ended by the restart');
    }
    const invocation = (await d.api('GET', `/invocations/${running.id}`)).body;
    assert.equal(invocation.status, 'failed');
    assert.match(invocation.status_reason, /daemon stopped/);
    assert.deepEqual(await findMarkedProcesses(d.home, `invocation-${running.id}`), [], 'the action was killed');
    const live = (await d.api('GET', '/browsers')).body as { session_id: string; pool?: unknown }[];
    assert.ok(
      live.every((s) => s.pool),
      `only the pool's new browser runs: ${JSON.stringify(live.map((s) => s.session_id))}`,
    );
    await waitFor(
      async () => (await d.api('GET', `/browser_pools/${pool.id}`)).body.available_count === 1,
      BACKGROUND_START_MS,
      'the pool to refill',
    );
    const fresh = await d.api('POST', '/browsers', { headless: true });
    assert.equal(fresh.status, 200);
    const version = await fetch(fresh.body.cdp_ws_url.replace(/^ws/, 'http').replace('/browser/cdp?', '/browser/cdp/json/version?'));
    assert.equal(version.status, 200, 'a new session works');
    await d.api('DELETE', `/browser_pools/${pool.id}?force=true`);
  });
});

/** A small tmpfs for RBROWSE_HOME; null where this machine allows no mount. */
async function smallDisk(megabytes: number): Promise<{ dir: string; remove(): Promise<void> } | null> {
  const dir = await mkdtemp(join(tmpdir(), 'rbrowse-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m,mode=0700`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    await rm(dir, { recursive: true, force: true });
    return null;
  }
  return {
    dir,
    async remove() {
      execFileSync('umount', ['-l', dir]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Appends to `file` until the disk is full (again: a running browser frees and takes space as it goes). */
async function fill(file: string): Promise<void> {
  const fh = await open(file, 'a');
  const chunk = Buffer.alloc(1024 * 1024, 1);
  try {
    for (;;) await fh.write(chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    await fh.close().catch(() => {});
  }
  // The last partial megabyte too.
  const small = await open(file, 'a');
  try {
    for (;;) await small.write(Buffer.alloc(4096, 1));
  } catch {
    // Full.
  } finally {
    await small.close().catch(() => {});
  }
}

describe('a full disk', () => {
  let disk: Awaited<ReturnType<typeof smallDisk>>;
  let baseUrl = '';
  let key = '';
  let env: Record<string, string> = {};
  before(async () => {
    disk = await smallDisk(96);
    if (!disk) return;
    // Each session's writable directories are a disk of their own, 32 MiB here.
    env = { ...cleanEnv(disk.dir), RBROWSE_SESSION_DISK: '32m' };
    const started = await execa(CLI, ['daemon', 'start'], { env, extendEnv: false, reject: false });
    assert.equal(started.exitCode, 0, started.stderr);
    baseUrl = started.stdout.trim();
    key = (await execa(CLI, ['auth', 'token'], { env, extendEnv: false })).stdout.trim();
  });
  after(async () => {
    if (!disk) return;
    await execa(CLI, ['daemon', 'stop'], { env, extendEnv: false, reject: false });
    const left = await findMarkedProcesses(disk.dir);
    for (const pid of left) process.kill(pid, 'SIGKILL');
    await disk.remove();
    assert.deepEqual(left, [], 'the daemon left nothing running');
  });

  test('a session that fills its own disk gets 503s; the host disk and other sessions never notice', async (t) => {
    if (!disk) return t.skip('this machine allows no tmpfs mount');
    const api = (method: string, path: string, body?: unknown) => callApi(baseUrl, method, path, body, key);
    const [s, other] = [(await api('POST', '/browsers', { headless: true })).body, (await api('POST', '/browsers', { headless: true })).body];
    assert.ok(s.session_id && other.session_id, JSON.stringify(s));
    const hostFree = statfsSync('/').bavail * statfsSync('/').bsize;
    // Its code writes until the disk is full: 64 MiB asked, its 32 MiB given.
    const dd = await api('POST', `/browsers/${s.session_id}/process/exec`, {
      command: 'sh',
      args: ['-c', 'dd if=/dev/zero of=/home/kernel/fill bs=1M count=64 2>&1; df -k /home/kernel | tail -1'],
    });
    assert.match(Buffer.from(dd.body.stdout_b64, 'base64').toString(), /No space left on device/);
    const used = Number(Buffer.from(dd.body.stdout_b64, 'base64').toString().trim().split('\n').pop()!.split(/\s+/)[2]);
    assert.ok(used <= 33 * 1024, `at most its 32 MiB, ${used} KiB`);
    assert.ok(hostFree - statfsSync('/').bavail * statfsSync('/').bsize < 16 * 1024 ** 2, 'none of it landed on the host disk');
    const write = await fetch(`${baseUrl}/browsers/${s.session_id}/fs/write_file?path=${encodeURIComponent('/home/kernel/big.bin')}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
      body: new Uint8Array(2 * 1024 * 1024),
    });
    const writeBody = await write.json();
    assert.equal(write.status, 503, JSON.stringify(writeBody));
    assert.equal(writeBody.code, 'service_unavailable');
    assert.match(writeBody.message, /no space left on the disk holding the session/);
    const otherWrite = await fetch(`${baseUrl}/browsers/${other.session_id}/fs/write_file?path=${encodeURIComponent('/home/kernel/ok.bin')}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
      body: new Uint8Array(2 * 1024 * 1024),
    });
    assert.equal(otherWrite.status, 204, 'another session writes as before');
    await api('DELETE', `/browsers/${other.session_id}`);
  });

  test('state writes that need space get 503 naming the disk, reads work, state stays parsable, and all works once space is back', async (t) => {
    if (!disk) return t.skip('this machine allows no tmpfs mount');
    const api = (method: string, path: string, body?: unknown) => callApi(baseUrl, method, path, body, key);
    const earlier = new Set(((await api('GET', '/browsers')).body as { session_id: string }[]).map((x) => x.session_id));
    const s = (await api('POST', '/browsers', { headless: true })).body;
    assert.ok(s.session_id, JSON.stringify(s));
    const filler = join(disk.dir, 'filler');
    await fill(filler);
    await fill(filler);
    // A state document that grows by more than the page a write frees.
    const big = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, 'v'.repeat(200)]));
    await fill(filler);
    const patch = await api('PATCH', `/browsers/${s.session_id}`, { tags: big });
    assert.equal(patch.status, 503, patch.text);
    assert.match(patch.body.message, /no space left on the disk holding RBROWSE_HOME/);
    const unchanged = (await api('GET', `/browsers/${s.session_id}`)).body;
    assert.equal(unchanged.tags, undefined, 'a PATCH answered with an error left nothing of itself behind');
    await fill(filler);
    const during = await api('POST', '/browsers', { headless: true });
    assert.ok(during.status === 200 || during.status === 503, `${during.status} ${during.text}`);
    assert.equal((await api('GET', '/browsers')).status, 200, 'reads still answer');
    JSON.parse(await readFile(join(disk.dir, 'state.json'), 'utf8'));

    await rm(filler);
    const created = await api('POST', '/browsers', { headless: true });
    assert.equal(created.status, 200, created.text);
    const renamed = await api('PATCH', `/browsers/${s.session_id}`, { name: 'renamed' });
    assert.equal(renamed.status, 200, renamed.text);
    const expected = [s.session_id, created.body.session_id, ...(during.status === 200 ? [during.body.session_id] : [])];
    const list = ((await api('GET', '/browsers')).body as { session_id: string }[]).filter((x) => !earlier.has(x.session_id));
    assert.deepEqual(list.map((x) => x.session_id).sort(), expected.sort(), 'no half-made session is left from the full disk');
    for (const id of expected) await api('DELETE', `/browsers/${id}`);
  });
});
