import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';

let d: TestDaemon;
before(async () => {
  d = await startTestDaemon();
});
after(async () => {
  await d?.stop();
});

/** Every error has the kernel-wire body; bad input is a 4xx with x-should-retry: false. */
function assertErrorShape(res: { status: number; headers: Headers; body: any; text: string }, status: number, code: string) {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body?.code, code, res.text);
  assert.equal(typeof res.body.message, 'string');
  assert.ok(res.body.message.length > 0);
  assert.match(res.headers.get('content-type') ?? '', /application\/json/);
  assert.equal(res.headers.get('x-should-retry'), 'false');
  assert.doesNotMatch(res.text, /at .*\.(js|ts):\d+/, 'no stack trace');
}

function assertInvalidField(res: { status: number; headers: Headers; body: any; text: string }, field: string) {
  assertErrorShape(res, 400, 'bad_request');
  assert.ok(Array.isArray(res.body.details), res.text);
  assert.ok(
    res.body.details.some((x: any) => x.code === 'invalid_input' && String(x.message).startsWith(field)),
    `a detail names ${field}: ${res.text}`,
  );
}

describe('validation and errors', () => {
  const badBodies: [string, object, string][] = [
    ['timeout below range', { timeout_seconds: 9 }, 'timeout_seconds'],
    ['timeout above range', { timeout_seconds: 259201 }, 'timeout_seconds'],
    ['timeout not an integer', { timeout_seconds: 12.5 }, 'timeout_seconds'],
    ['timeout as a string', { timeout_seconds: '60' }, 'timeout_seconds'],
    ['headless as a string', { headless: 'yes' }, 'headless'],
    ['stealth as a number', { stealth: 1 }, 'stealth'],
    ['kiosk_mode null', { kiosk_mode: null }, 'kiosk_mode'],
    ['viewport width missing', { viewport: { height: 768 } }, 'viewport.width'],
    ['viewport height a string', { viewport: { width: 1024, height: '768' } }, 'viewport.height'],
    ['unsupported viewport', { viewport: { width: 1000, height: 700 } }, 'viewport'],
    ['wrong refresh rate', { viewport: { width: 1024, height: 768, refresh_rate: 25 } }, 'viewport'],
    ['too many extensions', { extensions: Array.from({ length: 21 }, (_, i) => ({ name: `e${i}` })) }, 'extensions'],
    ['extension neither id nor name', { extensions: [{}] }, 'extensions.0'],
    ['profile neither id nor name', { profile: { save_changes: true } }, 'profile'],
    ['unknown field', { timout_seconds: 60 }, 'timout_seconds'],
    ['persistence without id', { persistence: {} }, 'persistence.id'],
    ['start_url not a URL', { start_url: 'not a url' }, 'start_url'],
    ['tags not strings', { tags: { a: 1 } }, 'tags.a'],
  ];
  for (const [what, body, field] of badBodies) {
    test(`POST /browsers: ${what} is a 400 naming ${field}`, async () => {
      assertInvalidField(await d.api('POST', '/browsers', body), field);
    });
  }

  test('an unsupported viewport lists the supported ones', async () => {
    const res = await d.api('POST', '/browsers', { viewport: { width: 800, height: 600 } });
    assertInvalidField(res, 'viewport');
    for (const v of ['2560x1440@10', '1920x1080@25', '1920x1200@25', '1440x900@25', '1024x768@60', '1200x800@60']) {
      assert.ok(res.body.message.includes(v), `${v} listed`);
    }
  });

  test('each supported viewport is accepted, the refresh rate derived', async () => {
    const rates: Record<string, number> = { '2560x1440': 10, '1920x1200': 25, '1440x900': 25, '1200x800': 60 };
    for (const [size, rate] of Object.entries(rates)) {
      const [width, height] = size.split('x').map(Number);
      const res = await d.api('POST', '/browsers', { headless: true, viewport: { width, height } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.viewport, { width, height, refresh_rate: rate });
      await d.api('DELETE', `/browsers/${res.body.session_id}`);
    }
  });

  test('malformed JSON is a 400 bad_request', async () => {
    assertErrorShape(await d.api('POST', '/browsers', '{"headless": tru'), 400, 'bad_request');
    assertErrorShape(await d.api('POST', '/browsers', '[1,2'), 400, 'bad_request');
  });

  test('a JSON body that is not an object is a 400', async () => {
    assertErrorShape(await d.api('POST', '/browsers', '[]'), 400, 'bad_request');
    assertErrorShape(await d.api('POST', '/browsers', '"x"'), 400, 'bad_request');
    assertErrorShape(await d.api('PATCH', '/browsers/x', 'null'), 400, 'bad_request');
  });

  test('an unsupported content type is a 4xx, not a 5xx', async () => {
    const res = await fetch(`${d.baseUrl}/browsers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.apiKey}`, 'content-type': 'text/plain' },
      body: 'hello',
    });
    assert.equal(res.status, 415);
    assert.equal(((await res.json()) as any).code, 'unsupported_media_type');
  });

  test('an oversized body is a 413, which the client still sending it receives', async () => {
    // The daemon refuses by the length before reading; a client mid-upload must get the answer,
    // not a broken pipe (each try raced the upload against the refusal).
    for (let i = 0; i < 5; i++) {
      const res = await d.api('POST', '/browsers', { tags: { big: 'x'.repeat(8 * 1024 * 1024) } });
      assertErrorShape(res, 413, 'payload_too_large');
    }
  });

  test('query parameters are validated', async () => {
    assertInvalidField(await d.api('GET', '/browsers?limit=0'), 'limit');
    assertInvalidField(await d.api('GET', '/browsers?limit=101'), 'limit');
    assertInvalidField(await d.api('GET', '/browsers?offset=-1'), 'offset');
    assertInvalidField(await d.api('GET', '/browsers?status=sleeping'), 'status');
    assertInvalidField(await d.api('GET', '/browsers/abc?include_deleted=maybe'), 'include_deleted');
  });

  test('unknown routes and methods are 404 not_found', async () => {
    assertErrorShape(await d.api('GET', '/nope'), 404, 'not_found');
    assertErrorShape(await d.api('PUT', '/browsers'), 404, 'not_found');
    assertErrorShape(await d.api('GET', '/browsers/nosuchsession'), 404, 'not_found');
  });

  test('auth: /health needs none; everything else needs a valid Bearer key', async () => {
    const health = await d.api('GET', '/health', undefined, null);
    assert.equal(health.status, 200);
    assert.equal(health.body.status, 'ok');
    assert.deepEqual(health.body.standby, {});
    assert.ok(health.body.launches.limit >= 1, JSON.stringify(health.body));
    // The admin routes take the admin token, never an organization's key.
    assertErrorShape(await d.api('GET', '/admin/resources'), 401, 'unauthorized');
    assertErrorShape(await d.api('GET', '/browsers', undefined, null), 401, 'unauthorized');
    assertErrorShape(await d.api('POST', '/browsers', {}, 'sk_not_a_key'), 401, 'unauthorized');
    assertErrorShape(await d.api('GET', '/openapi.json', undefined, null), 401, 'unauthorized');
    const basic = await fetch(`${d.baseUrl}/browsers`, { headers: { authorization: `Basic ${d.apiKey}` } });
    assert.equal(basic.status, 401);
    // The CLI's admin token is not an API key, and an API key is not the admin token.
    assertErrorShape(await d.api('POST', '/admin/keys', { org: 'x' }), 401, 'unauthorized');
  });

  test('the OpenAPI 3.1 document is generated from the route schemas', async () => {
    const res = await d.api('GET', '/openapi.json');
    assert.equal(res.status, 200);
    const doc = res.body;
    assert.equal(doc.openapi, '3.1.0');
    const create = doc.paths['/browsers'].post;
    assert.equal(create.operationId, 'createBrowser');
    const body = create.requestBody.content['application/json'].schema;
    assert.deepEqual(body.properties.timeout_seconds.minimum, 10);
    assert.deepEqual(body.properties.timeout_seconds.maximum, 259200);
    assert.equal(body.properties.extensions.maxItems, 20);
    assert.ok(doc.paths['/browsers/{id}'].get, 'path parameters in OpenAPI form');
    assert.ok(doc.paths['/browsers/{id}'].patch);
    assert.ok(doc.paths['/browsers/{id}'].delete.responses['204']);
    assert.ok(create.responses['200'].content['application/json'].schema.properties.cdp_ws_url);
  });
});
