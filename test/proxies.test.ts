import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import Kernel, { BadRequestError as SdkBadRequest, NotFoundError as SdkNotFound } from '@onkernel/sdk';
import { execa } from 'execa';
import { chromium, type Browser, type Page } from 'playwright';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { upstreamFor } from '../daemon/features/proxies/upstream.js';
import { CLI, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';
import { throwawayCa } from './helpers/throwaway-ca.js';
import { selfSignedCert, startFixtureProxy, TEST_HOST, type FixtureProxy } from './helpers/forward-proxy.js';

// Characters that break naive URL or header building: @ : % / and non-ASCII.
const PASSWORD = 'p@ss:w%41rd/ü-secret';
const USER = 'alice';

let d: TestDaemon;
let kernel: Kernel;
let otherKey: string;
let cert: Awaited<ReturnType<typeof selfSignedCert>>;
let alice: FixtureProxy; // requires USER / PASSWORD
let bob: FixtureProxy; // open
let carol: FixtureProxy; // TLS, requires USER / PASSWORD
let pages: Awaited<ReturnType<typeof startFixtureServer>>;

before(async () => {
  cert = await selfSignedCert();
  alice = await startFixtureProxy({ label: 'alice', username: USER, password: PASSWORD });
  bob = await startFixtureProxy({ label: 'bob' });
  carol = await startFixtureProxy({ label: 'carol', username: USER, password: PASSWORD, tls: cert });
  pages = await startFixtureServer();
  // The daemon trusts the TLS proxy's self-signed certificate as it would a real one's CA.
  d = await startTestDaemon({ env: { NODE_EXTRA_CA_CERTS: cert.certFile } });
  kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
  otherKey = (await d.cli(['auth', 'create-key', '--org', 'proxies-other'])).stdout.trim();
});
after(async () => {
  try {
    await d?.stop();
  } finally {
    await Promise.all([alice, bob, carol, pages].map((s) => s?.close()));
    await cert?.remove();
  }
});

/** Sessions (any org) and proxies the tests made, removed after each test. */
const sessions: { id: string; key: string }[] = [];
const proxies: string[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await d.api('DELETE', `/browsers/${s.id}`, undefined, s.key);
  for (const id of proxies.splice(0)) {
    const res = await d.api('DELETE', `/proxies/${id}`);
    assert.ok([204, 404].includes(res.status), res.text);
  }
});

const custom = (fixture: FixtureProxy, extra: { username?: string; password?: string } = {}) => ({
  type: 'custom',
  config: { host: '127.0.0.1', port: fixture.port, ...extra },
});

async function createProxy(body: object, key = d.apiKey) {
  const res = await d.api('POST', '/proxies', body, key);
  assert.equal(res.status, 200, res.text);
  proxies.push(res.body.id);
  return res.body;
}

async function createSession(body: object, key = d.apiKey) {
  const res = await d.api('POST', '/browsers', { headless: true, ...body }, key);
  assert.equal(res.status, 200, res.text);
  sessions.push({ id: res.body.session_id, key });
  return res.body;
}

