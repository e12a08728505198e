/**
 * The audit log through the official SDK and the CLI: every state-changing call of an
 * organization (who, which key, which project, what, when, the answer), none of its reads,
 * newest first, paged and exported as the SDK pages and downloads it, other organizations and
 * projects kept apart, the retention bound kept.
 */
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import Kernel from '@onkernel/sdk';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';

const window = () => ({ start: new Date(Date.now() - 3_600_000).toISOString(), end: new Date(Date.now() + 60_000).toISOString() });

async function all<T>(pages: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of pages) out.push(x);
  return out;
}

describe('audit log', () => {
  let d: TestDaemon;
  let kernel: Kernel;
  let sessionId: string;
  let keyId: string;

  before(async () => {
    d = await startTestDaemon();
    kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    const b = await kernel.browsers.create({ headless: true, name: 'audited' });
    sessionId = b.session_id;
    assert.equal((await d.api('PATCH', `/browsers/${sessionId}`, { tags: { team: 'qa' } })).status, 200);
    await kernel.browsers.retrieve(sessionId);
    await kernel.browsers.list();
    assert.equal((await d.api('POST', '/browsers', { viewport: { width: 1 } })).status, 400);
    await kernel.browsers.deleteByID(sessionId);
    const own = (await kernel.apiKeys.list({ limit: 100 })).items.find((k) => k.masked_key.endsWith(d.apiKey.slice(-4)))!;
    keyId = own.id;
  });
  after(async () => {
    await d?.stop();
  });

  test('the calls that changed something, newest first, with who, key, project, what, when and the answer; no reads', async () => {
    const entries = await all(kernel.auditLogs.list(window()));
    const mine = entries.filter((e) => e.path.includes(sessionId) || e.path === '/browsers');
    assert.deepEqual(
      mine.map((e) => `${e.method} ${e.route} ${e.status}`),
      ['DELETE /browsers/{id} 204', 'POST /browsers 400', 'PATCH /browsers/{id} 200', 'POST /browsers 200'],
    );
    assert.ok(
      entries.every((e) => e.method !== 'GET'),
      'reads are not recorded',
    );
    const times = entries.map((e) => Date.parse(e.timestamp));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => b - a),
      'newest first',
    );
    const del = mine[0] as (typeof mine)[0] & { api_key_id: string; project_id: string };
    assert.equal(del.path, `/browsers/${sessionId}`);
    assert.equal(del.api_key_id, keyId);
    assert.equal(del.user_id, keyId);
    assert.equal(del.auth_strategy, 'api_key');
    assert.match(del.email, /@localhost$/);
    assert.equal(del.project_id, (await kernel.projects.list({ name: 'Default' })).items[0]!.id);
    assert.equal(del.client_ip, '127.0.0.1');
    assert.ok(del.duration_ms >= 0);
  });

  test('filters and pages as the SDK asks', async () => {
    const deletes = await all(kernel.auditLogs.list({ ...window(), method: 'DELETE' }));
    assert.ok(deletes.length >= 1 && deletes.every((e) => e.method === 'DELETE'));
    const noPosts = await all(kernel.auditLogs.list({ ...window(), exclude_method: ['POST', 'PATCH'] }));
    assert.ok(noPosts.length >= 1 && noPosts.every((e) => e.method !== 'POST' && e.method !== 'PATCH'));
    const bySession = await all(kernel.auditLogs.list({ ...window(), search: sessionId }));
    assert.equal(bySession.length, 2);
    assert.equal((await all(kernel.auditLogs.list({ ...window(), search: '400' }))).filter((e) => e.status === 400).length, 1);
    // Two at a time: the SDK follows X-Next-Page-Token to the same list.
    const everything = await all(kernel.auditLogs.list(window()));
    const paged = await all(kernel.auditLogs.list({ ...window(), limit: 2 }));
    assert.deepEqual(
      paged.map((e) => (e as { id?: string }).id),
      everything.map((e) => (e as { id?: string }).id),
    );
    const first = await d.api('GET', `/audit-logs?start=${encodeURIComponent(window().start)}&end=${encodeURIComponent(window().end)}&limit=1`);
    assert.equal(first.headers.get('x-has-more'), 'true');
    assert.ok(first.headers.get('x-next-page-token'));
    // An empty window, a window the wrong way round, a forged token.
    assert.deepEqual(await all(kernel.auditLogs.list({ start: '2020-01-01T00:00:00Z', end: '2020-01-02T00:00:00Z' })), []);
    assert.equal((await d.api('GET', `/audit-logs?start=${encodeURIComponent(window().end)}&end=${encodeURIComponent(window().start)}`)).status, 400);
    assert.equal((await d.api('GET', '/audit-logs')).status, 400);
    assert.equal(
      (await d.api('GET', `/audit-logs?start=${encodeURIComponent(window().start)}&end=${encodeURIComponent(window().end)}&page_token=%2F%2F`))
        .status,
      400,
    );
  });

  test("the SDK's download checks each chunk's sha256 and row count; gzip too", async () => {
    const listed = await all(kernel.auditLogs.list(window()));
    const parts: Uint8Array[] = [];
    const result = await kernel.auditLogs.download({ ...window(), limit: 2 } as never, { write: (chunk: Uint8Array) => void parts.push(chunk) });
    assert.equal(result.rows, listed.length);
    assert.ok(result.chunks >= 2);
    const lines = Buffer.concat(parts)
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string });
    assert.deepEqual(
      lines.map((l) => l.id),
      listed.map((e) => (e as { id?: string }).id),
    );
    const gz = await fetch(
      `${d.baseUrl}/audit-logs/export/chunk?start=${encodeURIComponent(window().start)}&end=${encodeURIComponent(window().end)}&format=jsonl.gz`,
      {
        headers: { authorization: `Bearer ${d.apiKey}` },
      },
    );
    assert.equal(gz.status, 200);
    const body = Buffer.from(await gz.arrayBuffer());
    assert.equal(gunzipSync(body).toString().trim().split('\n').length, listed.length);
    // A forged cursor is refused naming the field the request sent it in.
    const forged = await d.api(
      'GET',
      `/audit-logs/export/chunk?start=${encodeURIComponent(window().start)}&end=${encodeURIComponent(window().end)}&cursor=%2F%2F`,
    );
    assert.equal(forged.status, 400, forged.text);
    assert.match(forged.body.message, /^cursor: /);
    const forgedPage = await d.api(
      'GET',
      `/audit-logs?start=${encodeURIComponent(window().start)}&end=${encodeURIComponent(window().end)}&page_token=%2F%2F`,
    );
    assert.match(forgedPage.body.message, /^page_token: /);
  });

  test('another organization and a project-scoped key see only their own', async () => {
    const otherKey = (await d.cli(['auth', 'create-key', '--org', 'audit-other'])).stdout.trim();
    const other = new Kernel({ apiKey: otherKey, baseURL: d.baseUrl, maxRetries: 0 });
    assert.deepEqual(await all(other.auditLogs.list(window())), []);
    const p = await kernel.projects.create({ name: 'audited-project' });
    const scoped = await kernel.apiKeys.create({ name: 'scoped', project_id: p.id });
    const s = new Kernel({ apiKey: scoped.key, baseURL: d.baseUrl, maxRetries: 0 });
    const profile = await s.profiles.create({ name: 'in-project' });
    await s.profiles.delete(profile.id);
    const seen = await all(s.auditLogs.list(window()));
    assert.deepEqual(
      seen.map((e) => `${e.method} ${e.route}`),
      ['DELETE /profiles/{id}', 'POST /profiles'],
    );
    await kernel.apiKeys.delete(scoped.id);
    await kernel.projects.delete(p.id);
  });

  test('the CLI lists and exports it', async () => {
    const listed = await d.cli(['audit', 'list', '--start', '1h', '--method', 'DELETE', '--json']);
    assert.equal(listed.exitCode, 0, listed.stderr);
    const entries = JSON.parse(listed.stdout) as { method: string }[];
    assert.ok(entries.length >= 1 && entries.every((e) => e.method === 'DELETE'));
    const file = join(tmpdir(), `rbrowse-audit-${process.pid}.jsonl`);
    try {
      const exported = await d.cli(['audit', 'export', '--start', '1h', '--limit', '2', '-o', file]);
      assert.equal(exported.exitCode, 0, exported.stderr);
      const lines = (await readFile(file, 'utf8')).trim().split('\n');
      assert.equal(lines.length, (await all(kernel.auditLogs.list(window()))).length);
      assert.match(exported.stderr, new RegExp(`${lines.length} entries`));
    } finally {
      await rm(file, { force: true });
    }
  });

  test('the retention bound: RBROWSE_AUDIT_MAX calls are kept, the newest', async () => {
    const small = await startTestDaemon({ env: { RBROWSE_AUDIT_MAX: '3' } });
    try {
      const k = new Kernel({ apiKey: small.apiKey, baseURL: small.baseUrl, maxRetries: 0 });
      for (let i = 0; i < 8; i++) await k.profiles.create({ name: `p${i}` });
      const kept = await all(k.auditLogs.list(window()));
      assert.deepEqual(
        kept.map((e) => e.path),
        Array(3).fill('/profiles'),
      );
      // The file was rewritten at twice the bound: 3 kept, then 2 more appended.
      const lines = (await readFile(join(small.home, 'history', 'audit.jsonl'), 'utf8')).trim().split('\n');
      assert.equal(lines.length, 5);
      assert.deepEqual(
        kept.map((e) => (e as { id?: string }).id),
        lines
          .slice(-3)
          .reverse()
          .map((l) => JSON.parse(l).id),
      );
    } finally {
      await small.stop();
    }
  });
});
