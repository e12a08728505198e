/**
 * One organization's bytes never cost another its data: on a small filesystem mounted for the
 * test (RBROWSE_HOME on a 300 MiB tmpfs), an organization with its key alone fills what it may
 * (uploads refused with 403 once its share is used, before the disk fills) while another's
 * creates, profile saves and audit entries go on; a disk filled from outside refuses their writes
 * with 503 (a profile save's DELETE is refused and the session lives on) and a delete still frees
 * space; one organization's failing calls never push another's audit entries or ended sessions out.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { execa } from 'execa';
import { callApi, CLI, cleanEnv, type TestDaemon, waitFor } from './helpers/daemon.js';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { zipOf } from './helpers/zip.js';

const MiB = 1024 ** 2;

describe('storage bounded per organization, on a small filesystem', () => {
  let mountPoint: string;
  let home: string;
  let env: Record<string, string>;
  let d: TestDaemon;
  let keyB: string;

  before(async () => {
    mountPoint = await mkdtemp(join(tmpdir(), 'rbrowse-small-fs-'));
    await execa('mount', ['-t', 'tmpfs', '-o', 'size=300m,mode=0755', 'tmpfs', mountPoint]);
    home = join(mountPoint, 'home');
    await mkdir(home, { mode: 0o700 });
    env = {
      ...cleanEnv(home),
      RBROWSE_ORG_STORAGE: '80m',
      RBROWSE_DISK_RESERVE: '40m',
      RBROWSE_AUDIT_MAX: '40',
      RBROWSE_HISTORY_MAX: '10',
    };
    const started = await execa(CLI, ['daemon', 'start'], { env, extendEnv: false, reject: false });
    assert.equal(started.exitCode, 0, started.stderr);
    const baseUrl = started.stdout.trim();
    const apiKey = (await execa(CLI, ['auth', 'token'], { env, extendEnv: false })).stdout.trim();
    d = { baseUrl, apiKey, home, env, api: (m, p, b, k) => callApi(baseUrl, m, p, b, k === undefined ? apiKey : k) } as TestDaemon;
    keyB = (await execa(CLI, ['auth', 'create-key', '--org', 'filler'], { env, extendEnv: false })).stdout.trim();
  });
  after(async () => {
    await execa(CLI, ['daemon', 'stop'], { env, extendEnv: false, reject: false });
    await waitFor(async () => (await findMarkedProcesses(home)).length === 0, 30_000, 'the daemon to end').catch(() => {});
    await execa('umount', ['--lazy', mountPoint], { reject: false });
    await rm(mountPoint, { recursive: true, force: true });
  });

  const free = async () => {
    const s = await statfs(mountPoint);
    return s.bavail * s.bsize;
  };
  /** An extension whose zip is `mib` MiB that does not compress. */
  const bigExtension = async (mib: number) =>
    zipOf([
      { name: 'manifest.json', data: JSON.stringify({ manifest_version: 3, name: 'filler', version: '1.0' }) },
      { name: 'blob.bin', data: randomBytes(mib * MiB) },
    ]);
  const upload = async (zip: Buffer, key: string) => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(zip)]), 'ext.zip');
    const res = await fetch(`${d.baseUrl}/extensions`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    return { status: res.status, body: (await res.json()) as { id?: string; message?: string } };
  };
  /** A session whose profile saves; some data in it; its DELETE's answer. */
  async function profileRound(name: string): Promise<{ session: string; status: number; body: string }> {
    const session = (await d.api('POST', '/browsers', { headless: true, profile: { name, save_changes: true } })).body;
    assert.ok(session.session_id, JSON.stringify(session));
    const wrote = await d.api('POST', `/browsers/${session.session_id}/playwright/execute`, {
      code: "await page.context().addCookies([{ name: 'kept', value: 'yes', url: 'https://example.com' }]); return 1",
    });
    assert.equal(wrote.status, 200, wrote.text);
    const del = await d.api('DELETE', `/browsers/${session.session_id}`);
    return { session: session.session_id, status: del.status, body: del.text };
  }

  test('an organization fills its share and no more; the others save profiles, create sessions and keep their audit entries', async () => {
    assert.equal((await d.api('POST', '/profiles', { name: 'a-profile' })).status, 200);
    const first = await profileRound('a-profile');
    assert.equal(first.status, 204, first.body);
    await waitFor(
      async () => (await d.api('GET', '/profiles/a-profile')).body.updated_at !== (await d.api('GET', '/profiles/a-profile')).body.created_at,
      30_000,
      'the save',
    );
    const auditBefore = (await d.api('GET', `/audit-logs?start=2000-01-01T00:00:00Z&end=2100-01-01T00:00:00Z&limit=100`)).body as { id: string }[];
    assert.ok(auditBefore.length >= 3, `${auditBefore.length} audit entries of A`);

    // B uploads 15 MiB extensions until refused: its share (80 MiB) ends it, not the disk.
    const zip = await bigExtension(15);
    const accepted: string[] = [];
    let refusal: { status: number; body: { message?: string } } | undefined;
    for (let i = 0; i < 10 && !refusal; i++) {
      const r = await upload(zip, keyB);
      if (r.status === 200) accepted.push(r.body.id!);
      else refusal = r;
    }
    assert.ok(refusal, 'an upload was refused');
    assert.equal(refusal.status, 403, JSON.stringify(refusal.body));
    assert.match(refusal.body.message ?? '', /RBROWSE_ORG_STORAGE/);
    assert.ok(accepted.length >= 2 && accepted.length <= 3, `${accepted.length} accepted`);
    assert.ok((await free()) > 40 * MiB, 'the disk kept more than the reserve');

    // B's failing calls do not push A's audit entries out (each organization keeps its own 40).
    for (let i = 0; i < 120; i++) await d.api('DELETE', '/browsers/no-such-session', undefined, keyB);
    const auditAfter = (await d.api('GET', `/audit-logs?start=2000-01-01T00:00:00Z&end=2100-01-01T00:00:00Z&limit=100`)).body as { id: string }[];
    for (const e of auditBefore)
      assert.ok(
        auditAfter.some((x) => x.id === e.id),
        `A's entry ${e.id} is kept`,
      );
    // Control: B's own bound does hold it to 40.
    const auditB = (await d.api('GET', `/audit-logs?start=2000-01-01T00:00:00Z&end=2100-01-01T00:00:00Z&limit=100`, undefined, keyB))
      .body as unknown[];
    assert.equal(auditB.length, 40);

    // A carries on: a session, and a profile save.
    const again = await profileRound('a-profile');
    assert.equal(again.status, 204, again.body);

    // B's deletes free its share again.
    for (const id of accepted) assert.equal((await d.api('DELETE', `/extensions/${id}`, undefined, keyB)).status, 204);
    assert.equal((await upload(zip, keyB)).status, 200);
  });

  test('a disk filled from outside refuses writes with 503 and keeps a saving session alive; a delete frees space all the same', async () => {
    const filler = join(mountPoint, 'filler');
    // All but 20 MiB of the filesystem, below the 40 MiB reserve.
    await writeFile(filler, Buffer.alloc(Math.max(0, (await free()) - 20 * MiB)));
    try {
      const refused = await profileRound('a-profile');
      assert.equal(refused.status, 503, refused.body);
      assert.match(refused.body, /RBROWSE_DISK_RESERVE/);
      assert.equal((await d.api('GET', `/browsers/${refused.session}`)).status, 200, 'the session lives on, its changes not lost');
      const upload503 = await upload(await bigExtension(1), d.apiKey);
      assert.equal(upload503.status, 503);
      // Deletes free space on the full disk: B's extension goes (its files first).
      const ext = ((await d.api('GET', '/extensions', undefined, keyB)).body as { id: string }[])[0]!;
      const before = await free();
      assert.equal((await d.api('DELETE', `/extensions/${ext.id}`, undefined, keyB)).status, 204);
      assert.ok((await free()) > before + 10 * MiB, 'space came back');
      await rm(filler, { force: true });
      // With room again, the refused DELETE goes through, and its save with it.
      assert.equal((await d.api('DELETE', `/browsers/${refused.session}`)).status, 204);
    } finally {
      await rm(filler, { force: true });
    }
  });
});
