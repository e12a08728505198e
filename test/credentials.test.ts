/**
 * Stored credentials through the official SDK and the CLI: values and TOTP secrets go in and never
 * come out, in no answer, log or state file in clear; TOTP codes are the RFC 6238 ones; names are
 * unique per project and other projects and organizations see nothing.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Kernel from '@onkernel/sdk';
import { Secret, TOTP } from 'otpauth';
import { execa } from 'execa';
import { CLI, startTestDaemon, type TestDaemon } from './helpers/daemon.js';

const PASSWORD = 'pw-Zq8u1Lr5-never-echoed';
const SECRET = 'JBSWY3DPEHPK3PXP';
const SECRET_PASTED = 'jbsw y3dp-ehpk 3pxp';

/** The codes the secret gives around now: the server's may fall in the neighbouring 30 s step. */
function expectedCodes(secret: string): string[] {
  const totp = new TOTP({ secret: Secret.fromBase32(secret) });
  return [-30_000, 0, 30_000].map((offset) => totp.generate({ timestamp: Date.now() + offset }));
}

describe('credentials', () => {
  let d: TestDaemon;
  let kernel: Kernel;
  const answers: string[] = [];
  /** What must never be in an answer or a file in clear. */
  const secrets = [PASSWORD, SECRET];
  /** Every answer body is kept, to check afterwards that no secret was in any. */
  const record = <T>(value: T): T => {
    answers.push(JSON.stringify(value));
    return value;
  };

  before(async () => {
    d = await startTestDaemon();
    kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
  });
  after(async () => {
    await d?.stop();
  });

  test('create and get: field names and a current TOTP code, never the values or the secret', async () => {
    const c = record(
      await kernel.credentials.create({
        name: 'gh',
        domain: 'github.com',
        values: { username: 'alice', password: PASSWORD },
        totp_secret: SECRET_PASTED,
      }),
    );
    assert.deepEqual(c.value_keys, ['password', 'username']);
    assert.equal(c.has_values, true);
    assert.equal(c.has_totp_secret, true);
    assert.ok(expectedCodes(SECRET).includes(c.totp_code!), `${c.totp_code} is a code of the secret`);
    assert.ok(Date.parse(c.totp_code_expires_at!) > Date.now());
    const got = record(await kernel.credentials.retrieve('gh'));
    assert.equal(got.id, c.id);
    assert.equal(got.totp_code, undefined);
    assert.deepEqual(got.value_keys, ['password', 'username']);
    const code = record(await kernel.credentials.totpCode(c.id));
    assert.ok(expectedCodes(SECRET).includes(code.code));
    const listed = record((await kernel.credentials.list({ domain: 'github.com' })).items);
    assert.deepEqual(
      listed.map((x) => x.id),
      [c.id],
    );
    assert.equal(listed[0]!.value_keys, undefined);
    assert.deepEqual(
      (await kernel.credentials.list({ query: 'GITHUB' })).items.map((x) => x.id),
      [c.id],
    );
    assert.deepEqual((await kernel.credentials.list({ domain: 'example.com' })).items, []);
  });

  test('update merges and removes values, clears the TOTP secret; names are unique; bad input is a 400', async () => {
    const c = await kernel.credentials.create({ name: 'site', domain: 'example.com', values: { username: 'bob', otp: '1' } });
    assert.equal(c.has_totp_secret, false);
    const updated = record(
      await kernel.credentials.update(c.id, { values: { password: PASSWORD }, remove_value_keys: ['otp'], totp_secret: SECRET }),
    );
    assert.deepEqual(updated.value_keys, ['password', 'username']);
    assert.ok(expectedCodes(SECRET).includes(updated.totp_code!));
    const cleared = record(await kernel.credentials.update('site', { totp_secret: '', name: 'site-renamed' }));
    assert.equal(cleared.has_totp_secret, false);
    assert.equal(cleared.name, 'site-renamed');
    const noCode = await d.api('GET', `/credentials/${c.id}/totp-code`);
    assert.equal(noCode.status, 400);
    const dup = await d.api('POST', '/credentials', { name: 'gh', domain: 'x.com', values: {} });
    assert.equal(dup.status, 409);
    for (const body of [
      { name: 'x', domain: 'x.com' },
      { name: 'y', domain: 'x.com', values: { a: 1 } },
      { name: 'z', domain: 'x.com', values: {}, totp_secret: 'not base32!' },
    ]) {
      const r = await d.api('POST', '/credentials', body);
      assert.equal(r.status, 400, JSON.stringify(body));
    }
    // Concurrent updates of one credential each keep what they set.
    await Promise.all(['a', 'b', 'c', 'd'].map((k) => kernel.credentials.update(c.id, { values: { [k]: k } })));
    assert.deepEqual((await kernel.credentials.retrieve(c.id)).value_keys, ['a', 'b', 'c', 'd', 'password', 'username']);
    await kernel.credentials.delete(c.id);
    assert.equal((await d.api('GET', `/credentials/${c.id}`)).status, 404);
  });

  test('another project and another organization see none of them', async () => {
    const project = await kernel.projects.create({ name: 'creds-elsewhere' });
    const inProject = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0, projectID: project.id });
    assert.deepEqual((await inProject.credentials.list()).items, []);
    assert.equal((await d.api('GET', '/credentials/gh', undefined, undefined)).status, 200);
    const there = await fetch(`${d.baseUrl}/credentials/gh/totp-code`, {
      headers: { authorization: `Bearer ${d.apiKey}`, 'x-kernel-project-id': project.id },
    });
    assert.equal(there.status, 404);
    // The same name is free in another project.
    const same = await inProject.credentials.create({ name: 'gh', domain: 'github.com', values: {} });
    await inProject.credentials.delete(same.id);
    await kernel.projects.delete(project.id);
    const otherKey = (await d.cli(['auth', 'create-key', '--org', 'creds-other'])).stdout.trim();
    assert.equal((await d.api('GET', '/credentials/gh', undefined, otherKey)).status, 404);
    assert.equal((await d.api('GET', '/credentials', undefined, otherKey)).body.length, 0);
  });

  test('the CLI: values from standard input, the TOTP code, field names only', async () => {
    const created = await d.cli(['credentials', 'create', '--name', 'cli-cred', '--domain', 'example.org', '--values-stdin', '--json']);
    // No stdin was given above: the command must fail rather than store nothing silently.
    assert.notEqual(created.exitCode, 0);
    const r = await execa(CLI, ['credentials', 'create', '--name', 'cli-cred', '--domain', 'example.org', '--values-stdin', '--json'], {
      env: d.env,
      extendEnv: false,
      input: JSON.stringify({ username: 'carol', password: PASSWORD }),
      reject: false,
    });
    assert.equal(r.exitCode, 0, String(r.stderr));
    assert.deepEqual(JSON.parse(String(r.stdout)).value_keys, ['password', 'username']);
    answers.push(String(r.stdout));
    const totp = await d.cli(['credentials', 'totp', 'gh']);
    assert.equal(totp.exitCode, 0, totp.stderr);
    assert.ok(expectedCodes(SECRET).includes(totp.stdout.trim()));
    const shown = await d.cli(['credentials', 'get', 'cli-cred']);
    answers.push(shown.stdout);
    assert.match(shown.stdout, /password, username/);
  });

  test('credential providers: the token sealed, lookup order, a real connection attempt through the 1Password SDK', async () => {
    const TOKEN = 'ops_not-a-real-service-account-token';
    const p = record(await kernel.credentialProviders.create({ name: 'team-1p', provider_type: 'onepassword', token: TOKEN }));
    assert.equal(p.enabled, true);
    assert.equal((p as { token?: string }).token, undefined);
    const second = record(
      await kernel.credentialProviders.create({ name: 'backup-1p', provider_type: 'onepassword', token: TOKEN, cache_ttl_seconds: 60 }),
    );
    assert.equal(second.priority, p.priority + 1);
    await kernel.credentialProviders.update(second.id, { priority: 0 });
    await kernel.credentialProviders.update(p.id, { priority: 5, enabled: false });
    const order = [];
    for await (const x of kernel.credentialProviders.list()) order.push(x.name);
    assert.deepEqual(order, ['backup-1p', 'team-1p']);
    assert.equal((await kernel.credentialProviders.retrieve('team-1p')).enabled, false);
    assert.equal((await d.api('POST', '/org/credential_providers', { name: 'team-1p', provider_type: 'onepassword', token: 'x' })).status, 409);
    assert.equal((await d.api('POST', '/org/credential_providers', { name: 'x', provider_type: 'bitwarden', token: 'x' })).status, 400);
    // The SDK refuses this token before any network: the test says so, items are a 422.
    const tested = record(await kernel.credentialProviders.test(p.id));
    assert.equal(tested.success, false);
    assert.match(tested.error!, /token/i);
    const items = await d.api('GET', `/org/credential_providers/${p.id}/items`);
    assert.equal(items.status, 422, items.text);
    assert.equal(items.body.code, 'provider_error');
    // Organization-wide keys manage them; another organization sees none.
    const project = await kernel.projects.create({ name: 'providers-scoped' });
    const scoped = await kernel.apiKeys.create({ name: 'scoped', project_id: project.id });
    assert.equal((await d.api('GET', '/org/credential_providers', undefined, scoped.key)).status, 403);
    await kernel.apiKeys.delete(scoped.id);
    await kernel.projects.delete(project.id);
    const otherKey = (await d.cli(['auth', 'create-key', '--org', 'providers-other'])).stdout.trim();
    assert.equal((await d.api('GET', `/org/credential_providers/${p.id}`, undefined, otherKey)).status, 404);
    // The CLI takes the token on standard input only.
    const r = await execa(CLI, ['credentials', 'providers', 'create', '--name', 'cli-1p', '--token-stdin', '--json'], {
      env: d.env,
      extendEnv: false,
      input: TOKEN,
      reject: false,
    });
    assert.equal(r.exitCode, 0, String(r.stderr));
    answers.push(String(r.stdout));
    const test = await d.cli(['credentials', 'providers', 'test', 'cli-1p']);
    assert.equal(test.exitCode, 1);
    assert.match(test.stdout, /^failed: /);
    for (const id of [p.id, second.id, JSON.parse(String(r.stdout)).id]) await kernel.credentialProviders.delete(id);
    assert.equal((await d.api('GET', `/org/credential_providers/${p.id}`)).status, 404);
    secrets.push(TOKEN);
  });

  test('no secret in any answer, log or file of the daemon in clear; the vault key is 0600', async () => {
    for (const a of answers) {
      for (const secret of secrets) assert.ok(!a.includes(secret), `an answer held ${secret.slice(0, 6)}...`);
    }
    const files = (await readdir(d.home, { recursive: true, withFileTypes: true })).filter((e) => e.isFile() && !e.parentPath.includes('/sessions'));
    assert.ok(files.some((f) => f.name === 'state.json'));
    for (const f of files) {
      const text = await readFile(join(f.parentPath, f.name), 'latin1').catch(() => '');
      for (const secret of secrets) assert.ok(!text.includes(secret), `${f.name} holds ${secret.slice(0, 6)}... in clear`);
    }
    const state = await readFile(join(d.home, 'state.json'), 'utf8');
    assert.match(state, /"sealed": ?"ey/, 'the values are kept sealed');
    assert.equal((await stat(join(d.home, 'credentials', 'vault-key'))).mode & 0o777, 0o600);
  });
});
