import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Kernel, { NotFoundError } from '@onkernel/sdk';
import { execa } from 'execa';
import { chromium } from 'playwright';
import { ROOT, startTestDaemon, waitFor, type ApiResponse, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';
import { zipOf, zipSlipping } from './helpers/zip.js';

const FIXTURES = join(ROOT, 'fixtures', 'extensions');
const CHROMIUM = process.env.RBROWSE_CHROMIUM ?? '/usr/lib/chromium/chromium';
/** The id the fake Chrome Web Store below knows. */
const STORE_ID = 'abcdefghijklmnopabcdefghijklmnop';

let d: TestDaemon;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
let store: { url: string; crx: Buffer; close: () => Promise<void> };
let scratch: string;

const fixtureZip = (name: string, prefix?: string) => zipOf({ dir: join(FIXTURES, name), prefix });
const manifest = (extra: object = {}) => JSON.stringify({ manifest_version: 3, name: 'Test Ext', version: '1.0', ...extra });

/** POST /extensions as a browser form would send it. */
async function upload(zip: Buffer, o: { name?: string; key?: string; filename?: string } = {}): Promise<ApiResponse> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), o.filename ?? 'ext.zip');
  if (o.name !== undefined) form.append('name', o.name);
  const res = await fetch(`${d.baseUrl}/extensions`, { method: 'POST', headers: { authorization: `Bearer ${o.key ?? d.apiKey}` }, body: form });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
}

async function uploaded(zip: Buffer, o: { name?: string; key?: string } = {}) {
  const res = await upload(zip, o);
  assert.equal(res.status, 200, res.text);
  return res.body as { id: string; name: string | null; created_at: string; size_bytes: number; checksum: string; last_used_at: string | null };
}

/** What the daemon keeps on disk and in its state file about extensions. */
async function stored(): Promise<{ dirs: string[]; records: { id: string; name?: string }[] }> {
  const dirs = (await readdir(join(d.home, 'extensions')).catch(() => [] as string[])).sort();
  const records = JSON.parse(await readFile(join(d.home, 'state.json'), 'utf8')).extensions;
  return { dirs, records };
}

async function createSession(body: object, key?: string) {
  const res = await d.api('POST', '/browsers', { timeout_seconds: 120, ...body }, key);
  assert.equal(res.status, 200, res.text);
  return res.body as { session_id: string; cdp_ws_url: string };
}

/** The data-* attributes of <html> on a fixtures page in the session: what the content scripts set. */
async function pageMarks(cdpUrl: string): Promise<Record<string, string>> {
  const browser = await chromium.connectOverCDP(cdpUrl);
  try {
    const page = await browser.contexts()[0]!.newPage();
    await page.goto(`${fixtures.url}/hello.html`);
    // document_end scripts run before load; the wait covers a slow machine all the same.
    await page.waitForFunction(() => document.readyState === 'complete');
    const marks = await page.evaluate(() => ({ ...document.documentElement.dataset }) as Record<string, string>);
    await page.close();
    return marks;
  } finally {
    await browser.close();
  }
}

const endSession = async (id: string, key?: string) => assert.equal((await d.api('DELETE', `/browsers/${id}`, undefined, key)).status, 204);

