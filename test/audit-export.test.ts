// Audit-log export destinations (Kernel's /audit-logs/export/destinations): the organization's audit
// log delivered to an S3 bucket through a role the daemon assumes. The bucket is a real S3
// implementation on this machine (s3rver); STS is a local receiver that records each AssumeRole
// and hands out that S3's credentials, so an object that lands proves the assumed role wrote it.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { startStsReceiver } from './helpers/sts.js';
import { startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

const S3_KEYS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const ROLE = 'arn:aws:iam::123456789012:role/rbrowse-audit';

let d: TestDaemon;
let s3dir: string;
let s3server: S3rver;
let s3url: string;
let s3: S3Client;
let sts: Awaited<ReturnType<typeof startStsReceiver>>;

before(async () => {
  s3dir = await mkdtemp(join(tmpdir(), 'rbrowse-s3-'));
  s3server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: s3dir, configureBuckets: [{ name: 'audit-logs', configs: [] }] });
  const { port } = (await s3server.run()) as { port: number };
  s3url = `http://127.0.0.1:${port}`;
  s3 = new S3Client({ region: 'us-east-1', endpoint: s3url, forcePathStyle: true, credentials: S3_KEYS });
  sts = await startStsReceiver(S3_KEYS);
  d = await startTestDaemon({
    env: {
      AWS_ACCESS_KEY_ID: 'AKIADAEMONKEY0000000',
      AWS_SECRET_ACCESS_KEY: 'daemon-secret',
      RBROWSE_AUDIT_EXPORT_STS_ENDPOINT: sts.url,
      RBROWSE_AUDIT_EXPORT_S3_ENDPOINT: s3url,
      RBROWSE_AUDIT_EXPORT_DELAY_SECONDS: '1',
      RBROWSE_AUDIT_EXPORT_INTERVAL_SECONDS: '1',
      RBROWSE_AUDIT_EXPORT_PRINCIPAL_ARN: 'arn:aws:iam::000000000000:user/rbrowse-test',
    },
  });
});
after(async () => {
  await d?.stop();
  s3?.destroy();
  await sts?.close();
  await s3server?.close();
  await rm(s3dir, { recursive: true, force: true });
});

const create = (body: object, key?: string) => d.api('POST', '/audit-logs/export/destinations', body, key);
const base = { type: 's3', format: 'jsonl.gz', bucket: 'audit-logs', region: 'us-east-1', role_arn: ROLE };

/** Every row delivered under a prefix: the objects' keys and their gunzipped JSON lines. */
async function delivered(prefix: string): Promise<{ keys: string[]; rows: any[] }> {
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'audit-logs', Prefix: `${prefix}/` }));
  const keys = (listed.Contents ?? []).map((o) => o.Key!).filter((k) => k.endsWith('.jsonl.gz'));
  const rows: any[] = [];
  for (const key of keys) {
    const object = await s3.send(new GetObjectCommand({ Bucket: 'audit-logs', Key: key }));
    const body = Buffer.from(await object.Body!.transformToByteArray());
    for (const line of gunzipSync(body).toString().split('\n').filter(Boolean)) rows.push(JSON.parse(line));
  }
  return { keys, rows };
}