async function patchProxy(sessionId: string, proxy_id: string | null) {
  const res = await d.api('PATCH', `/browsers/${sessionId}`, { proxy_id });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** What the page shows for TEST_HOST: the label of the proxy that answered. */
async function via(page: Page, path: string): Promise<string> {
  const res = await page.goto(`http://${TEST_HOST}${path}`);
  assert.equal(res?.status(), 200, `${path} loads`);
  return (await page.textContent('#via')) ?? '';
}

/**
 * Opens a websocket to TEST_HOST in the page (a CONNECT tunnel through the proxies) and returns what
 * it said. A failure says how the socket closed and what the proxy expected to serve it had seen,
 * so a rare failure carries what is needed to understand it.
 */
async function openSocket(page: Page, proxy: FixtureProxy): Promise<string> {
  const started = Date.now();
  return page
    .evaluate(
      (host) =>
        new Promise<string>((resolve, reject) => {
          const ws = new WebSocket(`ws://${host}/ws`);
          (window as any).__ws = { closed: false };
          let failed = false;
          ws.onmessage = (e) => resolve(String(e.data));
          ws.onerror = () => (failed = true);
          ws.onclose = (e) => {
            (window as any).__ws.closed = true;
            if (failed) reject(new Error(`websocket failed (close ${e.code}${e.reason ? ` ${e.reason}` : ''})`));
          };
        }),
      TEST_HOST,
    )
    .catch((err: Error) => {
      throw new Error(
        `${err.message} after ${Date.now() - started} ms; ${proxy.label} saw ${JSON.stringify(proxy.seen.slice(-4))}, ${proxy.challenges} challenges`,
      );
    });
}

/** The command lines and environments of every process of the daemon's sessions. */
async function sessionProcessText(): Promise<string> {
  const texts = await Promise.all(
    (await findMarkedProcesses(d.home)).map(async (pid) => {
      const read = (f: string) => readFile(`/proc/${pid}/${f}`, 'utf8').catch(() => '');
      return `${await read('cmdline')}\n${await read('environ')}`.replaceAll('\0', ' ');
    }),
  );
  return texts.join('\n');
}

/** A MITM proxy's CA and the certificate it would present for 127.0.0.1, in a directory of their own. */
async function testAuthority() {
  const dir = await mkdtemp(join(tmpdir(), 'rbrowse-ca-'));
  const { caPem, key, cert } = await throwawayCa(dir);
  return { caPem, leafKey: key, leafCert: cert, remove: () => rm(dir, { recursive: true, force: true }) };
}

function assertFieldError(res: { status: number; body: any; text: string; headers: Headers }, field: string) {
  assert.equal(res.status, 400, res.text);
  assert.equal(res.body.code, 'bad_request', res.text);
  assert.ok(
    (res.body.details ?? []).some((x: { message: string }) => x.message.includes(field)) || res.body.message.includes(field),
    `the error names ${field}: ${res.text}`,
  );
  assert.equal(res.headers.get('x-should-retry'), 'false');
}

describe('proxies API', () => {
  test('create, get, list, rename and delete a custom proxy; its password is never returned and is kept out of state.json', async () => {
    const p = await createProxy({ ...custom(alice, { username: USER, password: PASSWORD }), name: ' Office Proxy ' });
    assert.match(p.id, /^[a-z0-9]{24}$/);
    assert.equal(p.type, 'custom');
    assert.equal(p.name, 'Office Proxy', 'names are trimmed');
    assert.equal(p.protocol, 'http');
    assert.deepEqual(p.config, { host: '127.0.0.1', port: alice.port, username: USER, has_password: true, has_ca_bundle: false });

    const got = await d.api('GET', `/proxies/${p.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, p);
    const open = await createProxy(custom(bob));
    assert.equal(open.config.has_password, false);

    const listed = await d.api('GET', '/proxies');
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.map((x: any) => x.id),
      [p.id, open.id],
    );
    assert.equal(listed.headers.get('x-has-more'), 'false');
    const page = await d.api('GET', '/proxies?limit=1');
    assert.deepEqual(
      page.body.map((x: any) => x.id),
      [p.id],
    );
    assert.equal(page.headers.get('x-has-more'), 'true');
    assert.equal(page.headers.get('x-next-offset'), '1');
    assert.deepEqual(
      (await d.api('GET', '/proxies?name=office%20PROXY')).body.map((x: any) => x.id),
      [p.id],
      'name: exact, any case',
    );
    assert.deepEqual(
      (await d.api('GET', `/proxies?query=${p.id}`)).body.map((x: any) => x.id),
      [p.id],
    );
    assert.equal((await d.api('GET', '/proxies?query=127.0.0')).body.length, 2, 'query matches the host');
    assert.equal((await d.api('GET', '/proxies?query=nothing-like-this')).body.length, 0);

    const renamed = await d.api('PATCH', `/proxies/${p.id}`, { name: '  renamed ' });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.name, 'renamed');

    for (const res of [got, listed, renamed]) assert.ok(!res.text.includes(PASSWORD) && !res.text.includes('"password"'), res.text);
    const state = await readFile(join(d.home, 'state.json'), 'utf8');
    assert.ok(state.includes(p.id) && !state.includes(PASSWORD), 'state.json holds the proxy but not its password');
    const secret = join(d.home, 'credentials', 'proxies', p.id);
    assert.equal((await stat(secret)).mode & 0o777, 0o600);
    assert.equal(await readFile(secret, 'utf8'), PASSWORD);

    assert.equal((await d.api('DELETE', `/proxies/${p.id}`)).status, 204);
    assert.equal((await d.api('GET', `/proxies/${p.id}`)).status, 404);
    assert.equal((await d.api('DELETE', `/proxies/${p.id}`)).status, 404);
    await assert.rejects(stat(secret), { code: 'ENOENT' }, 'the password goes with the proxy');
  });

  test('bad input is a 400 naming the field; Kernel-managed types need Kernel', async () => {
    const ok = { host: '127.0.0.1', port: 3128 };
    const cases: [object, string][] = [
      [{ type: 'custom' }, 'config.host'],
      [{ type: 'custom', config: { host: '127.0.0.1' } }, 'config.port'],
      [{ type: 'custom', config: { port: 3128 } }, 'config.host'],
      [{ type: 'custom', config: { ...ok, host: 'not a host' } }, 'config.host'],
      [{ type: 'custom', config: { ...ok, host: 'http://proxy.example.com' } }, 'config.host'],
      [{ type: 'custom', config: { ...ok, host: '' } }, 'config.host'],
      [{ type: 'custom', config: { ...ok, port: 0 } }, 'config.port'],
      [{ type: 'custom', config: { ...ok, port: 65536 } }, 'config.port'],
      [{ type: 'custom', config: { ...ok, port: '3128' } }, 'config.port'],
      [{ type: 'custom', config: { ...ok, port: 31.5 } }, 'config.port'],
      [{ type: 'custom', config: { ...ok, username: 'a:b' } }, 'config.username'],
      [{ type: 'custom', config: { ...ok, password: 'line\nbreak' } }, 'config.password'],
      [{ type: 'custom', config: { ...ok, pasword: 'typo' } }, 'config.pasword'],
      [{ type: 'custom', config: { ...ok, country: 'US' } }, 'config.country'],
      [{ type: 'custom', config: ok, protocol: 'socks5' }, 'protocol'],
      [{ type: 'custom', config: ok, name: '   ' }, 'name'],
      [{ type: 'custom', config: ok, bypass_hosts: ['has space'] }, 'bypass_hosts.0'],
      [{ type: 'custom', config: ok, extra: 1 }, 'extra'],
      [{ type: 'socks5', config: ok }, 'type'],
      [{ config: ok }, 'type'],
    ];
    for (const [body, field] of cases) assertFieldError(await d.api('POST', '/proxies', body), field);
    for (const type of ['datacenter', 'isp', 'residential', 'mobile']) {
      const res = await d.api('POST', '/proxies', { type, config: { country: 'US' } });
      assertFieldError(res, 'type');
      assert.match(res.body.message, /managed network/, res.text);
    }
    assert.equal((await d.api('GET', '/proxies')).body.length, 0, 'nothing was created');

    const p = await createProxy(custom(bob));
    assertFieldError(await d.api('PATCH', `/proxies/${p.id}`, {}), 'name');
    assertFieldError(await d.api('PATCH', `/proxies/${p.id}`, { name: ' ' }), 'name');
    assertFieldError(await d.api('POST', `/proxies/${p.id}/check`, { url: 'ftp://example.com/' }), 'url');
    assertFieldError(await d.api('GET', '/proxies?limit=0'), 'limit');
    const unknown = await d.api('POST', '/browsers', { headless: true, proxy_id: 'nosuchproxy0000000000000' });
    assert.equal(unknown.status, 404, unknown.text);
    assert.match(unknown.body.message, /proxy nosuchproxy0000000000000 not found/);
  });

  test("another organization's proxy is not found: routes, POST /browsers, PATCH /browsers and pools", async () => {
    const p = await createProxy(custom(bob));
    for (const [method, path, body] of [
      ['GET', `/proxies/${p.id}`],
      ['PATCH', `/proxies/${p.id}`, { name: 'mine now' }],
      ['POST', `/proxies/${p.id}/check`, {}],
      ['DELETE', `/proxies/${p.id}`],
      ['POST', '/browsers', { headless: true, proxy_id: p.id }],
      ['POST', '/browser_pools', { size: 1, headless: true, proxy_id: p.id }],
    ] as [string, string, object?][]) {
      const res = await d.api(method, path, body, otherKey);
      assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
      assert.equal(res.body.code, 'not_found');
    }
    assert.deepEqual((await d.api('GET', '/proxies', undefined, otherKey)).body, []);
    assert.equal((await d.api('GET', '/browsers', undefined, otherKey)).body.length, 0, 'no browser was started');

    const theirs = await createSession({}, otherKey);
    const patched = await d.api('PATCH', `/browsers/${theirs.session_id}`, { proxy_id: p.id }, otherKey);
    assert.equal(patched.status, 404, patched.text);
    const after = await d.api('GET', `/browsers/${theirs.session_id}`, undefined, otherKey);
    assert.equal(after.body.proxy_id, undefined, 'the refused PATCH changed nothing');
    assert.equal((await d.api('GET', `/proxies/${p.id}`)).status, 200, 'the proxy is still there for its owner');
  });

  test('a pool configured with a proxy keeps it from being deleted', async () => {
    const p = await createProxy(custom(bob));
    const pool = await d.api('POST', '/browser_pools', { name: 'proxied', size: 1, headless: true, fill_rate_per_minute: 1, proxy_id: p.id });
    assert.equal(pool.status, 200, pool.text);
    try {
      assert.equal(pool.body.browser_pool_config.proxy_id, p.id);
      const refused = await d.api('DELETE', `/proxies/${p.id}`);
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.code, 'resource_in_use');
      assert.match(refused.body.message, /browser pool\(s\) proxied/);
    } finally {
      assert.equal((await d.api('DELETE', `/browser_pools/${pool.body.id}`, { force: true })).status, 204);
    }
    await waitFor(async () => (await d.api('GET', '/browsers')).body.length === 0, 30_000, 'the pool browser to end');
    assert.equal((await d.api('DELETE', `/proxies/${p.id}`)).status, 204);
  });

  test("a proxy a managed-auth connection uses is not deleted (400 resource_in_use); the SDK's {id, name} form is taken when both name it", async () => {
    const p = await createProxy({ ...custom(bob), name: 'auth-proxy' });
    const mismatched = await d.api('POST', '/auth/connections', {
      domain: 'proxied.example',
      profile_name: 'proxied-profile',
      proxy: { id: p.id, name: 'another-name' },
    });
    assert.equal(mismatched.status, 400, mismatched.text);
    assert.match(mismatched.body.message, /proxy: proxy \w+ is named "auth-proxy", not "another-name"/);
    const connection = await d.api('POST', '/auth/connections', {
      domain: 'proxied.example',
      profile_name: 'proxied-profile',
      proxy: { id: p.id, name: 'auth-proxy' },
    });
    assert.equal(connection.status, 200, connection.text);
    try {
      assert.equal(connection.body.proxy_id, p.id);
      const refused = await d.api('DELETE', `/proxies/${p.id}`);
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.code, 'resource_in_use');
      assert.match(refused.body.message, new RegExp(`auth connection\\(s\\) ${connection.body.id}`));
    } finally {
      assert.equal((await d.api('DELETE', `/auth/connections/${connection.body.id}`)).status, 204);
    }
    // Control: with the connection gone, the same delete goes through.
    assert.equal((await d.api('DELETE', `/proxies/${p.id}`)).status, 204);
  });

  test("a MITM proxy's CA bundle: the browsers of sessions created with the proxy trust it, others do not", async () => {
    const ca = await testAuthority();
    const site = createHttpsServer({ key: ca.leafKey, cert: ca.leafCert }, (_req, res) => res.end('<p id="ok">trusted by its CA</p>'));
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    try {
      const url = `https://127.0.0.1:${(site.address() as AddressInfo).port}/`;
      const withCa = await createProxy({ ...custom(bob), config: { ...custom(bob).config, ca_bundle: ca.caPem } });
      assert.deepEqual([withCa.config.has_ca_bundle, withCa.ip_address], [true, '127.0.0.1']);
      assert.equal((await d.api('GET', `/proxies/${withCa.id}`)).body.config.ca_bundle, undefined, 'the bundle is not echoed');
      const without = await createProxy(custom(bob));
      assert.equal(without.config.has_ca_bundle, false);
      assertFieldError(
        await d.api('POST', '/proxies', { ...custom(bob), config: { ...custom(bob).config, ca_bundle: 'not a PEM' } }),
        'config.ca_bundle',
      );
      const broken = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
      assertFieldError(await d.api('POST', '/proxies', { ...custom(bob), config: { ...custom(bob).config, ca_bundle: broken } }), 'config.ca_bundle');

      const load = async (proxyId: string) => {
        const s = await createSession({ proxy_id: proxyId });
        const browser = await chromium.connectOverCDP(s.cdp_ws_url);
        try {
          const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
          return await page.goto(url).then(
            async () => (await page.textContent('#ok')) ?? '',
            (err: Error) => err.message,
          );
        } finally {
          await browser.close();
        }
      };
      assert.equal(await load(withCa.id), 'trusted by its CA');
      // Control: the same page from a session whose proxy has no CA is refused by Chromium.
      assert.match(await load(without.id), /ERR_CERT_AUTHORITY_INVALID/);
    } finally {
      site.close();
      await ca.remove();
    }
  });

  test('check: the proxy answers and takes its credentials; with a url, the target is reached through it', async () => {
    const good = await createProxy(custom(alice, { username: USER, password: PASSWORD }));
    const wrong = await createProxy(custom(alice, { username: USER, password: 'not-the-password' }));
    const tls = await createProxy({ ...custom(carol, { username: USER, password: PASSWORD }), protocol: 'https' });
    const closedPort = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    });
    const dead = await createProxy({ type: 'custom', config: { host: '127.0.0.1', port: closedPort } });

    const checked = await d.api('POST', `/proxies/${good.id}/check`, {});
    assert.equal(checked.status, 200, checked.text);
    assert.equal(checked.body.status, 'available');
    assert.ok(!Number.isNaN(Date.parse(checked.body.last_checked)));
    assert.equal((await d.api('GET', `/proxies/${good.id}`)).body.status, 'available', 'the result is kept');
    const challenges = alice.challenges;
    assert.equal((await d.api('POST', `/proxies/${wrong.id}/check`)).body.status, 'unavailable');
    assert.equal(alice.challenges, challenges + 1, 'the wrong password reached the proxy and was refused');
    assert.equal((await d.api('POST', `/proxies/${dead.id}/check`)).body.status, 'unavailable');
    assert.equal((await d.api('POST', `/proxies/${tls.id}/check`)).body.status, 'available', 'TLS to the proxy');

    const before = alice.seen.length;
    const withUrl = await d.api('POST', `/proxies/${wrong.id}/check`, { url: `http://${TEST_HOST}/check` });
    assert.equal(withUrl.body.status, 'unavailable');
    const reached = await d.api('POST', `/proxies/${good.id}/check`, { url: `http://${TEST_HOST}/check` });
    assert.equal(reached.body.status, 'available', reached.text);
    assert.deepEqual(alice.seen.slice(before), [`GET http://${TEST_HOST}/check`]);
    const tunnel = await d.api('POST', `/proxies/${tls.id}/check`, { url: `https://${TEST_HOST}/` });
    assert.equal(tunnel.body.status, 'available', tunnel.text);
    assert.equal(carol.seen.at(-1), `CONNECT ${TEST_HOST}:443`);
    assert.equal((await d.api('GET', `/proxies/${wrong.id}`)).body.status, 'unavailable', 'a check with a url is not stored');
  });
});

