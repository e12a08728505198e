import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Kernel, { ConflictError, NotFoundError } from '@onkernel/sdk';
import { execa } from 'execa';
import { chromium } from 'playwright';
import * as tar from 'tar';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { packUserData, unpackUserData } from '../daemon/features/profiles/archive.js';
import { killDaemonHard, startTestDaemon, tornDown, waitFor, type ApiResponse, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';
import { standaloneBox } from './helpers/box.js';

let d: TestDaemon;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
/** Every session a test made, ended in after() whatever failed. */
const sessions = new Set<string>();

before(async () => {
  [d, fixtures] = await Promise.all([startTestDaemon(), startFixtureServer()]);
});
after(async () => {
  for (const id of sessions) await d?.api('DELETE', `/browsers/${id}`).catch(() => {});
  await d?.stop();
  await fixtures?.close();
});

function expectStatus(res: ApiResponse, status: number, what: string): any {
  assert.equal(res.status, status, `${what}: ${res.status} ${res.text}`);
  return res.body;
}

async function createProfile(name?: string, key?: string) {
  return expectStatus(await d.api('POST', '/profiles', name === undefined ? {} : { name }, key), 200, `create profile ${name}`);
}

/** A headless session with a profile selection; registered for cleanup. */
async function startSession(profile: object, key?: string) {
  const s = expectStatus(await d.api('POST', '/browsers', { headless: true, profile }, key), 200, 'create session');
  sessions.add(s.session_id);
  return s;
}

/** Deletes a session and waits for its background teardown (the save, with save_changes) to finish. */
async function endSession(id: string) {
  expectStatus(await d.api('DELETE', `/browsers/${id}`), 204, `delete session ${id}`);
  sessions.delete(id);
  await tornDown(d, id);
}

/** Opens the fixtures page in the session and runs fn there (Playwright over the session's CDP URL). */
async function onPage<T>(cdpUrl: string, fn: string): Promise<T> {
  const browser = await chromium.connectOverCDP(cdpUrl);
  try {
    const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
    await page.goto(`${fixtures.url}/hello.html`);
    return (await page.evaluate(fn)) as T;
  } finally {
    await browser.close(); // disconnects only
  }
}

/** A persistent cookie (max-age) and a localStorage item, both carrying value. */
const writeState = (cdpUrl: string, value: string) =>
  onPage<void>(cdpUrl, `document.cookie = 'rb_cookie=${value}; max-age=86400; path=/'; localStorage.setItem('rb_local', '${value}')`);

const readState = (cdpUrl: string) =>
  onPage<{ cookie: string | null; local: string | null }>(
    cdpUrl,
    `({ cookie: (document.cookie.match(/(?:^|; )rb_cookie=([^;]*)/) || [])[1] ?? null, local: localStorage.getItem('rb_local') })`,
  );

/** The paths of a tar archive's entries. */
async function tarEntries(bytes: Buffer): Promise<string[]> {
  const paths: string[] = [];
  const parser = new tar.Parser({ onReadEntry: (e) => (paths.push(e.path), e.resume()) });
  await new Promise<void>((resolve, reject) => {
    parser.on('end', resolve).on('error', reject);
    parser.end(bytes);
  });
  return paths;
}

/**
 * Whether an archive holds a browser's user data: files of its Default profile. Which ones depends
 * on the build (the headless shell writes no Preferences) and on what loaded; the round-trip test
 * covers cookies.
 */
const savedUserData = (entries: string[]) => entries.some((e) => e.startsWith('Default/') && !e.endsWith('/'));

async function download(ref: string, query = '', key = d.apiKey) {
  const res = await fetch(`${d.baseUrl}/profiles/${ref}/download${query}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
}

/** A fresh start on the same home (it reaps, then serves), on a new port. */
async function restartDaemon(): Promise<void> {
  const started = await d.cli(['daemon', 'start']);
  assert.equal(started.exitCode, 0, started.stderr);
  d.baseUrl = started.stdout.trim();
}

/** kill -9 of the daemon (its browsers keep running), then a fresh start. */
async function crashAndRestart(): Promise<void> {
  await killDaemonHard(d);
  await restartDaemon();
}

describe('profiles', { timeout: 600_000 }, () => {
  test('round trip: a cookie with max-age and localStorage saved by one session are there in the next', async () => {
    const profile = await createProfile('round-trip');
    assert.match(profile.id, /^[a-z0-9]{24}$/);
    assert.equal(profile.name, 'round-trip');
    assert.equal((await download('round-trip')).status, 202, 'nothing saved yet');

    const a = await startSession({ name: 'round-trip', save_changes: true });
    assert.equal(a.profile.id, profile.id);
    assert.equal(a.profile.name, 'round-trip');
    assert.ok(a.profile.last_used_at && Date.parse(a.profile.last_used_at) >= Date.parse(profile.created_at), 'last_used_at moved');
    await writeState(a.cdp_ws_url, 'first');
    await endSession(a.session_id);

    const saved = expectStatus(await d.api('GET', `/profiles/${profile.id}`), 200, 'get profile');
    assert.ok(Date.parse(saved.updated_at) >= Date.parse(a.profile.last_used_at), `updated_at moved on save: ${JSON.stringify(saved)}`);
    const archive = await download(profile.id);
    assert.equal(archive.status, 200);
    assert.equal(archive.type, 'application/x-tar');
    const entries = await tarEntries(archive.bytes);
    assert.ok(entries.includes('Default/Cookies'), `the archive holds the cookie store: ${entries.slice(0, 40).join(', ')}`);
    assert.ok(
      entries.some((e) => e.startsWith('Default/Local Storage/')),
      'and Local Storage',
    );
    for (const left of entries.filter((e) => /(^|\/)(Cache|Code Cache|GPUCache)\/|Singleton|DevToolsActivePort/.test(e))) {
      assert.fail(`caches and lock files are left out, found ${left}`);
    }

    const b = await startSession({ id: profile.id });
    assert.ok(Date.parse(b.profile.last_used_at) >= Date.parse(a.profile.last_used_at));
    assert.deepEqual(await readState(b.cdp_ws_url), { cookie: 'first', local: 'first' });
    // A read-only session's changes are not written back.
    await writeState(b.cdp_ws_url, 'read-only change');
    await endSession(b.session_id);
    const after = expectStatus(await d.api('GET', `/profiles/${profile.id}`), 200, 'get profile');
    assert.equal(after.updated_at, saved.updated_at, 'a read-only session saved nothing');
    const c = await startSession({ name: 'round-trip' });
    assert.deepEqual(await readState(c.cdp_ws_url), { cookie: 'first', local: 'first' });
    await endSession(c.session_id);
    expectStatus(await d.api('DELETE', '/profiles/round-trip'), 204, 'delete profile');
  });

  test('a saved profile survives kill -9 of the daemon before the next session', async () => {
    const profile = await createProfile('crash-after-save');
    const a = await startSession({ id: profile.id, save_changes: true });
    await writeState(a.cdp_ws_url, 'before-crash');
    await endSession(a.session_id);
    await crashAndRestart();
    const b = await startSession({ name: 'crash-after-save' });
    assert.deepEqual(await readState(b.cdp_ws_url), { cookie: 'before-crash', local: 'before-crash' });
    await endSession(b.session_id);
    expectStatus(await d.api('DELETE', `/profiles/${profile.id}`), 204, 'delete profile');
  });

  test('an inactivity timeout and a daemon stop save too', async () => {
    const profile = await createProfile('ends');
    const a = expectStatus(
      await d.api('POST', '/browsers', { headless: true, timeout_seconds: 10, profile: { id: profile.id, save_changes: true } }),
      200,
      'create',
    );
    sessions.add(a.session_id);
    await writeState(a.cdp_ws_url, 'timed-out');
    const ended = await waitFor(
      async () => {
        const s = (await d.api('GET', `/browsers/${a.session_id}?include_deleted=true`)).body;
        return s.deleted_at ? s : null;
      },
      90_000,
      'the inactivity timeout',
    );
    sessions.delete(a.session_id);
    assert.ok(ended.deleted_at);
    const b = await startSession({ id: profile.id, save_changes: true });
    assert.deepEqual(await readState(b.cdp_ws_url), { cookie: 'timed-out', local: 'timed-out' });
    await writeState(b.cdp_ws_url, 'stopped');
    assert.equal((await d.cli(['daemon', 'stop'])).exitCode, 0);
    sessions.delete(b.session_id);
    await restartDaemon();
    const c = await startSession({ id: profile.id });
    assert.deepEqual(await readState(c.cdp_ws_url), { cookie: 'stopped', local: 'stopped' });
    await endSession(c.session_id);
    expectStatus(await d.api('DELETE', `/profiles/${profile.id}`), 204, 'delete profile');
  });

  test('a session with save_changes orphaned by kill -9 is saved when the daemon restarts', async () => {
    const profile = await createProfile('crash-while-live');
    const a = await startSession({ id: profile.id, save_changes: true });
    await writeState(a.cdp_ws_url, 'orphaned');
    await crashAndRestart();
    sessions.delete(a.session_id);
    assert.deepEqual(await findMarkedProcesses(d.home, a.session_id), [], "the orphan's processes are gone");
    const ended = expectStatus(await d.api('GET', `/browsers/${a.session_id}?include_deleted=true`), 200, 'orphan');
    assert.ok(ended.deleted_at);
    assert.equal((await download(profile.id)).status, 200, 'the orphan was saved');
    const b = await startSession({ id: profile.id });
    assert.deepEqual(await readState(b.cdp_ws_url), { cookie: 'orphaned', local: 'orphaned' });
    await endSession(b.session_id);
    expectStatus(await d.api('DELETE', `/profiles/${profile.id}`), 204, 'delete profile');
  });

  test('a save that fails after the DELETE is tried again, its changes kept and loads refused meanwhile; a daemon stopped meanwhile saves them at its start', async () => {
    const profile = await createProfile('failing-save');
    const a = await startSession({ id: profile.id, save_changes: true });
    await writeState(a.cdp_ws_url, 'first');
    await endSession(a.session_id);
    // The profile's directory made read-only under the daemon (root writes nothing there either):
    // the DELETE's check of the room passes, the save that follows fails.
    const dir = join(d.home, 'profiles', profile.id);
    assert.ok(existsSync(join(dir, 'data.tar')), 'the first save is there');
    const readOnly = async () => {
      await execa('mount', ['--bind', dir, dir]);
      await execa('mount', ['-o', 'remount,bind,ro', dir]);
    };
    const writable = () => execa('umount', [dir]);
    const failures = async () => (await readFile(join(d.home, 'logs', 'daemon.log'), 'utf8')).split('profile save failed; trying again').length - 1;

    const b = await startSession({ id: profile.id, save_changes: true });
    await writeState(b.cdp_ws_url, 'second');
    await readOnly();
    try {
      expectStatus(await d.api('DELETE', `/browsers/${b.session_id}`), 204, 'delete');
      sessions.delete(b.session_id);
      await waitFor(async () => (await failures()) >= 1, 60_000, 'the save to fail');
      // Meanwhile a load would miss the session's changes: refused, and retryable.
      const refused = await d.api('POST', '/browsers', { headless: true, profile: { id: profile.id } });
      assert.equal(refused.status, 503, refused.text);
      assert.match(refused.body.message, /is not saved yet: its last session's save failed \(EROFS\)/);
      const kept = await d.api('DELETE', `/profiles/${profile.id}`);
      assert.equal(kept.status, 503, `nor is it deleted: ${kept.text}`);
    } finally {
      await writable();
    }
    await tornDown(d, b.session_id, 120_000);
    const c = await startSession({ id: profile.id, save_changes: true });
    assert.deepEqual(await readState(c.cdp_ws_url), { cookie: 'second', local: 'second' }, 'saved once it could be');

    await writeState(c.cdp_ws_url, 'third');
    const before = await failures();
    await readOnly();
    try {
      expectStatus(await d.api('DELETE', `/browsers/${c.session_id}`), 204, 'delete');
      sessions.delete(c.session_id);
      await waitFor(async () => (await failures()) > before, 60_000, 'the save to fail again');
      assert.equal((await d.cli(['daemon', 'stop'])).exitCode, 0);
    } finally {
      await writable();
    }
    assert.match(await readFile(join(d.home, 'logs', 'daemon.log'), 'utf8'), /profile save left for the next start/);
    await restartDaemon();
    const e = await startSession({ id: profile.id });
    assert.deepEqual(await readState(e.cdp_ws_url), { cookie: 'third', local: 'third' }, 'saved by the next start');
    await endSession(e.session_id);
    expectStatus(await d.api('DELETE', `/profiles/${profile.id}`), 204, 'delete profile');
  });

  test('one session at a time saves to a profile; any number load it read-only; deleting it is refused meanwhile', async () => {
    const profile = await createProfile('single-writer');
    // Two writers racing: exactly one wins.
    const raced = await Promise.all(
      [1, 2].map(() => d.api('POST', '/browsers', { headless: true, profile: { id: profile.id, save_changes: true } })),
    );
    for (const r of raced) if (r.status === 200) sessions.add(r.body.session_id);
    assert.deepEqual(raced.map((r) => r.status).sort(), [200, 409], raced.map((r) => r.text).join(' | '));
    const refused = raced.find((r) => r.status === 409)!;
    assert.equal(refused.body.code, 'conflict');
    assert.match(refused.body.message, /save_changes/);
    assert.equal(refused.headers.get('x-should-retry'), 'false');
    const writer = raced.find((r) => r.status === 200)!.body;

    const third = await d.api('POST', '/browsers', { headless: true, profile: { name: 'single-writer', save_changes: true } });
    assert.equal(third.status, 409, third.text);

    const readers = await Promise.all([1, 2].map(() => startSession({ name: 'single-writer', save_changes: false })));
    assert.equal(readers.length, 2);

    for (const ref of [profile.id, 'single-writer']) {
      const del = await d.api('DELETE', `/profiles/${ref}`);
      assert.equal(del.status, 409, del.text);
      assert.match(del.body.message, new RegExp(writer.session_id));
      assert.equal(del.headers.get('x-should-retry'), 'false');
    }
    await endSession(writer.session_id);
    // The writer's lease is given back: a new writer may take it while the readers still run.
    const next = await startSession({ id: profile.id, save_changes: true });
    await endSession(next.session_id);
    for (const r of readers) await endSession(r.session_id);
    expectStatus(await d.api('DELETE', `/profiles/${profile.id}`), 204, 'delete once unused');
  });

  test("a pool's browsers load the profile read-only", async () => {
    const profile = await createProfile('pooled');
    const a = await startSession({ id: profile.id, save_changes: true });
    await writeState(a.cdp_ws_url, 'pooled');
    await endSession(a.session_id);
    const saved = expectStatus(await d.api('GET', '/profiles/pooled'), 200, 'get profile');

    const pool = expectStatus(
      await d.api('POST', '/browser_pools', { size: 1, headless: true, fill_rate_per_minute: 6000, profile: { name: 'pooled', save_changes: true } }),
      200,
      'create pool',
    );
    try {
      assert.equal(pool.profile_id, saved.id, 'the selector resolves to the id the SDK reads');
      const leased = await waitFor(
        async () => {
          const r = await d.api('POST', `/browser_pools/${pool.id}/acquire`, { acquire_timeout_seconds: 5 });
          return r.status === 200 ? r.body : null;
        },
        120_000,
        'a pooled browser',
      );
      assert.equal(leased.profile.id, profile.id);
      assert.deepEqual(await readState(leased.cdp_ws_url), { cookie: 'pooled', local: 'pooled' });
      await writeState(leased.cdp_ws_url, 'changed in the pool');
      assert.equal((await d.api('DELETE', '/profiles/pooled')).status, 409, 'in use by the pool');
      expectStatus(await d.api('POST', `/browser_pools/${pool.id}/release`, { session_id: leased.session_id, reuse: false }), 204, 'release');
    } finally {
      expectStatus(await d.api('DELETE', `/browser_pools/${pool.id}`, { force: true }), 204, 'delete pool');
    }
    assert.equal(expectStatus(await d.api('GET', '/profiles/pooled'), 200, 'get').updated_at, saved.updated_at, 'pools never save');
    // The pool's browsers end in the background; the profile is free once they have.
    await waitFor(async () => (await d.api('DELETE', '/profiles/pooled')).status === 204, 60_000, 'the profile to be deletable');
  });

  test('names, lookups and deletes by name and by id', async () => {
    const named = await createProfile('by-name');
    const unnamed = await createProfile();
    assert.equal(unnamed.name, undefined);
    const dup = await d.api('POST', '/profiles', { name: 'by-name' });
    assert.equal(dup.status, 409, dup.text);
    assert.equal(dup.headers.get('x-should-retry'), 'false');
    for (const bad of ['', 'has space', 'a/b', 'x'.repeat(256)]) {
      assert.equal((await d.api('POST', '/profiles', { name: bad })).status, 400, `name ${JSON.stringify(bad)}`);
    }
    assert.equal((await d.api('POST', '/profiles', { name: 'ok', extra: 1 })).status, 400, 'unknown field');

    assert.deepEqual(expectStatus(await d.api('GET', '/profiles/by-name'), 200, 'by name'), named);
    const page = await d.api('GET', '/profiles?limit=1');
    assert.equal(page.body.length, 1);
    assert.equal(page.headers.get('x-has-more'), 'true');
    assert.equal(page.headers.get('x-next-offset'), '1');
    assert.deepEqual(expectStatus(await d.api('GET', '/profiles?name=by-name'), 200, 'filter'), [named]);
    assert.deepEqual(expectStatus(await d.api('GET', `/profiles?query=${unnamed.id.slice(3, 12)}`), 200, 'query'), [unnamed]);

    const renamed = expectStatus(await d.api('PATCH', `/profiles/${unnamed.id}`, { name: 'renamed' }), 200, 'rename');
    assert.equal(renamed.name, 'renamed');
    assert.equal((await d.api('PATCH', '/profiles/renamed', { name: 'by-name' })).status, 409);

    const missing = await d.api('POST', '/browsers', { headless: true, profile: { name: 'no-such-profile' } });
    assert.equal(missing.status, 404, missing.text);
    assert.match(missing.body.message, /profile "no-such-profile" not found/);
    assert.equal((await d.api('POST', '/browsers', { headless: true, profile: { id: named.id, name: 'renamed' } })).status, 404);
    assert.equal((await d.api('POST', '/browsers', { headless: true, profile: {} })).status, 400);

    expectStatus(await d.api('DELETE', '/profiles/by-name'), 204, 'delete by name');
    expectStatus(await d.api('DELETE', `/profiles/${unnamed.id}`), 204, 'delete by id');
    for (const ref of [named.id, 'by-name', unnamed.id]) {
      assert.equal((await d.api('GET', `/profiles/${ref}`)).status, 404);
      assert.equal((await d.api('DELETE', `/profiles/${ref}`)).status, 404);
      assert.equal((await download(ref)).status, 404);
    }
    await assert.rejects(stat(join(d.home, 'profiles', named.id)), 'its directory is gone');
  });

  test('another organization sees none of it and cannot load it', async () => {
    const mine = await createProfile('org-private');
    const key = (await d.cli(['auth', 'create-key', '--org', 'profiles-other'])).stdout.trim();
    for (const ref of [mine.id, 'org-private']) {
      assert.equal((await d.api('GET', `/profiles/${ref}`, undefined, key)).status, 404);
      assert.equal((await d.api('PATCH', `/profiles/${ref}`, { name: 'stolen' }, key)).status, 404);
      assert.equal((await d.api('DELETE', `/profiles/${ref}`, undefined, key)).status, 404);
      assert.equal((await download(ref, '', key)).status, 404);
    }
    for (const profile of [{ id: mine.id }, { name: 'org-private', save_changes: true }]) {
      const r = await d.api('POST', '/browsers', { headless: true, profile }, key);
      assert.equal(r.status, 404, r.text);
      const pool = await d.api('POST', '/browser_pools', { size: 1, headless: true, profile }, key);
      assert.equal(pool.status, 404, pool.text);
    }
    assert.deepEqual(expectStatus(await d.api('GET', '/profiles', undefined, key), 200, 'list'), []);
    // Names are per organization.
    const theirs = await createProfile('org-private', key);
    assert.notEqual(theirs.id, mine.id);
    expectStatus(await d.api('DELETE', '/profiles/org-private', undefined, key), 204, 'their delete');
    expectStatus(await d.api('GET', `/profiles/${mine.id}`), 200, 'mine is untouched');
    expectStatus(await d.api('DELETE', `/profiles/${mine.id}`), 204, 'delete');
  });

  test('the official SDK: create, list, retrieve, update, download, delete', async () => {
    const kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    const created = await kernel.profiles.create({ name: 'sdk-profile' });
    assert.equal(created.name, 'sdk-profile');
    assert.deepEqual(await kernel.profiles.retrieve('sdk-profile'), created);
    assert.deepEqual(await kernel.profiles.retrieve(created.id), created);
    const listed = [];
    for await (const p of kernel.profiles.list({ limit: 1 })) listed.push(p);
    assert.ok(
      listed.some((p) => p.id === created.id),
      'auto-pagination finds it',
    );
    await assert.rejects(kernel.profiles.create({ name: 'sdk-profile' }), ConflictError);
    const renamed = await kernel.profiles.update(created.id, { name: 'sdk-renamed' });
    assert.equal(renamed.name, 'sdk-renamed');
    assert.equal((await kernel.profiles.download('sdk-renamed')).status, 202);

    const browser = await kernel.browsers.create({ headless: true, profile: { name: 'sdk-renamed', save_changes: true } });
    sessions.add(browser.session_id);
    assert.equal(browser.profile?.id, created.id);
    await kernel.browsers.deleteByID(browser.session_id);
    sessions.delete(browser.session_id);
    await tornDown(d, browser.session_id); // its save is done
    const tarball = await kernel.profiles.download(created.id, { format: 'tar' });
    assert.equal(tarball.status, 200);
    assert.ok(savedUserData(await tarEntries(Buffer.from(await tarball.arrayBuffer()))));
    const zst = await kernel.profiles.download(created.id, { format: 'tar.zst' });
    assert.equal(zst.headers.get('content-type'), 'application/zstd');
    const zstBytes = Buffer.from(await zst.arrayBuffer());
    assert.equal(zstBytes.readUInt32LE(0), 0xfd2fb528, 'a zstd frame');

    await kernel.profiles.delete('sdk-renamed');
    await assert.rejects(kernel.profiles.retrieve(created.id), NotFoundError);
    await assert.rejects(kernel.browsers.create({ headless: true, profile: { id: created.id } }), NotFoundError);
  });

  test('the CLI: profiles create, list, get, download, delete, and create --profile NAME:save', async () => {
    const ok = async (args: string[]) => {
      const r = await d.cli(args);
      assert.equal(r.exitCode, 0, `${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const created = JSON.parse(await ok(['profiles', 'create', '--name', 'cli-profile', '--json']));
    assert.equal(created.name, 'cli-profile');
    assert.match(await ok(['profiles', 'list']), new RegExp(`${created.id}\\s+cli-profile`));
    assert.ok((await ok(['profiles', 'ls', '-q'])).split('\n').includes(created.id));
    assert.deepEqual(JSON.parse(await ok(['profiles', 'get', 'cli-profile', '--json'])), created);
    const dup = await d.cli(['profiles', 'create', '--name', 'cli-profile']);
    assert.equal(dup.exitCode, 1);
    assert.match(dup.stderr, /conflict/);

    const early = await d.cli(['profiles', 'download', 'cli-profile']);
    assert.equal(early.exitCode, 3, early.stderr);
    assert.match(early.stderr, /no saved data yet/);

    const session = JSON.parse(await ok(['create', '--headless', '--profile', 'cli-profile:save', '--json']));
    sessions.add(session.session_id);
    assert.equal(session.profile.id, created.id);
    await ok(['rm', session.session_id]);
    sessions.delete(session.session_id);
    const file = join(d.home, 'cli-profile.tar');
    assert.equal((await ok(['profiles', 'download', 'cli-profile', '-o', file])).trim(), file);
    const entries = await tarEntries(await readFile(file));
    assert.ok(savedUserData(entries), `the saved user data: ${entries.slice(0, 30).join(', ')}`);

    const unknown = await d.cli(['create', '--headless', '--profile', 'nope']);
    assert.equal(unknown.exitCode, 1);
    assert.match(unknown.stderr, /not_found/);

    assert.equal((await ok(['profiles', 'delete', 'cli-profile'])).trim(), 'cli-profile');
    const gone = await d.cli(['profiles', 'get', created.id]);
    assert.equal(gone.exitCode, 1);
    assert.match(gone.stderr, /not_found/);
  });
});

