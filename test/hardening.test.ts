import assert from 'node:assert/strict';
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LaunchAdmission, type AdmissionLimits } from '../daemon/sessions/admission.js';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { RateLimitError } from '../src/errors.js';
import { History } from '../daemon/lib/state/history.js';
import { Store } from '../daemon/lib/state/store.js';
import { DurableJsonFile } from '../daemon/lib/state/durable-file.js';
import { diskOf } from './helpers/box.js';
import { killDaemonHard, startTestDaemon, tornDown, waitFor, type TestDaemon } from './helpers/daemon.js';

const limits = (over: Partial<AdmissionLimits> = {}): AdmissionLimits => ({ launches: 1, queue: 10, waitMs: 10_000, reserveBytes: 0, ...over });
const tick = () => new Promise((r) => setImmediate(r));

describe('admission control (logic)', () => {
  test('launches beyond the limit wait for a turn, and get one when a launch ends', async () => {
    const a = new LaunchAdmission(limits({ launches: 2 }));
    const r1 = await a.acquire('o');
    const r2 = await a.acquire('o');
    let third = false;
    const p3 = a.acquire('o').then((r) => ((third = true), r));
    await tick();
    assert.equal(third, false, 'a third launch waits while two run');
    assert.deepEqual(a.stats(), { launching: 2, queued: 1, limit: 2 });
    r1();
    (await p3)();
    r2();
    assert.deepEqual(a.stats(), { launching: 0, queued: 0, limit: 2 });
  });

  test('a full queue refuses at once with 429 and a Retry-After; a wait that runs out is refused too', async () => {
    const a = new LaunchAdmission(limits({ queue: 1, waitMs: 150 }));
    const release = await a.acquire('o');
    const waiting = a.acquire('o');
    const refused = await a.acquire('o').catch((e: unknown) => e);
    assert.ok(refused instanceof RateLimitError);
    assert.equal(refused.status, 429);
    assert.equal(refused.code, 'rate_limit_exceeded');
    assert.ok(refused.retryAfterSeconds >= 1 && refused.retryAfterSeconds <= 60);
    const timedOut = await waiting.catch((e: unknown) => e);
    assert.ok(timedOut instanceof RateLimitError, 'the queued create is refused when its wait runs out');
    release();
    assert.deepEqual(a.stats(), { launching: 0, queued: 0, limit: 1 });
  });

  test('turns go round robin between organizations, and background launches only take turns no create wants', async () => {
    const a = new LaunchAdmission(limits());
    const order: string[] = [];
    const first = await a.acquire('a');
    const all = [
      ['bg', a.acquire('x', { background: true })],
      ['a1', a.acquire('a')],
      ['a2', a.acquire('a')],
      ['a3', a.acquire('a')],
      ['b1', a.acquire('b')],
    ] as const;
    for (const [name, p] of all) void p.then((release) => (order.push(name), setImmediate(release)));
    first();
    await Promise.all(all.map(([, p]) => p));
    await tick();
    assert.deepEqual(order, ['a1', 'b1', 'a2', 'a3', 'bg']);
  });

  test('closing refuses every waiting launch with 503 at once', async () => {
    const a = new LaunchAdmission(limits());
    const release = await a.acquire('o');
    const waiting = [a.acquire('o'), a.acquire('p'), a.acquire('x', { background: true })].map((p) => p.catch((e: unknown) => e));
    a.close();
    for (const err of await Promise.all(waiting)) assert.equal((err as { status?: number }).status, 503);
    release();
    assert.deepEqual(a.stats(), { launching: 0, queued: 0, limit: 1 });
  });

  test('no launch starts while memory is below the reserve; one starts once it frees', async () => {
    let free = 100;
    const a = new LaunchAdmission(limits({ launches: 4, reserveBytes: 500 }), () => free);
    let admitted = false;
    const p = a.acquire('o').then((r) => ((admitted = true), r));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(admitted, false);
    free = 1000;
    (await p)();
    assert.equal(admitted, true);
  });
});

describe('admission control (daemon)', () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon({ env: { RBROWSE_MAX_LAUNCHES: '1', RBROWSE_LAUNCH_QUEUE: '1' } });
  });
  after(async () => {
    await d?.stop();
  });

  test('creates beyond what the machine starts at once get 429 rate_limit_exceeded with Retry-After, never a 5xx', async () => {
    assert.equal((await d.api('GET', '/health', undefined, null)).body.launches.limit, 1);
    const answers = await Promise.all(Array.from({ length: 5 }, () => d.api('POST', '/browsers', { headless: true })));
    const statuses = answers.map((r) => r.status).sort();
    assert.ok(
      statuses.every((s) => s === 200 || s === 429),
      `only 200 and 429: ${statuses}`,
    );
    const ok = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status === 429);
    assert.ok(ok.length >= 2, `the running launch and the queued one start (${ok.length})`);
    assert.ok(refused.length >= 1, 'the rest are refused');
    for (const r of refused) {
      assert.equal(r.body.code, 'rate_limit_exceeded');
      assert.match(r.body.message, /starts 1 browser/);
      assert.match(r.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
      assert.notEqual(r.headers.get('x-should-retry'), 'false', 'the SDK may retry a 429');
    }
    for (const r of ok) assert.equal((await d.api('DELETE', `/browsers/${r.body.session_id}`)).status, 204);
    for (const r of ok) await tornDown(d, r.body.session_id);
  });
});

