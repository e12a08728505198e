import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Kernel, { APIError, BadRequestError, NotFoundError } from '@onkernel/sdk';
import { startTestDaemon, type TestDaemon, sansUsage, waitFor } from './helpers/daemon.js';

const ID_RE = /^[a-z0-9]{24}$/;
const ISO_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Runs fn, which must throw an SDK error of class cls; returns it. */
async function sdkError<E extends APIError>(cls: new (...args: any[]) => E, fn: () => Promise<unknown>): Promise<E> {
  let caught: unknown;
  try {
    await fn();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught !== undefined, `expected ${cls.name}, but the call succeeded`);
  assert.ok(caught instanceof cls, `expected ${cls.name}, got ${(caught as Error)?.constructor?.name}: ${String(caught)}`);
  return caught;
}

describe('@onkernel/sdk against the daemon', () => {
  let daemon: TestDaemon;
  let kernel: Kernel;

  before(async () => {
    // With the default standby set: SDK code gets standby browsers as it would from a default daemon.
    daemon = await startTestDaemon({ env: { RBROWSE_STANDBY: 'headless=1,headful=1' } });
    kernel = new Kernel({ apiKey: daemon.apiKey, baseURL: daemon.baseUrl, maxRetries: 0 });
  });

  after(async () => {
    if (daemon) {
      const left = await daemon.api('GET', '/browsers?status=active&limit=100');
      for (const s of (left.body ?? []) as { session_id: string }[]) await daemon.api('DELETE', `/browsers/${s.session_id}`);
      await daemon.stop();
    }
  });

  test('browsers: create, retrieve, update, delete round trip', async () => {
    const created = await kernel.browsers.create({ headless: true });
    const id = created.session_id;
    assert.equal(typeof id, 'string');
    assert.match(id, ID_RE);
    assert.equal(typeof created.created_at, 'string');
    assert.match(created.created_at, ISO_RE);
    assert.ok(!Number.isNaN(Date.parse(created.created_at)));
    assert.ok(Math.abs(Date.parse(created.created_at) - Date.now()) < 60_000, `created_at ${created.created_at} is not now`);
    assert.equal(typeof created.cdp_ws_url, 'string');
    const cdp = new URL(created.cdp_ws_url);
    assert.equal(cdp.protocol, 'ws:');
    assert.equal(cdp.host, new URL(daemon.baseUrl).host);
    const jwt = cdp.searchParams.get('jwt');
    assert.ok(jwt, `no jwt in ${created.cdp_ws_url}`);
    assert.match(jwt, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    assert.equal(JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')).session.id, id);
    assert.equal(created.headless, true);
    assert.equal(created.stealth, false);
    assert.equal(created.timeout_seconds, 60);
    assert.equal(created.kiosk_mode, false);
    assert.deepEqual(created.viewport, { width: 1920, height: 1080, refresh_rate: 25 });
    assert.equal(created.deleted_at, undefined);
    assert.equal(created.proxy_id, undefined);
    // Kernel's newer models require these: one local region, and the default memory limit (4 GiB) by Kernel's sizes.
    const sized = created as typeof created & { region?: string; memory?: string };
    assert.deepEqual([sized.region, sized.memory], ['us-east', '6GiB']);

    const retrieved = await kernel.browsers.retrieve(id);
    assert.deepEqual(sansUsage(retrieved), sansUsage(created));
    assert.ok(retrieved.usage!.uptime_ms >= created.usage!.uptime_ms, 'usage.uptime_ms grows while the session runs');

    // proxy_id "" removes a proxy: nothing to remove, the object is unchanged.
    const { data: updated, response } = await kernel.browsers.update(id, { proxy_id: '' }).withResponse();
    assert.equal(response.status, 200);
    assert.deepEqual(sansUsage(updated), sansUsage(created));

    const noProxy = await sdkError(NotFoundError, () => kernel.browsers.update(id, { proxy_id: 'nosuchproxy0000000000000' }));
    assert.equal(noProxy.status, 404);
    assert.equal((noProxy.error as { code?: string }).code, 'not_found');
    assert.deepEqual(sansUsage(await kernel.browsers.retrieve(id)), sansUsage(created), 'a failed update changed the session');

    const { response: delResponse } = await kernel.browsers.deleteByID(id).withResponse();
    assert.equal(delResponse.status, 204);

    const gone = await sdkError(NotFoundError, () => kernel.browsers.retrieve(id));
    assert.equal(gone.status, 404);
    assert.equal((gone.error as { code?: string }).code, 'not_found');
    const goneExplicit = await sdkError(NotFoundError, () => kernel.browsers.retrieve(id, { include_deleted: false }));
    assert.equal(goneExplicit.status, 404);

    const deleted = await kernel.browsers.retrieve(id, { include_deleted: true });
    assert.equal(typeof deleted.deleted_at, 'string');
    assert.match(deleted.deleted_at!, ISO_RE);
    assert.ok(Date.parse(deleted.deleted_at!) >= Date.parse(created.created_at));
    // An ended session's uptime is fixed: from its creation to its end.
    assert.equal(deleted.usage!.uptime_ms, Date.parse(deleted.deleted_at!) - Date.parse(created.created_at));
    assert.equal((await kernel.browsers.retrieve(id, { include_deleted: true })).usage!.uptime_ms, deleted.usage!.uptime_ms);
    const { deleted_at: _d, ...rest } = deleted;
    assert.deepEqual(sansUsage(rest), sansUsage(created));

    const deleteAgain = await sdkError(NotFoundError, () => kernel.browsers.deleteByID(id));
    assert.equal(deleteAgain.status, 404);
  });

  test('browsers.list paginates with X-Has-More / X-Next-Offset', async () => {
    const ids: string[] = [];
    try {
      for (let i = 0; i < 3; i++) ids.push((await kernel.browsers.create({ headless: true })).session_id);
      assert.equal(new Set(ids).size, 3);

      const seen: string[] = [];
      for await (const s of kernel.browsers.list({ limit: 2 })) seen.push(s.session_id);
      assert.equal(seen.length, 3, `iterated ${JSON.stringify(seen)}`);
      assert.deepEqual([...seen].sort(), [...ids].sort());

      const firstPage = await kernel.browsers.list({ limit: 2 });
      assert.equal(firstPage.getPaginatedItems().length, 2);
      assert.equal(firstPage.has_more, true);
      assert.equal(firstPage.next_offset, 2);
      assert.equal(firstPage.hasNextPage(), true);
      const second = await firstPage.getNextPage();
      assert.equal(second.getPaginatedItems().length, 1);
      assert.equal(second.has_more, false);
      assert.equal(second.next_offset, 0);
      assert.equal(second.hasNextPage(), false);

      const raw = await daemon.api('GET', '/browsers?limit=2');
      assert.equal(raw.status, 200);
      assert.equal(raw.headers.get('x-has-more'), 'true');
      assert.equal(raw.headers.get('x-next-offset'), '2');
      assert.equal(raw.body.length, 2);
      const rawLast = await daemon.api('GET', '/browsers?limit=2&offset=2');
      assert.equal(rawLast.headers.get('x-has-more'), 'false');
      assert.equal(rawLast.headers.get('x-next-offset'), '0');
      assert.equal(rawLast.body.length, 1);
      assert.deepEqual([...raw.body, ...rawLast.body].map((s: { session_id: string }) => s.session_id).sort(), [...ids].sort());

      // status filters: delete one, then active lists 2 and deleted lists 1.
      await kernel.browsers.deleteByID(ids[0]!);
      const active: string[] = [];
      for await (const s of kernel.browsers.list({ status: 'active', limit: 2 })) active.push(s.session_id);
      assert.deepEqual(active.sort(), ids.slice(1).sort());
      const deleted: string[] = [];
      for await (const s of kernel.browsers.list({ status: 'deleted' })) deleted.push(s.session_id);
      // The session deleted by the previous test is listed too.
      assert.equal(deleted.length, 2, JSON.stringify(deleted));
      assert.equal(deleted[0], ids[0], 'deleted sessions are not listed newest first');
      assert.equal(ids.includes(deleted[1]!), false);
      const all: string[] = [];
      for await (const s of kernel.browsers.list({ status: 'all', limit: 1 })) all.push(s.session_id);
      assert.equal(all.length, 4, JSON.stringify(all));
      assert.equal(new Set(all).size, 4, 'pagination repeated a session');
      assert.deepEqual(all.slice(0, 3).sort(), [...ids].sort());
    } finally {
      for (const id of ids) {
        const r = await daemon.api('DELETE', `/browsers/${id}`);
        assert.ok(r.status === 204 || r.status === 404, `cleanup of ${id}: ${r.status} ${r.text}`);
      }
    }
    const left = await daemon.api('GET', '/browsers');
    assert.deepEqual(left.body, []);
  });

  test('validation errors: BadRequestError with invalid_input details, not retried', async () => {
    const err = await sdkError(BadRequestError, () => kernel.browsers.create({ headless: true, timeout_seconds: 5 }));
    assert.equal(err.status, 400);
    const body = err.error as { code: string; message: string; details?: { code: string; message: string }[] };
    assert.equal(body.code, 'bad_request');
    assert.equal(typeof body.message, 'string');
    assert.ok(Array.isArray(body.details) && body.details.length >= 1, `no details: ${JSON.stringify(body)}`);
    assert.equal(body.details[0]!.code, 'invalid_input');
    assert.match(body.details[0]!.message, /timeout_seconds/);
    assert.equal(err.headers?.get('x-should-retry'), 'false');

    const raw = await daemon.api('POST', '/browsers', { headless: true, timeout_seconds: 5 });
    assert.equal(raw.status, 400);
    assert.equal(raw.headers.get('x-should-retry'), 'false');
    assert.match(raw.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(raw.body.code, 'bad_request');
    assert.equal(raw.body.details[0].code, 'invalid_input');
    assert.match(raw.body.details[0].message, /timeout_seconds/);

    const rawHigh = await daemon.api('POST', '/browsers', { headless: true, timeout_seconds: 259201 });
    assert.equal(rawHigh.status, 400);
    assert.equal(rawHigh.headers.get('x-should-retry'), 'false');

    const notFound = await daemon.api('GET', '/browsers/nosuchid');
    assert.equal(notFound.status, 404);
    assert.equal(notFound.headers.get('x-should-retry'), 'false');

    const badViewport = await sdkError(BadRequestError, () => kernel.browsers.create({ headless: true, viewport: { width: 123, height: 45 } }));
    assert.equal(badViewport.status, 400);
    assert.equal((badViewport.error as { code: string }).code, 'bad_request');

    const unauth = new Kernel({ apiKey: 'sk_wrong', baseURL: daemon.baseUrl, maxRetries: 0 });
    const authErr = await sdkError(APIError, () => unauth.browsers.retrieve('anything'));
    assert.equal(authErr.status, 401);

    // Nothing was created by the failed calls.
    assert.deepEqual(
      (await daemon.api('GET', '/browsers?status=all')).body.filter((s: { timeout_seconds: number }) => s.timeout_seconds === 5),
      [],
    );
  });

  // Last: the pagination test above counts the sessions earlier tests deleted.
  test("sub-resources routed to the session's base_url (KERNEL_BROWSER_ROUTING_SUBRESOURCES) work with the jwt alone", async () => {
    const before = process.env.KERNEL_BROWSER_ROUTING_SUBRESOURCES;
    process.env.KERNEL_BROWSER_ROUTING_SUBRESOURCES = 'computer,fs,process,playwright,replays,logs';
    // The SDK reads the setting when it is made; what it sends to base_url is seen by a fetch of our own.
    const seen: string[] = [];
    const routed = new Kernel({
      apiKey: daemon.apiKey,
      baseURL: daemon.baseUrl,
      maxRetries: 0,
      fetch: (url, init) => {
        seen.push(String(url));
        return fetch(url, init);
      },
    });
    if (before === undefined) delete process.env.KERNEL_BROWSER_ROUTING_SUBRESOURCES;
    else process.env.KERNEL_BROWSER_ROUTING_SUBRESOURCES = before;
    const b = await routed.browsers.create({ headless: true });
    try {
      const ran = await routed.browsers.process.exec(b.session_id, { command: 'sh', args: ['-c', 'echo routed > /tmp/r.txt; cat /tmp/r.txt'] });
      assert.equal(Buffer.from(ran.stdout_b64 ?? '', 'base64').toString(), 'routed\n');
      assert.equal(await (await routed.browsers.fs.readFile(b.session_id, { path: '/tmp/r.txt' })).text(), 'routed\n');
      const shot = await routed.browsers.computer.captureScreenshot(b.session_id);
      assert.equal(
        Buffer.from(await shot.arrayBuffer())
          .subarray(1, 4)
          .toString(),
        'PNG',
      );
      const pw = await routed.browsers.playwright.execute(b.session_id, { code: 'return 6 * 7;' });
      assert.equal(pw.result, 42);
      assert.deepEqual(await routed.browsers.replays.list(b.session_id), []);
      // They went to base_url, not to /browsers/{id}.
      const viaBase = seen.filter((u) => u.startsWith(`${b.base_url}/`));
      assert.ok(
        viaBase.some((u) => u.startsWith(`${b.base_url}/process/exec?`)) && viaBase.some((u) => u.startsWith(`${b.base_url}/fs/read_file?`)),
        seen.join('\n'),
      );
      // A jwt is the only key there: none, a wrong one, or another session's gets nothing.
      assert.equal((await fetch(`${b.base_url}/fs/read_file?path=/tmp/r.txt`)).status, 401);
      assert.equal((await fetch(`${b.base_url}/fs/read_file?path=/tmp/r.txt&jwt=not-a-jwt`)).status, 401);
      const other = await kernel.browsers.create({ headless: true });
      const otherJwt = new URL(other.cdp_ws_url).searchParams.get('jwt')!;
      await fetch(`${daemon.baseUrl}/browsers/${other.session_id}/process/exec`, {
        method: 'POST',
        headers: { authorization: `Bearer ${daemon.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command: 'sh', args: ['-c', 'echo theirs > /tmp/r.txt'] }),
      });
      // Each session has a base_url of its own: another session's jwt finds nothing at this one...
      assert.notEqual(other.base_url, b.base_url);
      const atMine = await fetch(`${b.base_url}/fs/read_file?path=/tmp/r.txt&jwt=${otherJwt}`);
      assert.equal(atMine.status, 404, await atMine.text());
      // ...and reaches its own session at its own base_url, and at the shared one of old.
      assert.equal(await (await fetch(`${other.base_url}/fs/read_file?path=/tmp/r.txt&jwt=${otherJwt}`)).text(), 'theirs\n');
      const shared = await fetch(`${daemon.baseUrl}/browser/fs/read_file?path=/tmp/r.txt&jwt=${otherJwt}`);
      assert.equal(await shared.text(), 'theirs\n', 'the shared base_url still answers, for the session the jwt names');
      const mine = new URL(b.cdp_ws_url).searchParams.get('jwt')!;
      assert.equal(await (await fetch(`${daemon.baseUrl}/browser/fs/read_file?path=/tmp/r.txt&jwt=${mine}`)).text(), 'routed\n');
      await kernel.browsers.deleteByID(other.session_id);
    } finally {
      await kernel.browsers.deleteByID(b.session_id);
    }
  });

  test("memory on create is the session's memory limit; region is kept; bad values are 400s", async () => {
    const network = { private_hosts: ['10.1.0.0/16', 'preview.internal'] };
    const big = await daemon.api('POST', '/browsers', { headless: true, memory: '16GiB', region: 'eu-west', network });
    assert.equal(big.status, 200, big.text);
    try {
      assert.deepEqual([big.body.memory, big.body.region, big.body.network], ['16GiB', 'eu-west', network]);
      // The box's memory group (cgroup v1 here, v2 elsewhere) holds 16 GiB now.
      const groups = (await import('node:child_process'))
        .execFileSync('sh', ['-c', `find /sys/fs/cgroup -maxdepth 6 -type d -name '${big.body.session_id}' 2>/dev/null`])
        .toString()
        .trim()
        .split('\n')
        .filter(Boolean);
      const limits = await Promise.all(
        groups.map(async (g) => (await import('node:fs/promises')).readFile(`${g}/memory.limit_in_bytes`, 'utf8').catch(() => readMax(g))),
      );
      assert.ok(
        limits.some((l) => Number(l) === 16 * 1024 ** 3),
        `limits ${limits}`,
      );
    } finally {
      await daemon.api('DELETE', `/browsers/${big.body.session_id}`);
    }
    for (const body of [{ memory: '4GiB' }, { region: 'mars' }, { network: { private_hosts: [''] } }, { network: { vpn: true } }])
      assert.equal((await daemon.api('POST', '/browsers', { headless: true, ...body })).status, 400);
    async function readMax(g: string) {
      return (await import('node:fs/promises')).readFile(`${g}/memory.max`, 'utf8').catch(() => '');
    }
  });

  test('gpu: false is what every session has; true is a 400 saying why; list query finds a session by its profile; profile_save_changes', async () => {
    const plain = await kernel.browsers.create({ headless: true, gpu: false } as never);
    try {
      assert.equal((plain as { gpu?: boolean }).gpu, false);
      assert.equal((plain as { profile_save_changes?: boolean }).profile_save_changes, undefined, 'absent without a profile');
    } finally {
      await kernel.browsers.deleteByID(plain.session_id);
    }
    const headlessGpu = await daemon.api('POST', '/browsers', { headless: true, gpu: true });
    assert.equal(headlessGpu.status, 400, headlessGpu.text);
    assert.match(headlessGpu.body.message, /gpu: GPU acceleration is for headful sessions only/);
    const gpu = await daemon.api('POST', '/browsers', { headless: false, gpu: true });
    assert.equal(gpu.status, 400, gpu.text);
    assert.match(gpu.body.message, /gpu: (this machine has no GPU|this daemon does not pass a GPU)/);

    await kernel.profiles.create({ name: 'Findable-Profile' });
    const reader = await kernel.browsers.create({ headless: true, profile: { name: 'Findable-Profile' } });
    try {
      assert.equal((reader as { profile_save_changes?: boolean }).profile_save_changes, false);
      for (const query of ['findable-profile', 'Findable', reader.profile!.id]) {
        const found = (await daemon.api('GET', `/browsers?query=${encodeURIComponent(query)}`)).body.map((b: { session_id: string }) => b.session_id);
        assert.deepEqual(found, [reader.session_id], `query ${query}`);
      }
      // Control: a query that matches nothing of it finds nothing.
      assert.deepEqual((await daemon.api('GET', '/browsers?query=unfindable')).body, []);
    } finally {
      await kernel.browsers.deleteByID(reader.session_id);
    }
    await waitFor(async () => (await daemon.api('DELETE', '/profiles/Findable-Profile')).status === 204, 30_000, 'the profile to be free');
  });
});