describe('profile archives', () => {
  test('caches, locks and links stay out; a save cut off half way keeps the previous archive', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rbrowse-archive-'));
    const b = await standaloneBox();
    try {
      const archive = join(dir, 'profile', 'data.tar');
      // What a browser (or code in the session) leaves in its user data, links to the host included.
      const made = await b.sh(
        [
          'set -e; cd /home/kernel/user-data',
          "mkdir -p Default/Cache 'Default/Local Storage/leveldb'",
          'printf v1 > Default/Cookies',
          "printf storage > 'Default/Local Storage/leveldb/000003.log'",
          ": > 'Default/Local Storage/leveldb/LOCK'",
          'printf cache > Default/Cache/data_0',
          'printf 9222 > DevToolsActivePort',
          'ln -s host-pid-1 SingletonLock',
          'ln -s /etc/passwd Default/planted',
        ].join('\n'),
      );
      assert.equal(made.code, 0, made.stderr);
      assert.equal(await packUserData(b.files, '/home/kernel/user-data', archive), true);
      const v1 = await readFile(archive);
      assert.deepEqual((await tarEntries(v1)).filter((e) => !e.endsWith('/')).sort(), [
        'Default/Cookies',
        'Default/Local Storage/leveldb/000003.log',
      ]);

      // A save cut off half way (the session's box ends under it): the archive is still v1, whole.
      assert.equal(
        (await b.sh('printf v2 > /home/kernel/user-data/Default/Cookies && head -c 300000000 /dev/urandom > /home/kernel/user-data/Default/big'))
          .code,
        0,
      );
      const saving = packUserData(b.files, '/home/kernel/user-data', archive);
      const temp = await waitFor(
        async () => {
          const names = await readdir(join(dir, 'profile'));
          const t = names.find((n) => n.endsWith('.tmp'));
          return t && (await stat(join(dir, 'profile', t))).size > 1024 * 1024 ? t : null;
        },
        60_000,
        'the save to be under way',
      );
      await b.box.stop();
      await assert.rejects(saving, 'the cut-off save fails');
      assert.ok(temp?.endsWith('.tmp'));
      assert.deepEqual(await readFile(archive), v1, 'the previous archive is untouched');
      assert.deepEqual(
        (await readdir(join(dir, 'profile'))).filter((n) => n.endsWith('.tmp')),
        [],
        'its temporary file is gone',
      );
    } finally {
      await b.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('an archive unpacks inside a box, as its user; none yet is no error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rbrowse-archive-'));
    const b = await standaloneBox();
    try {
      const archive = join(dir, 'data.tar');
      assert.equal((await b.sh('cd /home/kernel/user-data && mkdir -p Default && printf v1 > Default/Cookies')).code, 0);
      assert.equal(await packUserData(b.files, '/home/kernel/user-data', archive), true);
      assert.equal((await b.sh('rm -rf /home/kernel/user-data/Default')).code, 0);
      assert.equal(await unpackUserData(archive, b.files, '/home/kernel/restored'), true);
      const back = await b.sh('cat /home/kernel/restored/Default/Cookies; stat -c %U /home/kernel/restored/Default/Cookies');
      assert.equal(back.stdout, 'v1kernel\n');
      assert.equal(await unpackUserData(join(dir, 'none.tar'), b.files, '/home/kernel/restored'), false, 'no archive yet');
    } finally {
      await b.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