describe('state that survives', () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon();
  });
  after(async () => {
    await d?.stop();
  });

  test('state is 0600, holds no jwt, and ended sessions move to the history, findable with the same URLs', async () => {
    const created = (await d.api('POST', '/browsers', { headless: true, name: 'kept' })).body;
    assert.equal((await d.api('DELETE', `/browsers/${created.session_id}`)).status, 204);
    await tornDown(d, created.session_id);
    const token = new URL(created.cdp_ws_url).searchParams.get('jwt')!;
    for (const f of ['state.json', 'state.json.last-good', 'history/sessions.jsonl']) {
      const file = join(d.home, f);
      assert.equal((await stat(file)).mode & 0o777, 0o600, `${f} is 0600`);
      const text = await readFile(file, 'utf8');
      assert.ok(!text.includes(token) && !/"(live_)?jwt"/.test(text), `${f} holds no jwt`);
    }
    // The record leaves the document once its processes are gone, a moment after its directory
    // (a read can fall in between).
    await waitFor(
      async () => JSON.parse(await readFile(join(d.home, 'state.json'), 'utf8')).sessions.length === 0,
      10_000,
      'an ended session to leave the live document',
    );
    const found = await d.api('GET', `/browsers/${created.session_id}?include_deleted=true`);
    assert.equal(found.status, 200);
    assert.ok(found.body.deleted_at);
    assert.equal(found.body.cdp_ws_url, created.cdp_ws_url, 'the URL is derived again, the same');
    const listed = await d.api('GET', '/browsers?include_deleted=true');
    assert.ok(listed.body.some((s: any) => s.session_id === created.session_id));
    assert.equal((await d.api('GET', '/browsers')).body.length, 0);
  });

  test('a state file that does not parse is recovered from its last good copy, loudly; keys and records survive', async () => {
    // The change made last before the stop survives: the last good copy is current.
    const profile = (await d.api('POST', '/profiles', { name: 'survivor' })).body;
    assert.ok(profile.id, JSON.stringify(profile));
    await d.cli(['daemon', 'stop']);
    await writeFile(join(d.home, 'state.json'), '{"version":1,"orgs":[{"id"');
    const started = await d.cli(['daemon', 'start']);
    assert.equal(started.exitCode, 0, started.stderr);
    assert.match(started.stderr, /WARNING: .*state\.json did not parse.*last good copy.*kept as/);
    d.baseUrl = started.stdout.trim();
    const profiles = await d.api('GET', '/profiles');
    assert.equal(profiles.status, 200, 'the API key still works');
    assert.ok(
      profiles.body.some((p: any) => p.id === profile.id),
      'the profile record survived',
    );
    const kept = (await readdir(d.home)).filter((f) => f.startsWith('state.json.unreadable-'));
    assert.equal(kept.length, 1, 'the unreadable file is kept');
    const doctor = await d.cli(['doctor', '--json']);
    const check = JSON.parse(doctor.stdout).find((c: any) => c.name === 'state');
    assert.equal(check.state, 'warning');
    assert.match(check.detail, /recovered/);
  });

  test('with nothing good left the daemon refuses to start, saying why, and leaves the file alone', async () => {
    await killDaemonHard(d);
    await writeFile(join(d.home, 'state.json'), 'garbage');
    await writeFile(join(d.home, 'state.json.last-good'), 'garbage too');
    const started = await d.cli(['daemon', 'start']);
    assert.notEqual(started.exitCode, 0);
    assert.match(started.stderr, /state\.json does not parse .*no good copy/s);
    assert.equal(await readFile(join(d.home, 'state.json'), 'utf8'), 'garbage', 'not replaced by an empty state');
    const doctor = JSON.parse((await d.cli(['doctor', '--json'])).stdout).find((c: any) => c.name === 'state');
    assert.equal(doctor.state, 'missing');
    assert.match(doctor.fix, /mv /);
    // Back to a state the daemon can start from, so the suite's cleanup runs as usual.
    await writeFile(join(d.home, 'state.json'), '{"version":1}');
    const again = await d.cli(['daemon', 'start']);
    assert.equal(again.exitCode, 0, again.stderr);
    d.baseUrl = again.stdout.trim();
  });
});