/** Serves one CRX for STORE_ID as Google's update service would (any other id: 204), counting requests. */
async function startFakeStore(crx: Buffer) {
  const server: Server = createServer((req, res) => {
    const x = new URL(req.url ?? '/', 'http://x').searchParams.get('x') ?? '';
    if (x.includes(`id=${STORE_ID}`)) res.writeHead(200, { 'content-type': 'application/x-chrome-extension' }).end(crx);
    else res.writeHead(204).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/service/update2/crx`,
    crx,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'rbrowse-ext-test-'));
  // A real CRX3, packed by Chromium itself, stands in for the Web Store's answer.
  await cp(join(FIXTURES, 'content-mark'), join(scratch, 'packed'), { recursive: true });
  await execa(
    CHROMIUM,
    ['--headless', '--no-sandbox', `--user-data-dir=${join(scratch, 'pack-profile')}`, `--pack-extension=${join(scratch, 'packed')}`],
    {
      timeout: 120_000,
    },
  );
  store = await startFakeStore(await readFile(join(scratch, 'packed.crx')));
  fixtures = await startFixtureServer();
  d = await startTestDaemon({ env: { RBROWSE_CHROME_STORE_URL: store.url } });
});

after(async () => {
  if (d) {
    const left = (await d.api('GET', '/browsers?limit=100')).body as { session_id: string }[];
    for (const s of left ?? []) await d.api('DELETE', `/browsers/${s.session_id}`);
    await d.stop();
  }
  await fixtures?.close();
  await store?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('upload and metadata', () => {
  test('upload answers {id, name, created_at, size_bytes, checksum}; get, download, list and delete by id or name', async () => {
    const zip = await fixtureZip('content-mark');
    const before = Date.now();
    const ext = await uploaded(zip, { name: 'meta-ext' });
    assert.match(ext.id, /^[a-z0-9]{24}$/);
    assert.equal(ext.name, 'meta-ext');
    assert.equal(ext.size_bytes, zip.length);
    assert.equal(ext.checksum, createHash('sha256').update(zip).digest('hex'));
    assert.equal(ext.last_used_at, null);
    assert.ok(Date.parse(ext.created_at) >= before - 1000 && Date.parse(ext.created_at) <= Date.now() + 1000, ext.created_at);

    for (const ref of [ext.id, 'meta-ext']) {
      const got = await d.api('GET', `/extensions/${ref}/metadata`);
      assert.equal(got.status, 200, got.text);
      assert.deepEqual(got.body, ext);
      const dl = await fetch(`${d.baseUrl}/extensions/${ref}`, { headers: { authorization: `Bearer ${d.apiKey}` } });
      assert.equal(dl.status, 200);
      assert.equal(dl.headers.get('content-type'), 'application/zip');
      assert.deepEqual(Buffer.from(await dl.arrayBuffer()), zip, 'download gives back the uploaded bytes');
    }
    const listed = await d.api('GET', '/extensions?limit=100');
    assert.equal(listed.status, 200);
    assert.equal(listed.headers.get('x-has-more'), 'false');
    assert.deepEqual(
      listed.body.find((e: { id: string }) => e.id === ext.id),
      ext,
    );
    assert.deepEqual((await d.api('GET', '/extensions?name=meta-ext')).body, [ext]);
    assert.deepEqual((await d.api('GET', '/extensions?query=META')).body, [ext]);

    assert.equal((await d.api('DELETE', '/extensions/meta-ext')).status, 204);
    assert.equal((await d.api('GET', `/extensions/${ext.id}/metadata`)).status, 404);
    assert.equal((await d.api('GET', `/extensions/${ext.id}`)).status, 404);
    assert.equal((await d.api('DELETE', `/extensions/${ext.id}`)).status, 404);
    const left = await stored();
    assert.ok(!left.dirs.includes(ext.id), 'its files are gone');
    assert.ok(!left.records.some((r) => r.id === ext.id), 'its record is gone');
  });

  test("without a name, an upload takes its manifest's name made valid, or none when that is taken", async () => {
    const zip = await zipOf([{ name: 'manifest.json', data: manifest({ name: 'My Great  Extension!' }) }]);
    const first = await uploaded(zip);
    assert.equal(first.name, 'My-Great-Extension');
    const second = await uploaded(zip);
    assert.equal(second.name, null);
    // A __MSG_ name is looked up in the default locale, as Chromium shows it.
    const localized = await uploaded(
      await zipOf([
        { name: 'manifest.json', data: manifest({ name: '__MSG_appName__', default_locale: 'en' }) },
        { name: '_locales/en/messages.json', data: JSON.stringify({ appname: { message: 'Localized Name' } }) },
      ]),
    );
    assert.equal(localized.name, 'Localized-Name');
    for (const e of [first, second, localized]) assert.equal((await d.api('DELETE', `/extensions/${e.id}`)).status, 204);
  });

  test('manifest.json may sit inside the single top-level folder of the zip', async () => {
    const ext = await uploaded(await fixtureZip('second-mark', 'second-mark-1.2'), { name: 'nested-ext' });
    assert.equal(ext.name, 'nested-ext');
    assert.equal((await d.api('DELETE', `/extensions/${ext.id}`)).status, 204);
  });

  test('names are unique per organization: 409, not retried; other organizations may reuse them', async () => {
    const zip = await fixtureZip('content-mark');
    const ext = await uploaded(zip, { name: 'dup-ext' });
    const again = await upload(zip, { name: 'dup-ext' });
    assert.equal(again.status, 409, again.text);
    assert.equal(again.body.code, 'conflict');
    assert.match(again.body.message, /dup-ext/);
    assert.equal(again.headers.get('x-should-retry'), 'false');
    const other = (await d.cli(['auth', 'create-key', '--org', 'ext-names'])).stdout.trim();
    const theirs = await uploaded(zip, { name: 'dup-ext', key: other });
    assert.equal((await d.api('DELETE', `/extensions/${theirs.id}`, undefined, other)).status, 204);
    assert.equal((await d.api('DELETE', `/extensions/${ext.id}`)).status, 204);
  });

  test('bad uploads are refused with 400 (413 when too large) and leave nothing on disk or in the state file', async () => {
    const good = manifest();
    const slip = await zipSlipping('evil.txt', [{ name: 'manifest.json', data: good }]);
    const cases: [string, Buffer | (() => Promise<ApiResponse>), RegExp][] = [
      ['not a zip', Buffer.from('this is not a zip archive at all'), /not a readable zip/],
      ['an empty zip', await zipOf([]), /no manifest\.json/],
      ['no manifest.json', await zipOf([{ name: 'content.js', data: 'void 0' }]), /no manifest\.json/],
      ['manifest.json two folders down', await zipOf([{ name: 'a/b/manifest.json', data: good }]), /no manifest\.json/],
      [
        'two top-level folders',
        await zipOf([
          { name: 'a/manifest.json', data: good },
          { name: 'b/manifest.json', data: good },
        ]),
        /no manifest\.json/,
      ],
      ['manifest.json a folder', await zipOf([{ name: 'manifest.json/x', data: good }]), /no manifest\.json/],
      ['invalid JSON manifest', await zipOf([{ name: 'manifest.json', data: '{"manifest_version": 3, name: }' }]), /not valid JSON/],
      ['manifest_version 4', await zipOf([{ name: 'manifest.json', data: manifest({ manifest_version: 4 }) }]), /manifest_version/],
      ['no version', await zipOf([{ name: 'manifest.json', data: JSON.stringify({ manifest_version: 3, name: 'x' }) }]), /version/],
      ['a bad version', await zipOf([{ name: 'manifest.json', data: manifest({ version: '1.0-beta' }) }]), /version/],
      ['a JSON array', await zipOf([{ name: 'manifest.json', data: '[]' }]), /not an extension manifest/],
      ['zip-slip ../', slip, /relative path|\.\./],
      [
        'zip-slip a/../../',
        await zipOf([
          { name: 'manifest.json', data: good },
          { name: 'a/../../evil2.txt', data: 'evil' },
        ]),
        /relative path|\.\./,
      ],
      [
        'a symlink',
        await zipOf([
          { name: 'manifest.json', data: good },
          { name: 'link', symlinkTo: '/etc/passwd' },
        ]),
        /symbolic link/,
      ],
      [
        'a zip bomb',
        await zipOf([
          { name: 'manifest.json', data: good },
          { name: 'big.bin', data: Buffer.alloc(20 * 1024 ** 2) },
        ]),
        /bomb/,
      ],
      ['an invalid name', () => zipOf([{ name: 'manifest.json', data: good }]).then((z) => upload(z, { name: 'bad name!' })), /name/],
      ['the name ..', () => zipOf([{ name: 'manifest.json', data: good }]).then((z) => upload(z, { name: '..' })), /name/],
      ['the name of a route', () => zipOf([{ name: 'manifest.json', data: good }]).then((z) => upload(z, { name: 'from_chrome_store' })), /name/],
      [
        'an unknown field',
        async () => {
          const form = new FormData();
          form.append('file', new Blob([new Uint8Array(await zipOf([{ name: 'manifest.json', data: good }]))]), 'e.zip');
          form.append('colour', 'red');
          return formPost(form);
        },
        /colour/,
      ],
      ['no file', () => formPost(withName(new FormData(), 'nofile')), /file/],
      [
        'file as a text field',
        () => {
          const form = new FormData();
          form.append('file', 'PK not really');
          return formPost(form);
        },
        /file/,
      ],
      ['JSON instead of a form', () => d.api('POST', '/extensions', { file: 'x' }), /multipart/],
    ];
    const before = await stored();
    for (const [what, input, message] of cases) {
      const res = typeof input === 'function' ? await input() : await upload(input);
      assert.equal(res.status, 400, `${what}: ${res.text}`);
      assert.equal(res.body.code, 'bad_request', what);
      assert.match(res.body.message, message, what);
      assert.deepEqual(await stored(), before, `${what}: something was left behind`);
    }
    const huge = await upload(Buffer.alloc(100 * 1024 ** 2 + 10));
    assert.equal(huge.status, 413, huge.text);
    assert.deepEqual(await stored(), before, 'the too-large upload left something behind');
    await assert.rejects(readFile(join(d.home, 'evil.txt')));
    await assert.rejects(readFile(join(d.home, 'extensions', '..', 'evil2.txt')));
  });
});

function withName(form: FormData, name: string): FormData {
  form.append('name', name);
  return form;
}

async function formPost(form: FormData): Promise<ApiResponse> {
  const res = await fetch(`${d.baseUrl}/extensions`, { method: 'POST', headers: { authorization: `Bearer ${d.apiKey}` }, body: form });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
}

describe('sessions load them', () => {
  let mark: { id: string };
  let second: { id: string };
  before(async () => {
    mark = await uploaded(await fixtureZip('content-mark'), { name: 'content-mark' });
    second = await uploaded(await fixtureZip('second-mark', 'second-mark'), { name: 'second-mark' });
  });
  after(async () => {
    for (const e of [mark, second]) if (e) await d.api('DELETE', `/extensions/${e.id}`);
  });

  for (const headless of [true, false]) {
    test(`a ${headless ? 'headless' : 'headful'} session runs the content script on a fixtures page; a plain one does not`, async () => {
      const [withExt, plain] = await Promise.all([createSession({ headless, extensions: [{ name: 'content-mark' }] }), createSession({ headless })]);
      assert.equal((await pageMarks(withExt.cdp_ws_url)).rbrowseExt, 'content-mark');
      assert.deepEqual(await pageMarks(plain.cdp_ws_url), {});
      const meta = await d.api('GET', '/extensions/content-mark/metadata');
      assert.ok(meta.body.last_used_at && Date.parse(meta.body.last_used_at) >= Date.parse(meta.body.created_at), meta.text);
      await endSession(withExt.session_id);
      await endSession(plain.session_id);
    });
  }

  test('two extensions at once (by id and by name), each copied into /home/kernel/extensions', async () => {
    const s = await createSession({ headless: true, extensions: [{ id: mark.id }, { name: 'second-mark' }] });
    const marks = await pageMarks(s.cdp_ws_url);
    assert.equal(marks.rbrowseExt, 'content-mark');
    assert.equal(marks.rbrowseSecond, 'second-mark');
    const listed = await d.api('GET', `/browsers/${s.session_id}/fs/list_files?path=/home/kernel/extensions`);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.map((f: { name: string }) => f.name).sort(), [mark.id, second.id].sort());
    await endSession(s.session_id);
  });

  test('deleting an extension leaves the sessions using it running with their copy', async () => {
    const temp = await uploaded(await fixtureZip('content-mark'), { name: 'short-lived' });
    const s = await createSession({ headless: true, extensions: [{ name: 'short-lived' }] });
    assert.equal((await d.api('DELETE', '/extensions/short-lived')).status, 204);
    assert.equal((await pageMarks(s.cdp_ws_url)).rbrowseExt, 'content-mark', 'a new page still gets the content script');
    const copy = await d.api('GET', `/browsers/${s.session_id}/fs/file_info?path=/home/kernel/extensions/${temp.id}/manifest.json`);
    assert.equal(copy.status, 200, copy.text);
    const refused = await d.api('POST', '/browsers', { headless: true, extensions: [{ name: 'short-lived' }] });
    assert.equal(refused.status, 404, refused.text);
    await endSession(s.session_id);
  });

  test('an unknown extension is a 404 naming it; more than 20 a 400', async () => {
    const res = await d.api('POST', '/browsers', { headless: true, extensions: [{ name: 'content-mark' }, { name: 'no-such-ext' }] });
    assert.equal(res.status, 404, res.text);
    assert.equal(res.body.code, 'not_found');
    assert.match(res.body.message, /extensions\.1.*no-such-ext/);
    const byId = await d.api('POST', '/browsers', { headless: true, extensions: [{ id: 'aaaaaaaaaaaaaaaaaaaaaaaa' }] });
    assert.equal(byId.status, 404, byId.text);
    const tooMany = await d.api('POST', '/browsers', { headless: true, extensions: Array.from({ length: 21 }, () => ({ id: mark.id })) });
    assert.equal(tooMany.status, 400, tooMany.text);
    assert.deepEqual((await d.api('GET', '/browsers')).body, [], 'no session was left running');
  });

  test('an extension Chromium does not load (manifest_version 2 on Chromium 156) refuses the session with 400 naming it', async () => {
    const legacy = await uploaded(await fixtureZip('legacy-mv2'), { name: 'legacy-mv2' });
    const res = await d.api('POST', '/browsers', { headless: true, extensions: [{ name: 'content-mark' }, { name: 'legacy-mv2' }] });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.message, /extensions\.1: Chromium did not load extension .*legacy-mv2.*manifest_version 2/);
    assert.deepEqual((await d.api('GET', '/browsers')).body, [], 'the refused session is gone');
    assert.deepEqual(await readdir(join(d.home, 'sessions')), [], "the refused session's directories are gone");
    assert.equal((await d.api('DELETE', `/extensions/${legacy.id}`)).status, 204);
  });

  test('a pool carries its extensions into every browser it makes; an unknown one is refused with 404', async () => {
    const pool = await d.api('POST', '/browser_pools', {
      size: 1,
      headless: true,
      fill_rate_per_minute: 6000,
      extensions: [{ name: 'second-mark' }],
    });
    assert.equal(pool.status, 200, pool.text);
    try {
      assert.deepEqual(pool.body.browser_pool_config.extensions, [{ name: 'second-mark' }]);
      assert.deepEqual(pool.body.extension_ids, [second.id], 'the selector resolves to the id the SDK reads');
      const acquired = await d.api('POST', `/browser_pools/${pool.body.id}/acquire`, { acquire_timeout_seconds: 120 });
      assert.equal(acquired.status, 200, acquired.text);
      assert.equal((await pageMarks(acquired.body.cdp_ws_url)).rbrowseSecond, 'second-mark');
      const unknown = await d.api('POST', '/browser_pools', { size: 1, headless: true, extensions: [{ name: 'nope-ext' }] });
      assert.equal(unknown.status, 404, unknown.text);
      assert.match(unknown.body.message, /nope-ext/);
    } finally {
      assert.equal((await d.api('DELETE', `/browser_pools/${pool.body.id}`, { force: true })).status, 204);
      await waitFor(async () => ((await d.api('GET', '/browsers')).body as unknown[]).length === 0, 30_000, "the pool's browsers to end");
    }
  });

  test("another organization's extension is 404 on every route, in POST /browsers and in pools", async () => {
    const other = (await d.cli(['auth', 'create-key', '--org', 'ext-other'])).stdout.trim();
    for (const ref of [mark.id, 'content-mark']) {
      assert.equal((await d.api('GET', `/extensions/${ref}/metadata`, undefined, other)).status, 404);
      assert.equal((await d.api('GET', `/extensions/${ref}`, undefined, other)).status, 404);
      assert.equal((await d.api('DELETE', `/extensions/${ref}`, undefined, other)).status, 404);
    }
    assert.deepEqual((await d.api('GET', '/extensions', undefined, other)).body, []);
    assert.deepEqual((await d.api('GET', `/extensions?query=${mark.id}`, undefined, other)).body, []);
    for (const sel of [{ id: mark.id }, { name: 'content-mark' }]) {
      const s = await d.api('POST', '/browsers', { headless: true, extensions: [sel] }, other);
      assert.equal(s.status, 404, s.text);
      const p = await d.api('POST', '/browser_pools', { size: 1, headless: true, extensions: [sel] }, other);
      assert.equal(p.status, 404, p.text);
    }
    assert.equal((await d.api('GET', `/extensions/${mark.id}/metadata`)).status, 200, 'untouched for its owner');
  });
});

describe('clients', () => {
  test('@onkernel/sdk: upload, list, get, download, delete, and a session that loads the upload', async () => {
    const kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    const zipPath = join(scratch, 'sdk.zip');
    const zip = await fixtureZip('content-mark');
    await writeFile(zipPath, zip);
    const ext = await kernel.extensions.upload({ file: createReadStream(zipPath), name: 'sdk-ext' });
    assert.equal(ext.name, 'sdk-ext');
    assert.equal(ext.size_bytes, zip.length);
    const all = [];
    for await (const e of kernel.extensions.list({ limit: 1 })) all.push(e);
    assert.ok(
      all.some((e) => e.id === ext.id),
      'the paginated list finds it',
    );
    assert.deepEqual(await kernel.extensions.get('sdk-ext'), ext);
    assert.deepEqual(Buffer.from(await (await kernel.extensions.download(ext.id)).arrayBuffer()), zip);

    const session = await kernel.browsers.create({ headless: true, extensions: [{ name: 'sdk-ext' }] });
    assert.equal((await pageMarks(session.cdp_ws_url)).rbrowseExt, 'content-mark');
    await kernel.browsers.deleteByID(session.session_id);

    await kernel.extensions.delete('sdk-ext');
    await assert.rejects(kernel.extensions.get(ext.id), NotFoundError);
  });

  test("@onkernel/sdk: downloadFromChromeStore answers the zip inside the store's CRX; an unknown id is 404", async () => {
    const kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    const res = await kernel.extensions.downloadFromChromeStore({ url: `https://chromewebstore.google.com/detail/content-mark/${STORE_ID}` });
    const zip = Buffer.from(await res.arrayBuffer());
    assert.equal(zip.subarray(0, 4).toString('latin1'), 'PK\u0003\u0004');
    assert.ok(store.crx.subarray(store.crx.length - zip.length).equals(zip), "it is the CRX's zip");
    const ext = await uploaded(zip, { name: 'from-store' });
    const s = await createSession({ headless: true, extensions: [{ id: ext.id }] });
    assert.equal((await pageMarks(s.cdp_ws_url)).rbrowseExt, 'content-mark');
    await endSession(s.session_id);
    assert.equal((await d.api('DELETE', `/extensions/${ext.id}`)).status, 204);

    const unknown = await d.api('GET', `/extensions/from_chrome_store?url=${'p'.repeat(32)}`);
    assert.equal(unknown.status, 404, unknown.text);
    const bad = await d.api('GET', '/extensions/from_chrome_store?url=https://example.com/not-a-store-url');
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.body.message, /url/);
  });

  test('CLI: extensions upload <dir>, list, get, download, create --extension, delete', async () => {
    const up = await d.cli(['extensions', 'upload', join(FIXTURES, 'content-mark'), '--name', 'cli-ext', '--json']);
    assert.equal(up.exitCode, 0, up.stderr);
    const ext = JSON.parse(up.stdout);
    assert.equal(ext.name, 'cli-ext');

    const table = await d.cli(['extensions', 'list']);
    assert.equal(table.exitCode, 0, table.stderr);
    assert.match(table.stdout, /^EXTENSION\s+NAME\s+SIZE/m);
    assert.match(table.stdout, new RegExp(`^${ext.id}\\s+cli-ext\\s`, 'm'));
    const ids = await d.cli(['extensions', 'ls', '-q']);
    assert.ok(ids.stdout.split('\n').includes(ext.id), ids.stdout);
    const got = await d.cli(['extensions', 'get', 'cli-ext']);
    assert.match(got.stdout, /sha256\s+[0-9a-f]{64}/);

    const out = join(scratch, 'cli-download.zip');
    const dl = await d.cli(['extensions', 'download', 'cli-ext', '-o', out]);
    assert.equal(dl.exitCode, 0, dl.stderr);
    assert.equal(
      createHash('sha256')
        .update(await readFile(out))
        .digest('hex'),
      ext.checksum,
    );

    const created = await d.cli(['create', '--headless', '--extension', 'cli-ext', '--json']);
    assert.equal(created.exitCode, 0, created.stderr);
    const session = JSON.parse(created.stdout);
    assert.equal((await pageMarks(session.cdp_ws_url)).rbrowseExt, 'content-mark');
    await endSession(session.session_id);

    const missing = await d.cli(['create', '--headless', '--extension', 'no-such-ext']);
    assert.equal(missing.exitCode, 1);
    assert.match(missing.stderr, /not_found.*no-such-ext/);
    const notExt = await d.cli(['extensions', 'upload', join(ROOT, 'fixtures', 'pages')]);
    assert.equal(notExt.exitCode, 2, notExt.stderr);
    assert.match(notExt.stderr, /no manifest\.json/);

    const rm = await d.cli(['extensions', 'rm', 'cli-ext']);
    assert.equal(rm.exitCode, 0, rm.stderr);
    assert.equal(rm.stdout.trim(), 'cli-ext');
    assert.equal((await d.api('GET', `/extensions/${ext.id}/metadata`)).status, 404);
  });
});
