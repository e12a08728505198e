/**
 * The HTTP edge in-process (`app.inject()`): the real route table, schemas, auth hook, error
 * mapping and base_url twins, with fake handlers behind them. What these pin is the contract's
 * shape; what a route does with a real browser is the behaviour suite's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { ConflictError } from '../../src/errors.js';
import { ADMIN_TOKEN, inProcessServer, type InProcessServer, KEYS, scopeOf } from '../helpers/in-process-server.js';

const SESSION = 'a23456789012345678901234';
const OTHER_SESSION = 'b23456789012345678901234';
const calls: { op: string; ctx: any }[] = [];
const record =
  (op: string, answer: (ctx: any) => unknown = () => undefined) =>
  (ctx: any) => {
    calls.push({ op, ctx });
    return answer(ctx) as never;
  };
let server: InProcessServer;

before(async () => {
  server = await inProcessServer(
    {
      health: record('health', () => ({ status: 'ok', internal_secret: 'never shown' })),
      listBrowsers: record('listBrowsers', () => []),
      deleteBrowser: record('deleteBrowser'),
      deletePool: record('deletePool', () => {
        throw new ConflictError('browsers are leased');
      }),
      getPool: record('getPool', () => {
        throw new Error('a bug');
      }),
      fsReadFile: record('fsReadFile', () => 'file text'),
      computerClickMouse: record('computerClickMouse'),
    },
    { 'jwt-a': { sessionId: SESSION, org: 'acme' }, 'jwt-b': { sessionId: OTHER_SESSION, org: 'globex' } },
  );
});
after(() => server.close());

const call = (opts: InjectOptions & { key?: string | null }) => {
  const { key = KEYS.acme, ...rest } = opts;
  return server.app.inject({
    ...rest,
    headers: { host: '127.0.0.1', ...(key ? { authorization: `Bearer ${key}` } : {}), ...(rest.headers ?? {}) },
  });
};
const last = () => calls[calls.length - 1]!;

describe('the edge, in-process', () => {
  test('no key, an unknown key and a key on an admin route are 401s with the error body', async () => {
    for (const [url, key] of [
      ['/browsers', null],
      ['/browsers', 'not-a-key'],
      ['/openapi.json', null],
      ['/mcp', null],
    ] as const) {
      const res = await call({ method: 'GET', url, key });
      assert.equal(res.statusCode, 401, url);
      assert.deepEqual(Object.keys(res.json()).sort(), ['code', 'message'], `${url}: kernel-wire's body, nothing else`);
      assert.equal(res.json().code, 'unauthorized');
      assert.equal(res.headers['x-should-retry'], 'false', url);
    }
    const admin = await call({ method: 'GET', url: '/admin/resources' });
    assert.equal(admin.statusCode, 401);
    assert.match(admin.json().message, /admin token/);
    const asAdmin = await call({ method: 'GET', url: '/admin/resources', key: ADMIN_TOKEN });
    assert.equal(asAdmin.statusCode, 501, 'the admin token passes to the (absent) handler');
  });

  test("a key's request reaches its handler with the caller's scope and coerced, defaulted query", async () => {
    const res = await call({ method: 'GET', url: '/browsers?limit=5' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), []);
    const { ctx } = last();
    assert.equal(last().op, 'listBrowsers');
    assert.deepEqual(ctx.org, scopeOf('acme'));
    assert.equal(ctx.query.limit, 5);
    assert.equal(ctx.query.offset, 0);
  });

  test('bad input is a 400 with the error body, before any handler runs', async () => {
    const before = calls.length;
    const cases: InjectOptions[] = [
      { method: 'GET', url: '/browsers?limit=500' },
      { method: 'POST', url: '/browsers', payload: { timeout_seconds: '60' } },
      { method: 'POST', url: '/browsers', payload: { timout_seconds: 60 } },
      { method: 'POST', url: '/browsers', payload: '{"headless":', headers: { 'content-type': 'application/json' } },
      { method: 'POST', url: `/browsers/${SESSION}/computer/click_mouse`, payload: { x: -1, y: 3 } },
    ];
    for (const c of cases) {
      const res = await call(c);
      assert.equal(res.statusCode, 400, `${c.method} ${c.url} ${JSON.stringify(c.payload)}: ${res.body}`);
      assert.equal(res.json().code, 'bad_request');
    }
    assert.equal(calls.length, before, 'no handler saw a refused request');
  });

  test('a text/plain body is refused with 415, an unknown route is a 404, both with the error body', async () => {
    const plain = await call({ method: 'POST', url: '/browsers', payload: 'hello', headers: { 'content-type': 'text/plain' } });
    assert.equal(plain.statusCode, 415);
    assert.equal(typeof plain.json().code, 'string');
    const missing = await call({ method: 'GET', url: '/no/such/route' });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().code, 'not_found');
  });

  test('typed errors become their status; anything else a 500 with the error body, never a stack', async () => {
    const conflict = await call({ method: 'DELETE', url: '/browser_pools/p1' });
    assert.equal(conflict.statusCode, 409);
    assert.equal(conflict.json().message, 'browsers are leased');
    const bug = await call({ method: 'GET', url: '/browser_pools/p1' });
    assert.equal(bug.statusCode, 500);
    assert.equal(typeof bug.json().code, 'string');
    assert.doesNotMatch(bug.body, /at .*\.ts:\d+/);
  });

  test('a response carries only what its schema names; a DELETE answers 204', async () => {
    const health = await call({ method: 'GET', url: '/health', key: null });
    assert.equal(health.statusCode, 200);
    assert.deepEqual(health.json(), { status: 'ok' }, 'the internal field is not serialized');
    const del = await call({ method: 'DELETE', url: `/browsers/${SESSION}` });
    assert.equal(del.statusCode, 204);
    assert.equal(del.body, '');
  });

  test("a session's sub-resource under the base_url takes the session and scope from its jwt", async () => {
    const shared = await call({ method: 'GET', url: '/browser/fs/read_file?path=/tmp/a&jwt=jwt-a', key: null });
    assert.equal(shared.statusCode, 200, shared.body);
    assert.equal(last().ctx.params.id, SESSION);
    assert.deepEqual(last().ctx.org, scopeOf('acme'));
    const own = await call({ method: 'GET', url: `/browser/${OTHER_SESSION}/fs/read_file?path=/tmp/a&jwt=jwt-b`, key: null });
    assert.equal(own.statusCode, 200, own.body);
    assert.equal(last().ctx.params.id, OTHER_SESSION);
    assert.deepEqual(last().ctx.org, scopeOf('globex'));
    // Attacks: another session's jwt on a session's own base_url, and a jwt the daemon never issued.
    const crossed = await call({ method: 'GET', url: `/browser/${SESSION}/fs/read_file?path=/tmp/a&jwt=jwt-b`, key: null });
    assert.equal(crossed.statusCode, 404);
    const forged = await call({ method: 'GET', url: '/browser/fs/read_file?path=/tmp/a&jwt=forged', key: null });
    assert.equal(forged.statusCode, 404);
  });

  test('a Host the daemon does not serve is refused (DNS rebinding)', async () => {
    const res = await call({ method: 'GET', url: '/health', key: null, headers: { host: 'rebind.example.com' } });
    assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${res.statusCode}`);
    assert.equal(typeof res.json().code, 'string');
  });

  test("each answered request of an organization's key is reported once, with its operation", async () => {
    const before = server.answered.length;
    await call({ method: 'GET', url: '/browsers', key: KEYS.globex });
    await call({ method: 'GET', url: '/health', key: null });
    const reported = server.answered.slice(before);
    assert.deepEqual(
      reported.map((r) => [r.operationId, r.org.org_id, r.status]),
      [['listBrowsers', 'org_globex', 200]],
    );
  });
});