describe('history retention (logic)', () => {
  test('keeps the newest records up to the count and age limits, across a reopen that compacts the file, past a torn line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rbrowse-history-'));
    try {
      const file = join(dir, 'h.jsonl');
      const day = 24 * 3600 * 1000;
      const retention = { maxAgeMs: 7 * day, maxCount: 3 };
      const at = (r: { id: string; t: number }) => r.t;
      const h = await History.open<{ id: string; t: number; v?: number }>(file, retention, at);
      await h.put({ id: 'old', t: Date.now() - 8 * day });
      assert.equal(h.get('old'), undefined, 'older than the age limit: dropped at once');
      for (const id of ['a', 'b', 'c', 'd']) await h.put({ id, t: Date.now() });
      assert.deepEqual(
        h.all().map((r) => r.id),
        ['b', 'c', 'd'],
        'the newest 3',
      );
      await h.put({ id: 'c', t: Date.now(), v: 2 });
      assert.equal(h.get('c')?.v, 2, 'a record written again: the last version wins');
      await h.close();
      await appendFile(file, '{"id":"torn","t":');
      const again = await History.open<{ id: string; t: number; v?: number }>(file, retention, at);
      assert.deepEqual(
        again.all().map((r) => [r.id, r.v]),
        [
          ['b', undefined],
          ['d', undefined],
          ['c', 2],
        ],
      );
      assert.equal((await readFile(file, 'utf8')).trim().split('\n').length, 3, 'the file is compacted to what is kept');
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      // A record being retired is in the history and still among the live ones for a moment: listed once.
      const retiring = { id: 'e', t: Date.now() };
      const written = again.put(retiring);
      assert.deepEqual(
        again.allWith([retiring, { id: 'live', t: Date.now() }]).map((r) => r.id),
        ['d', 'c', 'e', 'live'],
      );
      await written;
      await again.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a failed state write (logic)', () => {
  test('undoes its changes in memory, newest first across coalesced writes, and leaves later changes alone', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rbrowse-undo-'));
    try {
      const stateDir = join(dir, 'home');
      const store = await Store.open(join(stateDir, 'state.json'));
      type Thing = { id: string; name?: string; tag?: string };
      const things = () => (store.data as unknown as { things: Thing[] }).things;
      await store.update((s) => void ((s as unknown as { things: Thing[] }).things = [{ id: 'a', name: 'first', tag: 't' }, { id: 'z' }]));
      const a = things()[0]!;

      // A change that throws is undone too.
      await assert.rejects(
        store.update(() => {
          a.name = 'half';
          throw new Error('refused');
        }),
        /refused/,
      );
      assert.equal(a.name, 'first');

      // The directory gone: every write fails (a real fault, as root ignores permissions). The
      // last good copy of the change before is written after its answer: landed first.
      await store.flushed();
      await rm(stateDir, { recursive: true });
      const first = store.update((s) => {
        a.name = 'x';
        (s as unknown as { things: Thing[] }).things.push({ id: 'b' });
      });
      const second = store.update((s) => {
        a.name = 'y';
        delete a.tag;
        (s as unknown as { things: Thing[] }).things = things().filter((t) => t.id !== 'z');
      });
      await Promise.all([assert.rejects(first), assert.rejects(second)]);
      assert.deepEqual(things(), [{ id: 'a', name: 'first', tag: 't' }, { id: 'z' }], 'both coalesced changes undone');
      assert.equal(things()[0], a, 'the same record objects, which modules hold');

      // Space (here: the directory) back: the next write persists only what succeeded.
      await mkdir(stateDir, { recursive: true });
      await store.update(() => void (a.name = 'second'));
      const onDisk = JSON.parse(await readFile(join(stateDir, 'state.json'), 'utf8')) as { things: Thing[] };
      assert.deepEqual(onDisk.things, [{ id: 'a', name: 'second', tag: 't' }, { id: 'z' }]);
      await store.flushed();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the state file (logic)', () => {
  test('the last good copy is as current as the file: a file that stops parsing loses nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rbrowse-durable-'));
    try {
      const file = new DurableJsonFile<{ n: number }>(join(dir, 'state.json'));
      await file.write({ n: 1 });
      await writeFile(`${file.lastGood}.${process.pid}`, 'stale');
      await file.write({ n: 2 });
      assert.deepEqual(JSON.parse(await readFile(file.file, 'utf8')), { n: 2 });
      await file.flushed();
      assert.deepEqual(JSON.parse(await readFile(file.lastGood, 'utf8')), { n: 2 });
      assert.deepEqual((await readdir(dir)).sort(), ['state.json', 'state.json.last-good']);
      // The change made last survives a file that no longer parses.
      await writeFile(file.file, '{"n":');
      const opened = await new DurableJsonFile<{ n: number }>(join(dir, 'state.json')).open();
      assert.equal(opened.source, 'last-good');
      assert.deepEqual(opened.data, { n: 2 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("Chromium's sandbox off, by choice", () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon({ env: { RBROWSE_CHROMIUM_SANDBOX: 'off' } });
  });
  after(async () => {
    await d?.stop();
  });

  test('RBROWSE_CHROMIUM_SANDBOX=off runs Chromium with --no-sandbox, and doctor says so with the way back', async () => {
    const doctor = JSON.parse((await d.cli(['doctor', '--json'])).stdout).find((c: any) => c.name === 'chromium-sandbox');
    assert.equal(doctor.state, 'warning');
    assert.match(doctor.detail, /RBROWSE_CHROMIUM_SANDBOX=off: Chromium runs with --no-sandbox/);
    assert.match(doctor.fix, /unset RBROWSE_CHROMIUM_SANDBOX/);
    const s = (await d.api('POST', '/browsers', { headless: true })).body;
    try {
      const args = await Promise.all(
        (await findMarkedProcesses(d.home, s.session_id)).map(async (pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')),
      );
      assert.ok(
        args.some((a) => a.split('\0').includes('--no-sandbox')),
        'the browser runs with --no-sandbox',
      );
    } finally {
      await d.api('DELETE', `/browsers/${s.session_id}`);
      await tornDown(d, s.session_id);
    }
  });
});

describe("Chromium's own sandbox", () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon();
  });
  after(async () => {
    await d?.stop();
  });

  const status = async (pid: number) => readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  // Chromium's children rewrite their title into one space-separated string.
  const cmdline = async (pid: number) => (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split(/[\0 ]/);

  for (const headless of [true, false]) {
    test(`${headless ? 'headless' : 'headful'}: Chromium runs as an unprivileged user without --no-sandbox, its renderers under seccomp`, async () => {
      const doctor = JSON.parse((await d.cli(['doctor', '--json'])).stdout).find((c: any) => c.name === 'chromium-sandbox');
      assert.equal(doctor?.state, 'ok', `doctor: ${JSON.stringify(doctor)}`);
      const s = (await d.api('POST', '/browsers', { headless, viewport: { width: 1024, height: 768 } })).body;
      try {
        const scan = async () => {
          const found = [];
          for (const pid of await findMarkedProcesses(d.home, s.session_id)) {
            const args = await cmdline(pid);
            // Full Chromium, or the headless shell a headless session runs.
            if (/\/chromium(-headless-shell)?$/.test(args[0] ?? '')) found.push({ pid, args, status: await status(pid) });
          }
          return found;
        };
        // The page's renderer may start just after the create answers.
        const browsers = (await waitFor(
          async () => {
            const found = await scan();
            return found.some((b) => b.args.includes('--type=renderer')) ? found : null;
          },
          15_000,
          'a renderer of the session',
        )) as Awaited<ReturnType<typeof scan>>;
        assert.ok(browsers.length >= 2, `the browser and its children (${browsers.length})`);
        for (const b of browsers) {
          assert.ok(!b.args.includes('--no-sandbox'), `no --no-sandbox in ${b.args.join(' ').slice(0, 200)}`);
          const uid = Number(/^Uid:\s+(\d+)/m.exec(b.status)?.[1]);
          assert.notEqual(uid, 0, `pid ${b.pid} is not root`);
        }
        const renderers = browsers.filter((b) => b.args.includes('--type=renderer'));
        assert.ok(renderers.length >= 1, 'a renderer runs');
        // A renderer just forked from the zygote starts its seccomp-bpf sandbox a moment later.
        for (const r of renderers) {
          const filtered = await waitFor(
            async () => /^Seccomp:\s+2$/m.test(await status(r.pid)) || !(await status(r.pid)),
            10_000,
            `renderer ${r.pid} under seccomp`,
          );
          assert.ok(filtered, 'renderers are under seccomp-bpf');
        }
        // The filesystem API acts as the same user: what it writes, the browser may write too.
        const put = await fetch(`${d.baseUrl}/browsers/${s.session_id}/fs/write_file?path=${encodeURIComponent('/home/kernel/mine.txt')}`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${d.apiKey}`, 'content-type': 'application/octet-stream' },
          body: 'hello',
        });
        assert.equal(put.status, 204);
        const host = join(await diskOf(s.session_id), 'home', 'mine.txt');
        const browserUid = Number(/^Uid:\s+(\d+)/m.exec(browsers[0]!.status)?.[1]);
        assert.equal((await stat(host)).uid, browserUid, 'the file belongs to the browser user');
      } finally {
        await d.api('DELETE', `/browsers/${s.session_id}`);
        await tornDown(d, s.session_id);
      }
    });
  }
});