describe('sessions through proxies', () => {
  test('traffic goes through the session proxy with the daemon adding the credentials; PATCH swaps and removes it live on one CDP connection', async () => {
    const a = await createProxy(custom(alice, { username: USER, password: PASSWORD }));
    const b = await createProxy(custom(bob));
    const s = await createSession({ proxy_id: a.id });
    assert.equal(s.proxy_id, a.id);

    const procs = await sessionProcessText();
    assert.match(procs, /--proxy-server=http:\/\/127\.0\.0\.1:\d+/, 'Chromium talks to the local forwarder');
    assert.ok(!procs.includes(PASSWORD) && !procs.includes(`127.0.0.1:${alice.port}`), 'Chromium never sees the upstream or its password');

    let browser: Browser | undefined;
    try {
      browser = await chromium.connectOverCDP(s.cdp_ws_url);
      const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());

      const challenges = alice.challenges;
      assert.equal(await via(page, '/one'), 'alice');
      assert.ok(alice.seen.includes(`GET http://${TEST_HOST}/one`));
      assert.equal(alice.challenges, challenges, 'the first request already carried the credentials: no 407, so no auth prompt');
      // Loopback is never proxied (Chromium's implicit bypass): local pages load direct.
      assert.equal((await page.goto(`${pages.url}/hello.html`))?.status(), 200);
      assert.ok(!alice.seen.some((r) => r.includes('hello.html')), 'the loopback page went direct');

      assert.equal(await openSocket(page, alice), 'alice', 'a websocket tunnels through the proxy');
      assert.equal(alice.openSockets(), 1);

      // Swap to bob: the websocket's tunnel through alice is closed, new traffic goes to bob.
      assert.equal((await patchProxy(s.session_id, b.id)).proxy_id, b.id);
      await waitFor(() => page.evaluate(() => (window as any).__ws.closed as boolean), 30_000, 'the old tunnel to close');
      await waitFor(() => alice.openSockets() === 0, 10_000, 'alice to lose the websocket');
      const aliceBefore = alice.seen.length;
      assert.equal(await via(page, '/two'), 'bob');
      assert.ok(bob.seen.includes(`GET http://${TEST_HOST}/two`));
      assert.equal(await openSocket(page, bob), 'bob');
      assert.ok(bob.seen.includes(`CONNECT ${TEST_HOST}:80`));
      assert.ok(!alice.seen.slice(aliceBefore).some((r) => r.includes('/two') || r.startsWith('CONNECT')), 'alice sees none of it');

      // null leaves the proxy as it is.
      assert.equal((await patchProxy(s.session_id, null)).proxy_id, b.id);

      // "" removes it: direct from now on (and TEST_HOST resolves nowhere).
      const direct = await patchProxy(s.session_id, '');
      assert.equal(direct.proxy_id, undefined);
      assert.equal((await d.api('GET', `/browsers/${s.session_id}`)).body.proxy_id, undefined);
      const res = await page.goto(`http://${TEST_HOST}/three`).catch(() => null);
      assert.notEqual(res?.status(), 200, 'no proxy answers TEST_HOST any more');
      assert.ok(![...alice.seen, ...bob.seen].some((r) => r.includes('/three')), 'neither proxy sees the request');
      assert.ok(browser.isConnected(), 'the CDP connection stayed open');
      assert.equal(await page.evaluate(() => 6 * 7), 42);
      assert.equal((await page.goto(`${pages.url}/hello.html`))?.status(), 200, 'direct traffic still flows');

      // A direct session gets a proxy again by PATCH.
      await patchProxy(s.session_id, a.id);
      assert.equal(await via(page, '/four'), 'alice');

      // A proxy in use cannot be deleted; one no longer used can.
      const conflict = await d.api('DELETE', `/proxies/${a.id}`);
      assert.equal(conflict.status, 400, conflict.text);
      assert.equal(conflict.body.code, 'resource_in_use');
      assert.match(conflict.body.message, new RegExp(s.session_id));
      assert.equal((await d.api('DELETE', `/proxies/${b.id}`)).status, 204);

      // Wrong credentials: the upstream's 407 becomes a 5xx from the forwarder (proxy-chain's 597,
      // "upstream auth failed"), never a 407 that would make Chromium prompt.
      const wrong = await createProxy(custom(alice, { username: USER, password: 'not-the-password' }));
      await patchProxy(s.session_id, wrong.id);
      const before = alice.challenges;
      const refused = await page.goto(`http://${TEST_HOST}/five`);
      assert.ok(refused && refused.status() >= 500 && refused.status() !== 407, `status ${refused?.status()}`);
      assert.ok(alice.challenges > before, 'the upstream refused the wrong password');
      assert.ok(!alice.seen.includes(`GET http://${TEST_HOST}/five`));

      for (const path of ['/browsers', `/browsers/${s.session_id}`, '/proxies']) {
        const text = (await d.api('GET', path)).text;
        assert.ok(!text.includes(PASSWORD), `${path} never shows the password`);
      }
      assert.ok(browser.isConnected());
    } finally {
      await browser?.close();
    }
    assert.equal((await d.api('DELETE', `/browsers/${s.session_id}`)).status, 204);
    assert.equal((await d.api('DELETE', `/proxies/${a.id}`)).status, 204, 'free once its session ended');
  });

  test('a session created without a proxy gets one by PATCH (a TLS proxy with credentials); bypass_hosts go direct', async () => {
    const tls = await createProxy({ ...custom(carol, { username: USER, password: PASSWORD }), protocol: 'https' });
    assert.equal(tls.protocol, 'https');
    const s = await createSession({});
    assert.equal(s.proxy_id, undefined);
    assert.deepEqual(s.proxy, { mode: 'default' }, 'no proxy of its own: the default egress');
    const browser = await chromium.connectOverCDP(s.cdp_ws_url);
    try {
      const page = await browser.contexts()[0]!.newPage();
      assert.equal((await page.goto(`${pages.url}/hello.html`))?.status(), 200);
      assert.equal((await patchProxy(s.session_id, tls.id)).proxy_id, tls.id);
      assert.equal(await via(page, '/tls'), 'carol');
      assert.ok(carol.seen.includes(`GET http://${TEST_HOST}/tls`));
      assert.equal(await openSocket(page, carol), 'carol', 'a tunnel through the TLS proxy');
      assert.equal(carol.challenges, 0);

      // bypass_hosts go direct, the rest through the proxy.
      const bypassing = await createProxy({ ...custom(bob), bypass_hosts: ['*.direct.invalid'] });
      await patchProxy(s.session_id, bypassing.id);
      const res = await page.goto(`http://www.direct.invalid/skipped`).catch(() => null);
      assert.notEqual(res?.status(), 200);
      assert.ok(!bob.seen.some((r) => r.includes('direct.invalid')), 'the bypassed host did not reach the proxy');
      assert.equal(await via(page, '/not-bypassed'), 'bob');

      // Kernel's `proxy` object (0.94): by name, by id, or a mode; answered as the resolved proxy.
      const named = await createProxy({ ...custom(alice, { username: USER, password: PASSWORD }), name: 'by-name' });
      const byName = await d.api('PATCH', `/browsers/${s.session_id}`, { proxy: { name: 'by-name' } });
      assert.equal(byName.status, 200, byName.text);
      assert.deepEqual([byName.body.proxy_id, byName.body.proxy], [named.id, { id: named.id, name: 'by-name' }]);
      assert.equal(await via(page, '/by-name'), 'alice');
      const direct = await d.api('PATCH', `/browsers/${s.session_id}`, { proxy: { mode: 'direct' } });
      assert.deepEqual([direct.body.proxy_id, direct.body.proxy], [undefined, { mode: 'direct' }]);
      assert.equal((await d.api('PATCH', `/browsers/${s.session_id}`, { proxy: { id: bypassing.id } })).body.proxy_id, bypassing.id);
      for (const [body, status] of [
        [{ proxy: {} }, 400],
        [{ proxy: { id: named.id, mode: 'direct' } }, 400],
        [{ proxy: { mode: 'stealthy' } }, 400],
        [{ proxy: { name: 'no-such-proxy' } }, 404],
        [{ proxy: { id: named.id }, proxy_id: bypassing.id }, 400],
      ] as const) {
        assert.equal((await d.api('PATCH', `/browsers/${s.session_id}`, body)).status, status, JSON.stringify(body));
      }
      const created = await createSession({ proxy: { name: 'by-name' } });
      assert.deepEqual(created.proxy, { id: named.id, name: 'by-name' });
    } finally {
      await browser.close();
    }
  });
});

