import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import Kernel, { ConflictError, NotFoundError } from '@onkernel/sdk';
import { chromium } from 'playwright';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { BACKGROUND_START_MS, processesGone, sleep, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startCpuHog } from './helpers/cpu-hog.js';
import { autogroupNices, lowersBackgroundLaunches } from './helpers/priority.js';

let d: TestDaemon;
let kernel: Kernel;

/** Fast fills keep the tests short: at 6000 % of size per minute a pool of 2 may launch every 0.5 s. */
const FAST = { headless: true, fill_rate_per_minute: 6000 } as const;

before(async () => {
  d = await startTestDaemon();
  kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
});
after(async () => {
  await d?.stop();
});

/** Every pool a test makes is deleted afterwards, leased browsers and all. */
const made = new Set<string>();
afterEach(async () => {
  for (const id of made) {
    const res = await d.api('DELETE', `/browser_pools/${id}`, { force: true });
    assert.ok([204, 404].includes(res.status), res.text);
  }
  made.clear();
  await waitFor(async () => ((await d.api('GET', '/browsers?limit=100')).body as unknown[]).length === 0, 10_000, 'every session of the test to end');
});

async function createPool(body: object) {
  const res = await d.api('POST', '/browser_pools', { ...FAST, ...body });
  assert.equal(res.status, 200, res.text);
  made.add(res.body.id);
  return res.body;
}

const getPool = async (idOrName: string) => {
  const res = await d.api('GET', `/browser_pools/${idOrName}`);
  assert.equal(res.status, 200, res.text);
  return res.body;
};

/** Active sessions of the pool, per the sessions API. */
async function poolSessions(poolId: string): Promise<any[]> {
  const all = (await d.api('GET', '/browsers?limit=100')).body as any[];
  return all.filter((s) => s.pool?.id === poolId);
}

/**
 * Waits until the pool shows these counts, then checks them against the sessions that exist. Idle
 * pool browsers launch at the lowest CPU priority, taking only what other work leaves: with the
 * rest of the suite busy beside this file, a refill of two took over 30 s.
 */
async function settle(poolId: string, available: number, acquired: number) {
  const pool = await waitFor(
    async () => {
      const p = await getPool(poolId);
      return p.available_count === available && p.acquired_count === acquired ? p : null;
    },
    120_000,
    `pool ${poolId} to have ${available} available and ${acquired} acquired`,
  );
  assert.equal((await poolSessions(poolId)).length, available + acquired, 'the counts match the sessions that run');
  return pool;
}

const acquire = (idOrName: string, body: object = {}) => d.api('POST', `/browser_pools/${idOrName}/acquire`, body);
const release = (idOrName: string, body: object) => d.api('POST', `/browser_pools/${idOrName}/release`, body);

/** The cancelled launch never became a session, and nothing of it is left running (the daemon's own box launcher aside). */
async function checkNothingLeft(poolId: string): Promise<void> {
  const boxProcesses = async () => {
    const pids = await findMarkedProcesses(d.home);
    const cmdlines = await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')));
    return cmdlines.filter((c) => c && !c.includes('launcher.mjs'));
  };
  await waitFor(async () => (await boxProcesses()).length === 0, 60_000, 'the cancelled launch to leave nothing');
  const all = (await d.api('GET', '/browsers?status=all&limit=100')).body as any[];
  assert.deepEqual(
    all.filter((s) => s.pool?.id === poolId),
    [],
  );
  assert.equal((await d.api('GET', `/browser_pools/${poolId}`)).status, 404);
}

