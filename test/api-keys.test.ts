/**
 * The organization's API keys (/org/api_keys) through the official SDK and the CLI: the plaintext
 * shown once, masked everywhere else, never at rest; deleted and rotated-away keys refused at once;
 * a key cannot delete itself; another organization sees none of them.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Kernel from '@onkernel/sdk';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';

const DAY_MS = 86_400_000;

describe('API keys', () => {
  let d: TestDaemon;
  let kernel: Kernel;
  const as = (apiKey: string) => new Kernel({ apiKey, baseURL: d.baseUrl, maxRetries: 0 });
  /** Whether a key authenticates: a cheap call, 200 or 401. */
  const works = async (key: string) => (await d.api('GET', '/browsers?limit=1', undefined, key)).status === 200;

  before(async () => {
    d = await startTestDaemon();
    kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
  });
  after(async () => {
    await d?.stop();
  });

  test('create shows the key once; get and list show it masked; the state file keeps only a digest', async () => {
    const created = await kernel.apiKeys.create({ name: 'ci', days_to_expire: 30 });
    assert.match(created.key, /^sk_/);
    assert.equal(created.name, 'ci');
    assert.equal(created.deleted_at, null);
    assert.equal(created.project_id, null);
    assert.ok(Math.abs(Date.parse(created.expires_at!) - (Date.now() + 30 * DAY_MS)) < 60_000, created.expires_at!);
    assert.ok(created.masked_key.endsWith(created.key.slice(-4)) && !created.masked_key.includes(created.key.slice(3, -4)));
    assert.ok(await works(created.key));

    const got = await kernel.apiKeys.retrieve(created.id);
    assert.equal((got as { key?: string }).key, undefined);
    assert.equal(got.masked_key, created.masked_key);
    const listed = [];
    for await (const k of kernel.apiKeys.list()) listed.push(k);
    assert.ok(listed.some((k) => k.id === created.id));
    assert.ok(listed.every((k) => (k as { key?: string }).key === undefined));

    // In no file of the daemon's (state, its last good copy, history, credentials, logs): the
    // plaintext is not at rest. Browsers' own directories are left out.
    const files = (await readdir(d.home, { recursive: true, withFileTypes: true })).filter((e) => e.isFile() && !e.parentPath.includes('/sessions'));
    assert.ok(files.some((f) => f.name === 'state.json'));
    for (const f of files) {
      const text = await readFile(join(f.parentPath, f.name), 'latin1').catch(() => '');
      assert.ok(!text.includes(created.key), `${join(f.parentPath, f.name)} holds the key in clear`);
    }
    await kernel.apiKeys.delete(created.id);
  });

  test('rename, filters, sorting and pages', async () => {
    const a = await kernel.apiKeys.create({ name: 'alpha-key' });
    const b = await kernel.apiKeys.create({ name: 'beta-key' });
    assert.equal((await kernel.apiKeys.update(a.id, { name: 'Alpha-Renamed' })).name, 'Alpha-Renamed');
    const byName = await kernel.apiKeys.list({ name: 'alpha-renamed' });
    assert.deepEqual(
      byName.items.map((k) => k.id),
      [a.id],
    );
    const byQuery = await kernel.apiKeys.list({ query: 'beta' });
    assert.deepEqual(
      byQuery.items.map((k) => k.id),
      [b.id],
    );
    const byId = await kernel.apiKeys.list({ query: b.id.slice(0, 10) });
    assert.deepEqual(
      byId.items.map((k) => k.id),
      [b.id],
    );
    const asc = await kernel.apiKeys.list({ sort_by: 'name', sort_direction: 'asc', limit: 100 });
    const names = asc.items.map((k) => k.name.toLowerCase());
    assert.deepEqual(names, [...names].sort());
    const first = await d.api('GET', '/org/api_keys?limit=1');
    assert.equal(first.headers.get('x-has-more'), 'true');
    assert.equal(first.headers.get('x-next-offset'), '1');
    assert.equal(first.body.length, 1);
    await kernel.apiKeys.delete(a.id);
    await kernel.apiKeys.delete(b.id);
  });

  test('a deleted key stops working at once; it is found again only with include_deleted or status', async () => {
    const k = await kernel.apiKeys.create({ name: 'to-delete' });
    assert.ok(await works(k.key));
    await kernel.apiKeys.delete(k.id);
    assert.equal(await works(k.key), false);
    await assert.rejects(kernel.apiKeys.retrieve(k.id), (err: { status?: number }) => err.status === 404);
    const found = await kernel.apiKeys.retrieve(k.id, { include_deleted: true });
    assert.ok(found.deleted_at);
    assert.ok(!(await kernel.apiKeys.list({ limit: 100 })).items.some((x) => x.id === k.id));
    assert.ok((await kernel.apiKeys.list({ status: 'deleted', limit: 100 })).items.some((x) => x.id === k.id));
    assert.ok((await kernel.apiKeys.list({ include_deleted: true, limit: 100 })).items.some((x) => x.id === k.id));
    // A second delete: not found.
    await assert.rejects(kernel.apiKeys.delete(k.id), (err: { status?: number }) => err.status === 404);
  });

  test('a key cannot delete itself: 400 cannot_delete_current_key', async () => {
    const k = await kernel.apiKeys.create({ name: 'self' });
    const r = await d.api('DELETE', `/org/api_keys/${k.id}`, undefined, k.key);
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'cannot_delete_current_key');
    assert.equal(r.headers.get('x-should-retry'), 'false');
    assert.ok(await works(k.key));
    await kernel.apiKeys.delete(k.id);
  });

  test('rotate: a new key with the same name; the old one refused at once with expire_in_days 0, after a grace otherwise, never later than before', async () => {
    const old = await kernel.apiKeys.create({ name: 'rotating' });
    const now = await kernel.apiKeys.rotate(old.id, { expire_in_days: 0 });
    assert.notEqual(now.id, old.id);
    assert.equal(now.name, 'rotating');
    assert.ok(await works(now.key));
    assert.equal(await works(old.key), false, 'the rotated-away key is refused');
    // Not deleted: still listed, expired.
    const oldView = await kernel.apiKeys.retrieve(old.id);
    assert.equal(oldView.deleted_at, null);
    assert.ok(Date.parse(oldView.expires_at!) <= Date.now());

    const graced = await kernel.apiKeys.rotate(now.id);
    assert.ok(await works(now.key), 'inside the default grace period the old key still works');
    const after = await kernel.apiKeys.retrieve(now.id);
    assert.ok(Math.abs(Date.parse(after.expires_at!) - (Date.now() + 7 * DAY_MS)) < 60_000, after.expires_at!);

    const short = await kernel.apiKeys.create({ name: 'short', days_to_expire: 2 });
    const shortNext = await kernel.apiKeys.rotate(short.id, { expire_in_days: 5 });
    assert.equal((await kernel.apiKeys.retrieve(short.id)).expires_at, short.expires_at, 'rotation never extends a key');
    assert.ok(Math.abs(Date.parse(shortNext.expires_at!) - (Date.now() + 2 * DAY_MS)) < 60_000, 'the new key keeps the old lifetime');

    const bad = await d.api('POST', `/org/api_keys/${graced.id}/rotate`, { days_to_expire: 3, expire_in_days: 5 });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.body), /days_to_expire/);
    for (const id of [graced.id, shortNext.id, now.id, short.id, old.id]) await kernel.apiKeys.delete(id).catch(() => {});
  });

  test('bad input: 400 naming the field; an unknown project 404 project_not_found', async () => {
    for (const body of [{}, { name: '' }, { name: 'x', days_to_expire: 0 }, { name: 'x', days_to_expire: 4000 }, { name: 'x', extra: 1 }]) {
      const r = await d.api('POST', '/org/api_keys', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.code, 'bad_request');
    }
    const r = await d.api('POST', '/org/api_keys', { name: 'x', project_id: 'nope' });
    assert.equal(r.status, 404);
    assert.equal(r.body.code, 'project_not_found');
  });

  test("another organization's keys are invisible and untouchable", async () => {
    const mine = await kernel.apiKeys.create({ name: 'org-a' });
    const otherKey = (await d.cli(['auth', 'create-key', '--org', 'keys-other'])).stdout.trim();
    const other = as(otherKey);
    const theirs = [];
    for await (const k of other.apiKeys.list()) theirs.push(k.id);
    assert.ok(!theirs.includes(mine.id));
    assert.equal(theirs.length, 1, 'the other org sees its own key only');
    for (const call of [
      () => other.apiKeys.retrieve(mine.id),
      () => other.apiKeys.delete(mine.id),
      () => other.apiKeys.rotate(mine.id),
      () => other.apiKeys.update(mine.id, { name: 'x' }),
    ]) {
      await assert.rejects(call(), (err: { status?: number }) => err.status === 404);
    }
    assert.ok(await works(mine.key));
    await kernel.apiKeys.delete(mine.id);
  });

  test("the CLI: keys create prints the key alone; rotating the CLI's own key keeps the CLI working", async () => {
    const created = await d.cli(['keys', 'create', '--name', 'from-cli', '--days-to-expire', '3']);
    assert.equal(created.exitCode, 0, created.stderr);
    const key = created.stdout.trim();
    assert.match(key, /^sk_\S+$/);
    assert.ok(await works(key));
    const ids = (await d.cli(['keys', 'list', '-q'])).stdout.trim().split('\n');
    const listed = JSON.parse((await d.cli(['keys', 'list', '--json'])).stdout) as { id: string; name: string; masked_key: string }[];
    assert.ok(listed.some((k) => k.name === 'from-cli' && ids.includes(k.id)));

    // The CLI's own key (rbrowse auth token), rotated with no grace.
    const own = (await kernel.apiKeys.list({ limit: 100 })).items.find((k) => k.masked_key.endsWith(d.apiKey.slice(-4)))!;
    assert.ok(own, 'the local key is listed');
    const rotated = await d.cli(['keys', 'rotate', own.id, '--expire-in-days', '0']);
    assert.equal(rotated.exitCode, 0, rotated.stderr);
    const newKey = rotated.stdout.trim();
    assert.equal(await works(d.apiKey), false);
    assert.equal((await d.cli(['auth', 'token'])).stdout.trim(), newKey);
    const ls = await d.cli(['ls', '-q']);
    assert.equal(ls.exitCode, 0, ls.stderr);
    const removed = await d.cli(['keys', 'delete', listed.find((k) => k.name === 'from-cli')!.id]);
    assert.equal(removed.exitCode, 0, removed.stderr);
    assert.equal(await works(key), false);
  });
});