test('bypass rules: a host matches itself, .x and *.x match subdomains only', () => {
  const rules = ['exact.test', '.sub.test', '*.wild.test', '[::1]'];
  const cases: [string, boolean][] = [
    ['exact.test', true],
    ['EXACT.test', true],
    ['a.exact.test', false],
    ['a.sub.test', true],
    ['sub.test', false],
    ['x.y.wild.test', true],
    ['wild.test', false],
    ['::1', true],
    ['[::1]', true],
    ['other.test', false],
  ];
  for (const [host, expected] of cases)
    assert.equal(upstreamFor({ protocol: 'http', host: 'p', port: 1, bypass_hosts: rules }, undefined).bypasses(host), expected, host);
  // Credentials are percent-encoded once, so proxy-chain decodes them back exactly.
  const { url } = upstreamFor({ protocol: 'https', host: '::1', port: 8443, username: 'u@x' }, PASSWORD);
  const parsed = new URL(url);
  assert.equal(parsed.host, '[::1]:8443');
  assert.equal(decodeURIComponent(parsed.username), 'u@x');
  assert.equal(decodeURIComponent(parsed.password), PASSWORD);
});

describe('proxies through the SDK and the CLI', () => {
  test('@onkernel/sdk: create, list, retrieve, update, check, use, delete', async () => {
    const p = await kernel.proxies.create({
      type: 'custom',
      name: 'sdk-proxy',
      config: { host: '127.0.0.1', port: alice.port, username: USER, password: PASSWORD },
    });
    proxies.push(p.id!);
    assert.equal(p.type, 'custom');
    assert.equal((p.config as { has_password?: boolean }).has_password, true);
    const listed: string[] = [];
    for await (const item of kernel.proxies.list()) listed.push(item.id!);
    assert.ok(listed.includes(p.id!));
    assert.equal((await kernel.proxies.retrieve(p.id!)).name, 'sdk-proxy');
    assert.equal((await kernel.proxies.update(p.id!, { name: 'sdk-renamed' })).name, 'sdk-renamed');
    assert.equal((await kernel.proxies.check(p.id!)).status, 'available');
    await assert.rejects(kernel.proxies.create({ type: 'residential', config: { country: 'US' } }), SdkBadRequest);

    const browser = await kernel.browsers.create({ headless: true, proxy_id: p.id! });
    sessions.push({ id: browser.session_id, key: d.apiKey });
    assert.equal(browser.proxy_id, p.id);
    const cdp = await chromium.connectOverCDP(browser.cdp_ws_url);
    try {
      const page = await cdp.contexts()[0]!.newPage();
      assert.equal(await via(page, '/sdk'), 'alice');
      assert.ok(alice.seen.includes(`GET http://${TEST_HOST}/sdk`));
      const updated = await kernel.browsers.update(browser.session_id, { proxy_id: '' });
      assert.equal(updated.proxy_id, undefined);
    } finally {
      await cdp.close();
    }
    await kernel.browsers.deleteByID(browser.session_id);
    await kernel.proxies.delete(p.id!);
    await assert.rejects(kernel.proxies.retrieve(p.id!), SdkNotFound);
  });

  test('CLI: proxies create (password from stdin), list, get, delete; create --proxy; browsers update --proxy-id ""', async () => {
    const created = await execa(
      CLI,
      [
        'proxies',
        'create',
        '--name',
        'cli-proxy',
        '--host',
        '127.0.0.1',
        '--port',
        String(alice.port),
        '--username',
        USER,
        '--password-stdin',
        '--json',
      ],
      { env: d.env, extendEnv: false, input: `${PASSWORD}\n`, reject: false },
    );
    assert.equal(created.exitCode, 0, created.stderr);
    const p = JSON.parse(created.stdout);
    proxies.push(p.id);
    assert.equal(p.config.has_password, true);
    assert.ok(!created.stdout.includes(PASSWORD));

    const table = await d.cli(['proxies', 'list']);
    assert.equal(table.exitCode, 0, table.stderr);
    assert.match(table.stdout, /^PROXY\s+NAME\s+TYPE\s+ADDRESS/);
    assert.match(table.stdout, new RegExp(`${p.id}\\s+cli-proxy\\s+custom\\s+http://127\\.0\\.0\\.1:${alice.port}\\s+yes`));
    assert.equal((await d.cli(['proxies', 'ls', '-q'])).stdout.trim(), p.id);
    const shown = await d.cli(['proxies', 'get', p.id]);
    assert.match(shown.stdout, /has_password\s+true/);
    assert.ok(!shown.stdout.includes(PASSWORD));

    const session = await d.cli(['create', '--headless', '--proxy', p.id, '--json']);
    assert.equal(session.exitCode, 0, session.stderr);
    const s = JSON.parse(session.stdout);
    sessions.push({ id: s.session_id, key: d.apiKey });
    assert.equal(s.proxy_id, p.id);
    const inUse = await d.cli(['proxies', 'delete', p.id]);
    assert.notEqual(inUse.exitCode, 0);
    assert.match(inUse.stderr, /resource_in_use/);
    const updated = await d.cli(['browsers', 'update', s.session_id, '--proxy-id', '', '--json']);
    assert.equal(updated.exitCode, 0, updated.stderr);
    assert.equal(JSON.parse(updated.stdout).proxy_id, undefined);

    const deleted = await d.cli(['proxies', 'delete', p.id]);
    assert.equal(deleted.exitCode, 0, deleted.stderr);
    assert.equal(deleted.stdout.trim(), p.id);
    const gone = await d.cli(['proxies', 'get', p.id]);
    assert.notEqual(gone.exitCode, 0);
    assert.match(gone.stderr, /not_found/);
    const managed = await d.cli(['proxies', 'create', '--type', 'datacenter']);
    assert.notEqual(managed.exitCode, 0);
    assert.match(managed.stderr, /managed network/);
  });
});