describe('browser pools', () => {
  test('a pool fills to its size with idle sessions that carry the pool ref', async () => {
    const pool = await createPool({ name: 'fill', size: 2, viewport: { width: 1024, height: 768 } });
    assert.match(pool.id, /^[a-z0-9]{24}$/);
    assert.equal(pool.name, 'fill');
    assert.ok(pool.available_count + pool.acquired_count <= 2);
    assert.deepEqual(pool.extension_ids, []);
    assert.deepEqual(pool.browser_pool_config, {
      size: 2,
      fill_rate_per_minute: 6000,
      timeout_seconds: 600,
      headless: true,
      stealth: false,
      kiosk_mode: false,
      name: 'fill',
      viewport: { width: 1024, height: 768, refresh_rate: 60 },
    });
    await settle(pool.id, 2, 0);
    for (const s of await poolSessions(pool.id)) {
      assert.deepEqual(s.pool, { id: pool.id, name: 'fill' });
      assert.equal(s.timeout_seconds, 600, "an acquired browser's timeout is the pool's");
      assert.deepEqual(s.viewport, { width: 1024, height: 768, refresh_rate: 60 });
    }
    await sleep(1500);
    assert.equal((await getPool(pool.id)).available_count, 2, 'never more than size');

    const listed = await d.api('GET', '/browser_pools');
    assert.equal(listed.status, 200);
    assert.equal(listed.headers.get('x-has-more'), 'false');
    assert.deepEqual(
      listed.body.map((p: any) => p.id),
      [pool.id],
    );
    assert.deepEqual(
      (await d.api('GET', '/browser_pools?name=fill')).body.map((p: any) => p.id),
      [pool.id],
    );
    assert.deepEqual((await d.api('GET', '/browser_pools?name=other')).body, []);

    const dup = await d.api('POST', '/browser_pools', { name: 'fill', size: 1 });
    assert.equal(dup.status, 409, dup.text);
    assert.equal(dup.body.code, 'conflict');
    assert.equal(dup.headers.get('x-should-retry'), 'false');

    const ids = (await poolSessions(pool.id)).map((s) => s.session_id);
    assert.equal((await d.api('DELETE', `/browser_pools/${pool.id}`)).status, 204);
    assert.equal((await d.api('GET', `/browser_pools/${pool.id}`)).status, 404);
    for (const id of ids) assert.ok((await d.api('GET', `/browsers/${id}?include_deleted=true`)).body.deleted_at);
  });

  test('bad input is refused before anything is made', async () => {
    const cases: [object, number, string][] = [
      [{}, 400, 'size'],
      [{ size: 0 }, 400, 'size'],
      [{ size: 2, sizee: 3 }, 400, 'sizee'],
      [{ size: 2, fill_rate_per_minute: -1 }, 400, 'fill_rate_per_minute'],
      [{ size: 2, region: 'mars' }, 400, 'region'],
      [{ size: 2, network: { private_hosts: 'not-a-list' } }, 400, 'network'],
      [{ size: 2, timeout_seconds: 5 }, 400, 'timeout_seconds'],
      [{ size: 2, viewport: { width: 1000, height: 700 } }, 400, 'viewport'],
      [{ size: 2, proxy_id: 'nope' }, 404, 'proxy'],
      [{ size: 2, profile: { name: 'nope' } }, 404, 'profile'],
      [{ size: 2, extensions: [{ name: 'nope' }] }, 404, 'extension'],
    ];
    for (const [body, status, mention] of cases) {
      const res = await d.api('POST', '/browser_pools', body);
      assert.equal(res.status, status, `${JSON.stringify(body)}: ${res.text}`);
      assert.match(res.text, new RegExp(mention));
      if (status === 400) assert.equal(res.body.details[0].code, 'invalid_input');
    }
    assert.deepEqual((await d.api('GET', '/browser_pools')).body, []);
    assert.equal((await acquire('nope')).status, 404);
    assert.equal((await d.api('POST', '/browser_pools/nope/flush')).status, 404);
  });

  test('acquire by name and by id through the SDK; release makes them available again', async () => {
    const pool = await createPool({ name: 'sdk', size: 2 });
    await settle(pool.id, 2, 0);
    const byName = await kernel.browserPools.acquire('sdk', {});
    assert.ok(byName);
    assert.deepEqual(byName.pool, { id: pool.id, name: 'sdk' });
    await settle(pool.id, 1, 1);
    const byId = await kernel.browserPools.acquire(pool.id, {});
    assert.ok(byId);
    assert.notEqual(byId.session_id, byName.session_id);
    await settle(pool.id, 0, 2);

    // An acquired browser is an ordinary session behind the same CDP gateway.
    const browser = await chromium.connectOverCDP(byName.cdp_ws_url);
    assert.equal(
      await browser
        .contexts()[0]!
        .pages()[0]!
        .evaluate(() => 6 * 7),
      42,
    );
    await browser.close();

    const sdkPool = await kernel.browserPools.retrieve('sdk');
    assert.equal(sdkPool.acquired_count, 2);
    await kernel.browserPools.release('sdk', { session_id: byName.session_id });
    await kernel.browserPools.release(pool.id, { session_id: byId.session_id, reuse: true });
    await settle(pool.id, 2, 0);
    assert.deepEqual(
      (await poolSessions(pool.id)).map((s) => s.session_id).sort(),
      [byName.session_id, byId.session_id].sort(),
      'reused, not replaced',
    );
  });

  test('idle pool browsers wait at the lowest CPU priority; an acquired one has the normal one', async (t) => {
    if (!(await lowersBackgroundLaunches())) return t.skip('needs autogroups and a daemon that may raise a priority again (root)');
    const pool = await createPool({ size: 1 });
    await settle(pool.id, 1, 0);
    const [idle] = await poolSessions(pool.id);
    const waiting = await autogroupNices(d.home, idle.session_id);
    assert.ok(waiting.bwrap, `the pool browser's processes: ${JSON.stringify(waiting)}`);
    for (const [command, values] of Object.entries(waiting)) assert.deepEqual(values, [19], `${command} waits at nice 19`);
    const leased = await kernel.browserPools.acquire(pool.id, {});
    assert.equal(leased?.session_id, idle.session_id);
    for (const [command, values] of Object.entries(await autogroupNices(d.home, idle.session_id)))
      assert.deepEqual(values, [0], `${command} runs at nice 0 once acquired`);
  });

  test('an acquire that times out answers 204 with no body, and null through the SDK', async () => {
    const pool = await createPool({ size: 1 });
    await settle(pool.id, 1, 0);
    const held = await acquire(pool.id);
    assert.equal(held.status, 200, held.text);

    let start = Date.now();
    const res = await acquire(pool.id, { acquire_timeout_seconds: 1 });
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    const waited = Date.now() - start;
    assert.ok(waited >= 950 && waited < 5000, `waited ${waited} ms`);

    start = Date.now();
    assert.equal(await kernel.browserPools.acquire(pool.id, { acquire_timeout_seconds: 0 }), null);
    assert.ok(Date.now() - start < 1000);
    // Without acquire_timeout_seconds: the time to fill the pool at its rate, 100/6000 min = 1 s.
    start = Date.now();
    assert.equal(await kernel.browserPools.acquire(pool.id, {}), null);
    assert.ok(Date.now() - start >= 950, 'the default wait is the fill time');
    await settle(pool.id, 0, 1);
  });

  test('release with reuse keeps the session (lease labels cleared); without reuse it is replaced', async () => {
    const pool = await createPool({ size: 1 });
    await settle(pool.id, 1, 0);
    const first = await acquire(pool.id, { name: 'lease-1', tags: { job: 'a' } });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.name, 'lease-1');
    assert.deepEqual(first.body.tags, { job: 'a' });
    const id = first.body.session_id;
    assert.equal((await d.api('GET', '/browsers/lease-1')).body.session_id, id, 'found by its lease name');

    assert.equal((await release(pool.id, { session_id: id })).status, 204);
    await settle(pool.id, 1, 0);
    const again = await acquire(pool.id);
    assert.equal(again.body.session_id, id, 'the same browser comes back');
    assert.equal(again.body.name, undefined, 'per-lease name cleared');
    assert.equal(again.body.tags, undefined, 'per-lease tags cleared');

    assert.equal((await release(pool.id, { session_id: id, reuse: false })).status, 204);
    assert.equal((await d.api('GET', `/browsers/${id}`)).status, 404, 'the old one is gone');
    assert.ok((await d.api('GET', `/browsers/${id}?include_deleted=true`)).body.deleted_at);
    await processesGone(d.home, id); // and so are its processes
    await settle(pool.id, 1, 0);
    const [fresh] = await poolSessions(pool.id);
    assert.notEqual(fresh.session_id, id, 'a new one was made');

    // Releasing what is not leased from this pool: idle, unknown, or already released.
    const idle = await release(pool.id, { session_id: fresh.session_id });
    assert.equal(idle.status, 409, idle.text);
    assert.equal((await release(pool.id, { session_id: 'nosuchsession' })).status, 404);
    assert.equal((await release(pool.id, { session_id: id })).status, 404, 'an ended session');
    const other = await d.api('POST', '/browsers', { headless: true });
    const notPooled = await release(pool.id, { session_id: other.body.session_id });
    assert.equal(notPooled.status, 409, notPooled.text);
    await d.api('DELETE', `/browsers/${other.body.session_id}`);
    await assertSdkError(ConflictError, () => kernel.browserPools.release(pool.id, { session_id: fresh.session_id }));
  });

  test("Kernel's newer pool fields: region (and its list filter), network, telemetry, refresh_on_profile_update; fill rate 0 launches nothing", async () => {
    const telemetry = { browser: { console: { enabled: true }, control: { cdp: { excluded_methods: ['Input.dispatchMouseEvent'] } } } };
    const pool = await createPool({
      name: 'fields',
      size: 1,
      region: 'eu-west',
      network: { private_hosts: ['10.0.0.0/8'] },
      telemetry,
    });
    assert.equal(pool.region, 'eu-west');
    const config = pool.browser_pool_config;
    assert.deepEqual([config.region, config.network], ['eu-west', { private_hosts: ['10.0.0.0/8'] }]);
    assert.equal(config.refresh_on_profile_update, undefined, 'the setting goes with a profile');
    assert.deepEqual(
      [config.telemetry.browser.console.enabled, config.telemetry.browser.control.enabled, config.telemetry.browser.page.enabled],
      [true, true, false],
    );
    assert.deepEqual(config.telemetry.browser.control.cdp, { excluded_methods: ['Input.dispatchMouseEvent'] });
    // Its browsers are made with them.
    await settle(pool.id, 1, 0);
    const [browser] = await poolSessions(pool.id);
    assert.deepEqual(
      [browser.region, browser.network, browser.telemetry?.browser?.console?.enabled],
      ['eu-west', { private_hosts: ['10.0.0.0/8'] }, true],
    );
    // Region filters: sessions and pools.
    assert.ok((await d.api('GET', '/browsers?region=eu-west')).body.some((b: any) => b.session_id === browser.session_id));
    assert.ok(!(await d.api('GET', '/browsers?region=us-east')).body.some((b: any) => b.session_id === browser.session_id));
    assert.deepEqual(
      (await d.api('GET', '/browser_pools?region=eu-west')).body.map((p: any) => p.id),
      [pool.id],
    );
    assert.deepEqual((await d.api('GET', '/browser_pools?region=us-east')).body, []);
    // An update switches telemetry off for browsers warmed from now on; the region is fixed.
    const off = await d.api('PATCH', `/browser_pools/${pool.id}`, { telemetry: { enabled: false } });
    assert.equal(off.status, 200, off.text);
    assert.equal(off.body.browser_pool_config.telemetry, undefined);
    assert.equal((await d.api('PATCH', `/browser_pools/${pool.id}`, { region: 'us-east' })).status, 400);

    // A profile given: refreshes by default, and the setting can be turned off.
    await kernel.profiles.create({ name: 'pool-fields-profile' });
    const withProfile = await createPool({ size: 1, fill_rate_per_minute: 0, profile: { name: 'pool-fields-profile' } });
    assert.equal(withProfile.browser_pool_config.refresh_on_profile_update, true);
    const turnedOff = await d.api('PATCH', `/browser_pools/${withProfile.id}`, { refresh_on_profile_update: false });
    assert.equal(turnedOff.body.browser_pool_config.refresh_on_profile_update, false);
    // Rate 0: nothing is launched, and an acquire with no wait of its own is answered, not left hanging.
    assert.equal(withProfile.browser_pool_config.fill_rate_per_minute, 0);
    await sleep(1500);
    assert.equal((await getPool(withProfile.id)).available_count, 0);
    assert.deepEqual(await poolSessions(withProfile.id), []);
    assert.equal((await acquire(withProfile.id, { acquire_timeout_seconds: 1 })).status, 204);
    // Raised, it fills.
    assert.equal((await d.api('PATCH', `/browser_pools/${withProfile.id}`, { fill_rate_per_minute: 6000 })).status, 200);
    await settle(withProfile.id, 1, 0);
    assert.equal((await d.api('DELETE', `/browser_pools/${withProfile.id}`, { force: true })).status, 204);
    await waitFor(async () => (await d.api('DELETE', '/profiles/pool-fields-profile')).status === 204, 30_000, 'the profile to be free');
  });

  test('refresh_on_profile_update: a save of the profile replaces idle browsers of pools that refresh, not of the others', async () => {
    await kernel.profiles.create({ name: 'pool-refresh' });
    const refreshing = await createPool({ size: 1, profile: { name: 'pool-refresh' } });
    const keeping = await createPool({ size: 1, profile: { name: 'pool-refresh' }, refresh_on_profile_update: false });
    await settle(refreshing.id, 1, 0);
    await settle(keeping.id, 1, 0);
    const [before] = await poolSessions(refreshing.id);
    const [kept] = await poolSessions(keeping.id);
    // A session writes the profile back as it ends.
    const writer = await d.api('POST', '/browsers', { headless: true, profile: { name: 'pool-refresh', save_changes: true } });
    assert.equal(writer.status, 200, writer.text);
    assert.equal(writer.body.profile_save_changes, true);
    assert.equal((await d.api('DELETE', `/browsers/${writer.body.session_id}`)).status, 204);
    await waitFor(
      async () => {
        const [now] = await poolSessions(refreshing.id);
        return now && now.session_id !== before.session_id && (await getPool(refreshing.id)).available_count === 1;
      },
      120_000,
      'the refreshing pool to replace its idle browser',
    );
    const ended = await d.api('GET', `/browsers/${before.session_id}?include_deleted=true`);
    assert.ok(ended.body.deleted_at, 'the old idle browser ended');
    // Control: the pool that does not refresh keeps its idle browser.
    assert.deepEqual(
      (await poolSessions(keeping.id)).map((s) => s.session_id),
      [kept.session_id],
    );
    for (const id of [refreshing.id, keeping.id]) await d.api('DELETE', `/browser_pools/${id}`, { force: true });
    await waitFor(async () => (await d.api('DELETE', '/profiles/pool-refresh')).status === 204, 30_000, 'the profile to be free');
  });

  test("acquire with start_url opens it in the leased browser; acquire telemetry is the lease's, and the pool's again once released", async () => {
    const pool = await createPool({ size: 1 });
    await settle(pool.id, 1, 0);
    const page = `data:text/html,${encodeURIComponent('<title>acquired</title>')}`;
    const leased = await acquire(pool.id, { start_url: page, telemetry: { enabled: true } });
    assert.equal(leased.status, 200, leased.text);
    assert.equal(leased.body.telemetry?.browser?.control?.enabled, true);
    const browser = await chromium.connectOverCDP(leased.body.cdp_ws_url);
    try {
      const [tab] = browser.contexts()[0]!.pages();
      await waitFor(async () => (await tab!.title()) === 'acquired', 10_000, 'the start_url to open');
    } finally {
      await browser.close();
    }
    assert.equal((await release(pool.id, { session_id: leased.body.session_id })).status, 204);
    await settle(pool.id, 1, 0);
    const again = await acquire(pool.id);
    assert.equal(again.body.session_id, leased.body.session_id);
    assert.equal(again.body.telemetry ?? null, null, "the pool's telemetry (none) again");
  });

  test('under a CPU hog, deleting a pool whose browser is still launching cancels the launch and leaves nothing; a session deleted meanwhile ends too', async (t) => {
    const session = await d.api('POST', '/browsers', { headless: true });
    assert.equal(session.status, 200, session.text);
    // Busy loops at normal priority on every core: the launch below crawls, and a delete that
    // waited for it would hang with it (the bench times these deletes).
    const hog = startCpuHog({ maxSeconds: 120 });
    try {
      const pool = await d.api('POST', '/browser_pools', { ...FAST, size: 1 });
      assert.equal(pool.status, 200, pool.text);
      // At once: its first browser is launching.
      let started = Date.now();
      const deleted = await d.api('DELETE', `/browser_pools/${pool.body.id}`);
      assert.equal(deleted.status, 204, deleted.text);
      t.diagnostic(`pool delete under the hog: ${Date.now() - started} ms`);
      started = Date.now();
      const ended = await d.api('DELETE', `/browsers/${session.body.session_id}`);
      assert.equal(ended.status, 204, ended.text);
      t.diagnostic(`session delete under the hog: ${Date.now() - started} ms`);
      await processesGone(d.home, session.body.session_id);
      await checkNothingLeft(pool.body.id);
    } finally {
      await hog.stop();
    }
  });

  test('concurrent acquirers never share a browser and are served first come, first served', async () => {
    const pool = await createPool({ size: 2 });
    await settle(pool.id, 2, 0);
    const [a, b] = await Promise.all([acquire(pool.id), acquire(pool.id)]);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.notEqual(a.body.session_id, b.body.session_id);

    const answers: string[] = [];
    const waiting = ['c', 'e', 'f'].map(async (who, i) => {
      await sleep(i * 150); // a definite order of arrival
      const res = await acquire(pool.id, { acquire_timeout_seconds: 30 });
      answers.push(who);
      return res;
    });
    await sleep(700);
    assert.deepEqual(answers, [], 'they wait');
    assert.equal((await release(pool.id, { session_id: a.body.session_id })).status, 204);
    await waitFor(() => answers.length === 1, 5000, 'the first waiter');
    assert.deepEqual(answers, ['c']);
    assert.equal((await release(pool.id, { session_id: b.body.session_id, reuse: false })).status, 204);
    await waitFor(() => answers.length === 2, BACKGROUND_START_MS, 'the second waiter (a new browser)');
    assert.deepEqual(answers, ['c', 'e']);
    const [c, e] = await Promise.all(waiting.slice(0, 2));
    assert.equal(c!.body.session_id, a.body.session_id);
    assert.notEqual(e!.body.session_id, c!.body.session_id);
    await settle(pool.id, 0, 2);
    // The last waiter is still queued: deleting the pool answers it 404.
    const del = await d.api('DELETE', `/browser_pools/${pool.id}`, { force: true });
    assert.equal(del.status, 204, del.text);
    assert.equal((await waiting[2]!).status, 404);
  });

  test('an acquirer that hangs up while waiting leaves the queue', async () => {
    const pool = await createPool({ size: 1 });
    await settle(pool.id, 1, 0);
    const held = (await acquire(pool.id)).body;
    const hangUp = new AbortController();
    const gone = fetch(`${d.baseUrl}/browser_pools/${pool.id}/acquire`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ acquire_timeout_seconds: 30 }),
      signal: hangUp.signal,
    }).catch((err: Error) => err.name);
    await sleep(300);
    hangUp.abort();
    assert.equal(await gone, 'AbortError');
    const next = acquire(pool.id, { acquire_timeout_seconds: 10 });
    await sleep(200);
    assert.equal((await release(pool.id, { session_id: held.session_id })).status, 204);
    const got = await next;
    assert.equal(got.status, 200, got.text);
    assert.equal(got.body.session_id, held.session_id);
    await settle(pool.id, 0, 1);
  });

  test('deleting a pool with leased browsers is a conflict unless forced, which ends them', async () => {
    const pool = await createPool({ size: 2 });
    await settle(pool.id, 2, 0);
    const leased = (await acquire(pool.id)).body;
    const refused = await d.api('DELETE', `/browser_pools/${pool.id}`);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.headers.get('x-should-retry'), 'false');
    await assertSdkError(ConflictError, () => kernel.browserPools.delete(pool.id));
    await settle(pool.id, 1, 1);
    await kernel.browserPools.delete(pool.id, { force: true });
    assert.ok((await d.api('GET', `/browsers/${leased.session_id}?include_deleted=true`)).body.deleted_at);
    await processesGone(d.home, leased.session_id);
    await assertSdkError(NotFoundError, () => kernel.browserPools.retrieve(pool.id));
  });

  test('flush ends idle browsers only, and the pool refills', async () => {
    const pool = await createPool({ size: 3 });
    await settle(pool.id, 3, 0);
    const leased = (await acquire(pool.id)).body;
    const before = (await poolSessions(pool.id)).map((s) => s.session_id).filter((id) => id !== leased.session_id);
    await kernel.browserPools.flush(pool.id);
    for (const id of before) assert.equal((await d.api('GET', `/browsers/${id}`)).status, 404, 'idle ones ended');
    assert.equal((await d.api('GET', `/browsers/${leased.session_id}`)).status, 200, 'the leased one lives');
    await settle(pool.id, 2, 1);
    const now = (await poolSessions(pool.id)).map((s) => s.session_id);
    assert.ok(before.every((id) => !now.includes(id)));
  });

  test('deleting a leased session refills the pool; PATCH resizes and replaces idle browsers', async () => {
    const pool = await createPool({ name: 'patch', size: 1 });
    await settle(pool.id, 1, 0);
    const leased = (await acquire('patch')).body;
    assert.equal((await d.api('DELETE', `/browsers/${leased.session_id}`)).status, 204);
    await settle(pool.id, 1, 0);
    const [idle] = await poolSessions(pool.id);
    assert.notEqual(idle.session_id, leased.session_id);

    const grown = await d.api('PATCH', '/browser_pools/patch', { size: 2, name: 'patched', stealth: true });
    assert.equal(grown.status, 200, grown.text);
    assert.equal(grown.body.name, 'patched');
    assert.equal(grown.body.browser_pool_config.size, 2);
    await settle(pool.id, 2, 0);
    const stealthy = (await poolSessions(pool.id)).filter((s) => s.stealth);
    assert.equal(stealthy.length, 1, 'the new configuration applies to browsers created after');

    const discarded = await d.api('PATCH', `/browser_pools/${pool.id}`, { discard_all_idle: true, name: '' });
    assert.equal(discarded.status, 200, discarded.text);
    assert.equal(discarded.body.name, 'patched', 'an empty name changes nothing');
    await settle(pool.id, 2, 0);
    const after = await poolSessions(pool.id);
    assert.ok(
      after.every((s) => s.stealth && s.session_id !== idle.session_id),
      'idle browsers were replaced',
    );

    const shrunk = await d.api('PATCH', `/browser_pools/${pool.id}`, { size: 1 });
    assert.equal(shrunk.status, 200);
    await settle(pool.id, 1, 0);

    await createPool({ name: 'taken', size: 1 });
    assert.equal((await d.api('PATCH', `/browser_pools/${pool.id}`, { name: 'taken' })).status, 409);
    assert.equal((await d.api('PATCH', `/browser_pools/${pool.id}`, { proxy_id: 'nope' })).status, 404);
    assert.equal((await d.api('PATCH', `/browser_pools/${pool.id}`, { size: 0 })).status, 400);
  });

  test('an acquired browser times out after the pool timeout and is replaced; idle ones never do', async () => {
    const pool = await createPool({ size: 2, timeout_seconds: 10 });
    await settle(pool.id, 2, 0);
    const leased = (await acquire(pool.id)).body;
    const [idle] = (await poolSessions(pool.id)).filter((s) => s.session_id !== leased.session_id);
    await waitFor(async () => (await d.api('GET', `/browsers/${leased.session_id}`)).status === 404, 25_000, 'the acquired browser to time out');
    const ended = (await d.api('GET', `/browsers/${leased.session_id}?include_deleted=true`)).body;
    assert.ok(Date.parse(ended.deleted_at) - Date.now() < 0);
    assert.equal((await d.api('GET', `/browsers/${idle.session_id}`)).status, 200, 'the idle one is still there');
    await settle(pool.id, 2, 0);
  });

  test('another organization cannot see or use a pool, and may reuse its name', async () => {
    const pool = await createPool({ name: 'mine', size: 1 });
    await settle(pool.id, 1, 0);
    const leased = (await acquire(pool.id)).body;
    const key = (await d.cli(['auth', 'create-key', '--org', 'pools-other'])).stdout.trim();
    const other = new Kernel({ apiKey: key, baseURL: d.baseUrl, maxRetries: 0 });
    for (const ref of [pool.id, 'mine']) {
      assert.equal((await d.api('GET', `/browser_pools/${ref}`, undefined, key)).status, 404);
      assert.equal((await d.api('POST', `/browser_pools/${ref}/acquire`, {}, key)).status, 404);
      assert.equal((await d.api('POST', `/browser_pools/${ref}/flush`, undefined, key)).status, 404);
      assert.equal((await d.api('PATCH', `/browser_pools/${ref}`, { size: 2 }, key)).status, 404);
      assert.equal((await d.api('DELETE', `/browser_pools/${ref}`, { force: true }, key)).status, 404);
    }
    await assertSdkError(NotFoundError, () => other.browserPools.release(pool.id, { session_id: leased.session_id }));
    assert.deepEqual((await d.api('GET', '/browser_pools', undefined, key)).body, []);
    assert.equal((await d.api('GET', `/browsers/${leased.session_id}`, undefined, key)).status, 404);

    const theirs = await other.browserPools.create({ name: 'mine', size: 1, headless: true, fill_rate_per_minute: 6000 });
    assert.notEqual(theirs.id, pool.id);
    await other.browserPools.delete('mine');
    await settle(pool.id, 0, 1);
  });

  test('CLI: pools create, list, get, acquire, release, flush, update, delete', async () => {
    const ok = async (args: string[]) => {
      const r = await d.cli(args);
      assert.equal(r.exitCode, 0, `${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const created = JSON.parse(
      await ok(['pools', 'create', '--name', 'cli', '--size', '1', '--headless', '--fill-rate-per-minute', '6000', '--json']),
    );
    made.add(created.id);
    assert.equal(created.browser_pool_config.headless, true);
    await settle(created.id, 1, 0);
    assert.match(await ok(['pools', 'list']), /cli\s+1\s+1\s+0\s+headless/);
    assert.match(await ok(['pools', 'get', 'cli']), /available\s+1 of 1/);
    const acquired = await ok(['pools', 'acquire', 'cli']);
    const id = /session_id\s+(\S+)/.exec(acquired)?.[1];
    assert.ok(id, acquired);
    assert.match(acquired, /cdp_ws_url\s+ws:\/\/\S+jwt=/);
    const none = await d.cli(['pools', 'acquire', 'cli', '--acquire-timeout-seconds', '0']);
    assert.equal(none.exitCode, 3, 'no browser in time');
    assert.equal(none.stdout, '');
    await ok(['pools', 'release', 'cli', id, '--no-reuse']);
    await settle(created.id, 1, 0);
    await ok(['pools', 'flush', 'cli']);
    const updated = JSON.parse(await ok(['pools', 'update', 'cli', '--stealth', '--size', '2', '--json']));
    assert.equal(updated.browser_pool_config.stealth, true);
    assert.equal(updated.browser_pool_config.size, 2);
    const back = JSON.parse(await ok(['pools', 'update', 'cli', '--no-stealth', '--size', '1', '--json']));
    assert.equal(back.browser_pool_config.stealth, false);
    assert.equal(back.browser_pool_config.headless, true, 'what is not given stays');
    const missing = await d.cli(['pools', 'get', 'nope']);
    assert.equal(missing.exitCode, 1);
    assert.match(missing.stderr, /not_found/);
    await ok(['pools', 'delete', 'cli', '--force']);
    assert.deepEqual(JSON.parse(await ok(['pools', 'list', '--json'])), []);
  });

  test('a failing launch is retried with backoff, reported on the pool, and never handed out', async () => {
    const broken = await startTestDaemon({ env: { RBROWSE_CHROMIUM: '/bin/false', RBROWSE_HEADLESS_SHELL: '/bin/false' } });
    try {
      const created = await broken.api('POST', '/browser_pools', { ...FAST, size: 1 });
      assert.equal(created.status, 200, created.text);
      const failing = await waitFor(async () => (await broken.api('GET', `/browser_pools/${created.body.id}`)).body.last_error, 10_000, 'last_error');
      assert.equal(failing.code, 'browser_start_failed');
      assert.ok(failing.message && Date.parse(failing.occurred_at));
      const pool = (await broken.api('GET', `/browser_pools/${created.body.id}`)).body;
      assert.equal(pool.available_count, 0);
      assert.equal((await broken.api('POST', `/browser_pools/${pool.id}/acquire`, { acquire_timeout_seconds: 1 })).status, 204);
      assert.deepEqual((await broken.api('GET', '/browsers')).body, []);
      const log = await readFile(join(broken.home, 'logs', 'daemon.log'), 'utf8');
      const attempts = log.split('\n').filter((l) => l.includes('pool launch failed')).length;
      assert.ok(attempts >= 1 && attempts <= 3, `backoff spaces the retries (${attempts} in ~2 s)`);
    } finally {
      await broken.stop();
    }
  });

  // Last: it restarts the daemon.
  test('a restarted daemon keeps pool definitions and refills them', async () => {
    const pool = await createPool({ name: 'durable', size: 2 });
    await settle(pool.id, 2, 0);
    const old = (await poolSessions(pool.id)).map((s) => s.session_id);
    const stopped = await d.cli(['daemon', 'stop']);
    assert.equal(stopped.exitCode, 0, stopped.stderr);
    assert.deepEqual(await findMarkedProcesses(d.home), []);
    const started = await d.cli(['daemon', 'start']);
    assert.equal(started.exitCode, 0, started.stderr);
    d.baseUrl = started.stdout.trim();
    kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    const back = await getPool('durable');
    assert.equal(back.id, pool.id);
    assert.deepEqual(back.browser_pool_config, pool.browser_pool_config);
    await settle(pool.id, 2, 0);
    const now = (await poolSessions(pool.id)).map((s) => s.session_id);
    assert.ok(
      now.every((id) => !old.includes(id)),
      'idle browsers do not survive a restart; new ones were made',
    );
    const got = await kernel.browserPools.acquire('durable', {});
    assert.ok(got && now.includes(got.session_id));
  });
});

async function assertSdkError(cls: new (...args: any[]) => Error, fn: () => Promise<unknown>): Promise<void> {
  await assert.rejects(fn, (err: unknown) => {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${String(err)}`);
    return true;
  });
}