describe('audit-log export destinations', () => {
  test("a destination is the organization's: created with a new external id, listed, got, changed; other organizations and project keys cannot reach it", async () => {
    const r = await create({ ...base, prefix: 'crud/' });
    assert.equal(r.status, 201, r.text);
    const dest = r.body;
    assert.match(dest.id, /^[a-z][a-z0-9]{23}$/);
    assert.equal(dest.prefix, 'crud', 'slashes trimmed');
    assert.match(dest.external_id, /^[0-9a-f-]{36}$/);
    assert.equal(dest.kernel_role_arn, 'arn:aws:iam::000000000000:user/rbrowse-test');
    assert.deepEqual([dest.status, dest.type, dest.format, dest.consecutive_failures], ['active', 's3', 'jsonl.gz', 0]);
    const second = await create({ ...base, prefix: 'crud' });
    assert.notEqual(second.body.external_id, dest.external_id, 'each destination its own external id');
    assert.deepEqual(
      (await d.api('GET', '/audit-logs/export/destinations')).body.map((x: any) => x.id),
      [dest.id, second.body.id],
    );
    const patched = await d.api('PATCH', `/audit-logs/export/destinations/${dest.id}`, { kms_key_id: 'alias/audit', region: 'eu-west-1' });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual([patched.body.kms_key_id, patched.body.region], ['alias/audit', 'eu-west-1']);
    const cleared = await d.api('PATCH', `/audit-logs/export/destinations/${dest.id}`, { kms_key_id: '' });
    assert.equal(cleared.body.kms_key_id, null, '"" removes the key');

    const other = (await d.cli(['auth', 'create-key', '--org', 'audit-export-other'])).stdout.trim();
    assert.equal((await d.api('GET', `/audit-logs/export/destinations/${dest.id}`, undefined, other)).status, 404);
    assert.deepEqual((await d.api('GET', '/audit-logs/export/destinations', undefined, other)).body, []);
    assert.equal((await d.api('DELETE', `/audit-logs/export/destinations/${dest.id}`, undefined, other)).status, 404);
    const project = await d.api('POST', '/org/projects', { name: 'audit-export-project' });
    assert.equal(project.status, 200, project.text);
    const projectKey = await d.api('POST', '/org/api_keys', { name: 'p', project_id: project.body.id });
    assert.equal(projectKey.status, 200, projectKey.text);
    assert.equal((await create({ ...base, prefix: 'p' }, projectKey.body.key)).status, 403);

    for (const bad of [
      { ...base, bucket: 'Not_A_Bucket', prefix: 'x' },
      { ...base, role_arn: 'not-an-arn', prefix: 'x' },
      { ...base, format: 'csv', prefix: 'x' },
      { ...base, type: 'gcs', prefix: 'x' },
      { ...base },
      { ...base, prefix: 'x', colour: 'red' },
    ]) {
      const refused = await create(bad);
      assert.equal(refused.status, 400, `${JSON.stringify(bad)}: ${refused.text}`);
    }
    for (const id of [dest.id, second.body.id]) assert.equal((await d.api('DELETE', `/audit-logs/export/destinations/${id}`)).status, 204);
    assert.equal((await d.api('GET', `/audit-logs/export/destinations/${dest.id}`)).status, 404);
  });

  test('test assumes the role with the external id and writes an object; a refused role or a missing bucket says which stage failed', async () => {
    const dest = (await create({ ...base, prefix: 'tests' })).body;
    sts.calls.length = 0;
    const ok = await d.api('POST', `/audit-logs/export/destinations/${dest.id}/test`);
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.body, { stage: 'complete', success: true, error: null });
    const call = sts.calls.at(-1)!;
    assert.equal(call.params.get('RoleArn'), ROLE);
    assert.equal(call.params.get('ExternalId'), dest.external_id);
    assert.equal(call.signedWith, 'AKIADAEMONKEY0000000', "signed with the daemon's own AWS credentials");
    const written = await s3.send(new ListObjectsV2Command({ Bucket: 'audit-logs', Prefix: `tests/destination_id=${dest.id}/` }));
    assert.equal(written.KeyCount, 1, 'the test object is there');

    await d.api('PATCH', `/audit-logs/export/destinations/${dest.id}`, { role_arn: 'arn:aws:iam::123456789012:role/denied' });
    const denied = (await d.api('POST', `/audit-logs/export/destinations/${dest.id}/test`)).body;
    assert.deepEqual([denied.stage, denied.success, denied.error.code], ['assume_role', false, 'assume_role_failed']);
    assert.match(denied.error.message, /AccessDenied/);
    await d.api('PATCH', `/audit-logs/export/destinations/${dest.id}`, { role_arn: ROLE, bucket: 'no-such-bucket' });
    const missing = (await d.api('POST', `/audit-logs/export/destinations/${dest.id}/test`)).body;
    assert.deepEqual([missing.stage, missing.success, missing.error.code], ['put_object', false, 'put_object_failed']);
    assert.match(missing.error.message, /NoSuchBucket/);
    const cli = await d.cli(['audit', 'destinations', 'test', dest.id]);
    assert.equal(cli.exitCode, 1);
    assert.match(cli.stdout, /failed at put_object: NoSuchBucket/);
    await d.api('DELETE', `/audit-logs/export/destinations/${dest.id}`);
  });

  test("the organization's calls from its creation on are delivered as gzipped JSON lines by UTC hour; none of another organization's; nothing recorded while paused", async () => {
    const dest = (await create({ ...base, prefix: 'live' })).body;
    const prefix = `live/destination_id=${dest.id}/org_id=`;
    const made = await d.api('POST', '/profiles', { name: 'exported-1' });
    assert.equal(made.status, 200, made.text);
    const other = (await d.cli(['auth', 'create-key', '--org', 'audit-export-elsewhere'])).stdout.trim();
    assert.equal((await d.api('POST', '/profiles', { name: 'elsewhere-1' }, other)).status, 200);

    const first = await waitFor(
      async () => {
        const got = await delivered('live');
        return got.rows.some((r) => r.path === '/profiles' && r.method === 'POST') ? got : false;
      },
      30_000,
      'the profile creation delivered',
    );
    assert.ok(first);
    for (const key of first.keys) {
      assert.match(key, new RegExp(`^${prefix}[a-z0-9]+/date=\\d{4}-\\d{2}-\\d{2}/hour=\\d{2}/\\d{8}T\\d{6}Z-[0-9a-f]{16}-0000\\.jsonl\\.gz$`));
    }
    const row = first.rows.find((r) => r.path === '/profiles')!;
    assert.equal(row.event_id, row.id);
    assert.equal(row.status, 200);
    assert.equal(row.org_id, undefined);
    assert.ok(!first.rows.some((r) => r.path === `/audit-logs/export/destinations` && r.method === 'POST'), 'the call that made it came before');
    const keyOfOther = (await d.api('GET', '/org/api_keys', undefined, other)).body;
    const otherKeyIds = new Set((Array.isArray(keyOfOther) ? keyOfOther : []).map((k: any) => k.id));
    assert.ok(!first.rows.some((r) => otherKeyIds.has(r.api_key_id)), "no call of the other organization's");
    const state = (await d.api('GET', `/audit-logs/export/destinations/${dest.id}`)).body;
    assert.ok(state.last_success_at);
    assert.match(state.last_exported_cursor, /^v1\./);
    assert.equal(state.consecutive_failures, 0);

    // Paused: what happens meanwhile is never delivered, even after the resume.
    assert.equal((await d.api('PATCH', `/audit-logs/export/destinations/${dest.id}`, { status: 'paused' })).body.status, 'paused');
    await d.api('POST', '/profiles', { name: 'while-paused' });
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal((await d.api('PATCH', `/audit-logs/export/destinations/${dest.id}`, { status: 'active' })).body.status, 'active');
    await d.api('POST', '/profiles', { name: 'after-resume' });
    const posts = (rows: any[]) => rows.filter((r) => r.path === '/profiles' && r.method === 'POST').length;
    await waitFor(async () => posts((await delivered('live')).rows) >= 2 || undefined, 30_000, 'the call after the resume delivered');
    // Another round or two of delivery: the one made while paused still does not come.
    await new Promise((r) => setTimeout(r, 2500));
    const resumed = await delivered('live');
    assert.equal(posts(resumed.rows), 2, 'the one made while paused is not there');
    await d.api('DELETE', `/audit-logs/export/destinations/${dest.id}`);
  });

  test('an idle destination leaves the state file alone; a delivery moves its cursor', async () => {
    const dest = (await create({ ...base, prefix: 'idle' })).body;
    const cursor = async () => {
      const state = JSON.parse(await readFile(join(d.home, 'state.json'), 'utf8'));
      return state.audit_export_destinations.find((r: { id: string }) => r.id === dest.id).cursor_ms as number;
    };
    const created = await cursor();
    // Ticks every second with nothing of the organization's to deliver: no write.
    await new Promise((r) => setTimeout(r, 3500));
    assert.equal(await cursor(), created, 'an empty window is not written');
    // Control: a call is delivered, and the cursor written past it.
    await d.api('POST', '/profiles', { name: 'after-idle' });
    await waitFor(async () => (await delivered('idle')).rows.some((r) => r.path === '/profiles'), 30_000, 'the call delivered');
    await waitFor(async () => (await cursor()) > created, 10_000, 'the cursor moved');
    await d.api('DELETE', `/audit-logs/export/destinations/${dest.id}`);
  });

  test('a delivery that fails is counted, said and retried later', async () => {
    const dest = (await create({ ...base, bucket: 'no-such-bucket', prefix: 'failing' })).body;
    await d.api('POST', '/profiles', { name: 'undeliverable' });
    const failed = await waitFor(
      async () => {
        const r = (await d.api('GET', `/audit-logs/export/destinations/${dest.id}`)).body;
        return r.consecutive_failures >= 1 ? r : undefined;
      },
      30_000,
      'a failed delivery',
    );
    assert.match(failed.last_error, /NoSuchBucket/);
    assert.ok(failed.last_error_at);
    assert.ok(Date.parse(failed.next_attempt_at) > Date.parse(failed.last_error_at), 'the next try is later');
    assert.doesNotMatch(JSON.stringify(failed), /daemon-secret|AKIADAEMON/);
    await d.api('DELETE', `/audit-logs/export/destinations/${dest.id}`);
  });
});
