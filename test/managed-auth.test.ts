import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright';
import type { ManagedAuth } from '@onkernel/sdk/resources/auth/connections';
import { startSdkDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startLoginSite, totpNow, type LoginSite } from './helpers/login-site.js';
import type Kernel from '@onkernel/sdk';

const TOTP_SECRET = 'JBSWY3DPEHPK3PXP';

/** The fields of Kernel's newer types (the Python SDK 0.94's) that @onkernel/sdk 0.84 does not declare yet. */
type Newer = Omit<ManagedAuth, 'fields'> & {
  interaction_id?: string | null;
  fields?: { id: string; ref: string; type: string; reason?: string; hint?: string }[] | null;
};
const newer = (c: ManagedAuth) => c as unknown as Newer;

describe('managed auth (auth connections)', () => {
  let d: TestDaemon;
  let kernel: Kernel;
  let site: LoginSite;
  before(async () => {
    // Health checks every 2 s instead of Kernel's smallest 300 s, so one runs within a test.
    ({ d, kernel } = await startSdkDaemon({ env: { RBROWSE_AUTH_MIN_HEALTH_CHECK_SECONDS: '2' } }));
    site = await startLoginSite({ alice: { password: 'wonderland', totpSecret: TOTP_SECRET }, bob: { password: 'builder' } });
  });
  after(async () => {
    await site?.close();
    await d?.stop();
  });

  const until = (id: string, ok: (c: ManagedAuth) => boolean, what: string, ms = 60_000): Promise<ManagedAuth> =>
    waitFor<ManagedAuth | null>(
      async () => {
        const c = await kernel.auth.connections.retrieve(id);
        if (c.flow_status && c.flow_status !== 'IN_PROGRESS' && !ok(c))
          throw new Error(`the flow ended ${c.flow_status}: ${c.error_code} ${c.error_message}`);
        return ok(c) ? c : null;
      },
      ms,
      what,
    ) as Promise<ManagedAuth>;
  /** What a browser with the profile sees of the site's account page. */
  const accountPageWith = async (profile: string) => {
    const s = await kernel.browsers.create({ headless: true, profile: { name: profile } });
    const browser = await chromium.connectOverCDP(s.cdp_ws_url);
    try {
      const page = browser.contexts()[0]!.pages()[0]!;
      await page.goto(`${site.url}/account`);
      return (await page.textContent('body'))!.trim();
    } finally {
      await browser.close();
      await kernel.browsers.deleteByID(s.session_id);
    }
  };

  test('a login through the API: the form found, a wrong password shown as the site says it, the code step, then the profile is logged in and the credential kept', async () => {
    const c = await kernel.auth.connections.create({ domain: '127.0.0.1', profile_name: 'alice-site', login_url: `${site.url}/login` });
    assert.equal(c.status, 'NEEDS_AUTH');
    assert.equal(c.flow_status, null);
    assert.equal(c.can_reauth, false);
    assert.equal(c.can_reauth_reason, 'no_prior_successful_login');
    assert.ok((await kernel.profiles.retrieve('alice-site')).id, 'the profile is made');
    const dup = await d.api('POST', '/auth/connections', { domain: '127.0.0.1', profile_name: 'alice-site' });
    assert.equal(dup.status, 409, dup.text);
    // Another organization sees none of it.
    const otherKey = (await d.cli(['auth', 'create-key', '--org', 'managed-auth-other'])).stdout.trim();
    assert.equal((await d.api('GET', `/auth/connections/${c.id}`, undefined, otherKey)).status, 404);
    assert.deepEqual((await d.api('GET', '/auth/connections', undefined, otherKey)).body, []);
    assert.equal((await d.api('POST', `/auth/connections/${c.id}/login`, {}, otherKey)).status, 404);

    assert.equal((await d.api('GET', '/org/limits')).body.auth_connections_used, 1);
    const login = await kernel.auth.connections.login(c.id);
    assert.equal(login.flow_type, 'LOGIN');
    assert.match(login.hosted_url, /\/browser\/live\?jwt=/, 'the hosted page is the live view of the login browser');
    // Its handoff code leads to the hosted page once, with no key.
    assert.ok(login.handoff_code);
    const handoff = await fetch(`${d.baseUrl}/auth/handoff/${login.handoff_code}`, { redirect: 'manual' });
    assert.deepEqual([handoff.status, handoff.headers.get('location')], [302, login.hosted_url]);
    assert.equal((await fetch(`${d.baseUrl}/auth/handoff/${login.handoff_code}`, { redirect: 'manual' })).status, 404, 'used once');
    assert.notEqual((await d.cli(['auth', 'connections', 'handoff', login.handoff_code!])).exitCode, 0, 'the CLI finds it spent too');
    assert.equal((await fetch(`${d.baseUrl}/auth/handoff/not-a-code`, { redirect: 'manual' })).status, 404);
    let state = await until(c.id, (s) => s.flow_step === 'AWAITING_INPUT', 'the login form');
    assert.deepEqual(
      state.discovered_fields!.map((f) => [f.name, f.type, f.label]),
      [
        ['username', 'text', 'Username'],
        ['password', 'password', 'Password'],
      ],
    );
    assert.deepEqual(
      newer(state).fields!.map((f) => [f.id, f.ref, f.type, f.reason]),
      [
        ['username', 'username', 'identifier', 'missing'],
        ['password', 'password', 'password', 'missing'],
      ],
    );
    // One pause for input, one interaction id; a submit naming another is refused and changes nothing.
    const firstInteraction = newer(state).interaction_id;
    assert.ok(firstInteraction);
    assert.equal(newer(await kernel.auth.connections.retrieve(c.id)).interaction_id, firstInteraction, 'the same while the form waits');
    const stale = await d.api('POST', `/auth/connections/${c.id}/submit`, {
      interaction_id: 'not-this-one',
      fields: { username: 'alice', password: 'x' },
    });
    assert.equal(stale.status, 409, stale.text);
    assert.match(stale.body.message, /interaction_id not-this-one is not the flow's current one/);
    assert.ok(state.browser_session_id);
    assert.equal(
      (await kernel.browsers.retrieve(state.browser_session_id!)).session_id,
      state.browser_session_id,
      'the login browser is one of yours',
    );

    const typo = await d.api('POST', `/auth/connections/${c.id}/submit`, { fields: { user: 'alice', password: 'x' } });
    assert.equal(typo.status, 400, 'a field the form does not have');
    assert.match(typo.text, /user/);
    assert.deepEqual(
      await kernel.auth.connections.submit(c.id, { interaction_id: firstInteraction!, fields: { username: 'alice', password: 'wrong' } } as never),
      { accepted: true },
    );
    state = await until(c.id, (s) => s.flow_step === 'AWAITING_INPUT' && Boolean(s.website_error), "the site's error");
    assert.equal(state.website_error, 'Incorrect username or password.');
    // The form came back: its values were rejected, and this is a new pause.
    assert.deepEqual(
      newer(state).fields!.map((f) => f.reason),
      ['rejected', 'rejected'],
    );
    assert.ok(newer(state).interaction_id && newer(state).interaction_id !== firstInteraction);

    await kernel.auth.connections.submit(c.id, { field_values: { username: 'alice', password: 'wonderland' } });
    state = await until(c.id, (s) => s.flow_step === 'AWAITING_INPUT' && s.discovered_fields?.[0]?.name === 'otp', 'the code step');
    assert.equal(state.discovered_fields![0]!.type, 'code');
    assert.equal(state.website_error, null);
    // The site's help text by the field comes as its hint.
    assert.equal(state.discovered_fields![0]!.hint, 'The 6 digits your authenticator app shows');
    assert.deepEqual([newer(state).fields![0]!.hint, newer(state).fields![0]!.reason], ['The 6 digits your authenticator app shows', 'missing']);
    await kernel.auth.connections.submit(c.id, { fields: { otp: totpNow(TOTP_SECRET) } });
    state = await until(c.id, (s) => s.flow_status === 'SUCCESS', 'success');

    assert.equal(state.status, 'AUTHENTICATED');
    assert.equal(state.post_login_url, `${site.url}/account`);
    assert.equal(state.can_reauth, true);
    assert.equal(state.can_reauth_reason, 'has_credential');
    assert.equal(state.browser_session_id, null);
    // What was typed is kept as a credential, the one-time code aside; its values never come back.
    const credential = await kernel.credentials.retrieve(state.credential!.name!);
    assert.deepEqual((credential as { value_keys?: string[] }).value_keys, ['password', 'username']);
    assert.ok(!JSON.stringify(credential).includes('wonderland'));
    // The next browser with the profile is logged in; a control without it is not.
    assert.match(await accountPageWith('alice-site'), /Welcome, alice/);
    await kernel.profiles.create({ name: 'nobody' });
    assert.match(await accountPageWith('nobody'), /Sign in/);

    const timeline = await d.api('GET', `/auth/connections/${c.id}/timeline`);
    assert.deepEqual(
      timeline.body.map((e: { type: string; status: string }) => [e.type, e.status]),
      [['login', 'SUCCESS']],
    );
    // Following a flow that has ended: its last state, then the stream ends.
    const events: { event: string; flow_status?: string }[] = [];
    for await (const e of await kernel.auth.connections.follow(c.id)) events.push(e as { event: string });
    assert.deepEqual(
      events.map((e) => [e.event, e.flow_status]),
      [['managed_auth_state', 'SUCCESS']],
    );
    await kernel.auth.connections.delete(c.id);
  });

  test('a stored credential logs in by itself; a health check that finds the site logged out logs in again', async () => {
    await kernel.credentials.create({ name: 'bob-site', domain: '127.0.0.1', values: { username: 'bob', password: 'builder' } });
    const c = await kernel.auth.connections.create({
      domain: '127.0.0.1',
      profile_name: 'bob-site',
      login_url: `${site.url}/login`,
      credential: { name: 'bob-site' },
      health_check_interval: 2,
    });
    const before = site.logins;
    const login = await kernel.auth.connections.login(c.id);
    // Its handoff code through the CLI: the hosted URL, once.
    const handoff = await d.cli(['auth', 'connections', 'handoff', (login as { handoff_code?: string }).handoff_code!]);
    assert.equal(handoff.exitCode, 0, handoff.stderr);
    assert.equal(handoff.stdout.trim(), login.hosted_url);
    await until(c.id, (s) => s.flow_status === 'SUCCESS' && s.status === 'AUTHENTICATED', 'the login with the stored credential');
    assert.equal(site.logins, before + 1);

    // A health check sees the profile still logged in.
    await waitFor(async () => (await kernel.auth.connections.retrieve(c.id)).last_auth_check_at !== undefined, 60_000, 'the first health check');
    let timeline = (await d.api('GET', `/auth/connections/${c.id}/timeline?type=health_check`)).body;
    assert.deepEqual([timeline[0].type, timeline[0].status], ['health_check', 'AUTHENTICATED']);
    assert.equal(site.logins, before + 1, 'a healthy profile is not logged in again');

    // The site ends every session: the next check finds the login form and logs in again.
    site.logOutEveryone();
    await waitFor(async () => site.logins === before + 2, 90_000, 'the re-auth');
    const done = await until(
      c.id,
      (s) => s.flow_type === 'REAUTH' && s.flow_status === 'SUCCESS' && s.status === 'AUTHENTICATED',
      'the re-auth to end',
    );
    assert.equal(done.can_reauth, true);
    timeline = (await d.api('GET', `/auth/connections/${c.id}/timeline`)).body;
    const kinds = timeline.map((e: { type: string; status: string }) => `${e.type} ${e.status}`);
    assert.ok(kinds.includes('health_check NEEDS_AUTH'), kinds.join(', '));
    assert.ok(kinds.includes('reauth SUCCESS'), kinds.join(', '));
    assert.match(await accountPageWith('bob-site'), /Welcome, bob/);

    // With health checks off nothing more runs.
    await kernel.auth.connections.update(c.id, { health_checks: false });
    const checks = timeline.filter((e: { type: string }) => e.type === 'health_check').length;
    await new Promise((r) => setTimeout(r, 5000));
    const later = (await d.api('GET', `/auth/connections/${c.id}/timeline?type=health_check&limit=100`)).body.length;
    assert.ok(later <= checks + 1, `checks went on: ${checks} then ${later}`);
    await kernel.auth.connections.delete(c.id);
  });

  test('a stored credential with a TOTP secret gets through the code step by itself', async () => {
    await kernel.credentials.create({
      name: 'alice-totp',
      domain: '127.0.0.1',
      values: { username: 'alice', password: 'wonderland' },
      totp_secret: TOTP_SECRET,
    });
    const c = await kernel.auth.connections.create({
      domain: '127.0.0.1',
      profile_name: 'alice-totp',
      login_url: `${site.url}/login`,
      credential: { name: 'alice-totp' },
      health_checks: false,
    });
    const before = site.logins;
    await kernel.auth.connections.login(c.id);
    const done = await until(c.id, (s) => s.flow_status === 'SUCCESS', 'the login with password and code');
    assert.equal(done.status, 'AUTHENTICATED');
    assert.equal(site.logins, before + 1);
    assert.match(await accountPageWith('alice-totp'), /Welcome, alice/);
    await kernel.auth.connections.delete(c.id);
  });

  test('a person completes the login in the browser, followed as events; deleting a connection cancels its login and ends its browser', async () => {
    const c = await kernel.auth.connections.create({
      domain: '127.0.0.1',
      profile_name: 'bob-by-hand',
      login_url: `${site.url}/login`,
      save_credentials: false,
    });
    await kernel.auth.connections.login(c.id);
    const events: { event: string; flow_status?: string; flow_step?: string }[] = [];
    const following = (async () => {
      for await (const e of await kernel.auth.connections.follow(c.id)) events.push(e as { event: string });
    })();
    const state = await until(c.id, (s) => s.flow_step === 'AWAITING_INPUT', 'the login form');
    // The person: in the login's own browser (what its live view shows), typing and clicking.
    const { cdp_ws_url } = await kernel.browsers.retrieve(state.browser_session_id!);
    const browser = await chromium.connectOverCDP(cdp_ws_url);
    try {
      const page = browser.contexts()[0]!.pages()[0]!;
      await page.fill('#username', 'bob');
      await page.fill('#password', 'builder');
      await page.click('button[type=submit]');
      await following;
    } finally {
      await browser.close().catch(() => {});
    }
    const steps = events.filter((e) => e.event === 'managed_auth_state').map((e) => `${e.flow_status} ${e.flow_step}`);
    assert.equal(steps.at(-1), 'SUCCESS COMPLETED', steps.join(', '));
    assert.ok(steps.includes('IN_PROGRESS AWAITING_INPUT'), steps.join(', '));
    const done = await kernel.auth.connections.retrieve(c.id);
    assert.equal(done.status, 'AUTHENTICATED');
    assert.equal(done.credential, undefined, 'save_credentials false keeps nothing');
    assert.equal(done.can_reauth_reason, 'no_credential');

    const second = await kernel.auth.connections.create({ domain: '127.0.0.1', profile_name: 'left-halfway', login_url: `${site.url}/login` });
    await kernel.auth.connections.login(second.id);
    const waiting = await until(second.id, (s) => s.flow_step === 'AWAITING_INPUT', 'the login form');
    await kernel.auth.connections.delete(second.id);
    assert.equal((await d.api('GET', `/auth/connections/${second.id}`)).status, 404);
    await waitFor(
      async () => Boolean((await d.api('GET', `/browsers/${waiting.browser_session_id}?include_deleted=true`)).body.deleted_at),
      15_000,
      'the login browser to end',
    );
    await kernel.auth.connections.delete(c.id);
  });

  test('bad input is a 4xx: an interval below the minimum, external providers, an unknown credential, a submit with no flow', async () => {
    const bad = async (path: string, body: object, status: number, match: RegExp) => {
      const r = await d.api('POST', path, body);
      assert.equal(r.status, status, r.text);
      assert.match(r.text, match);
    };
    await bad('/auth/connections', { domain: 'example.com', profile_name: 'p1', health_check_interval: 1 }, 400, /health_check_interval/);
    await bad('/auth/connections', { domain: 'example.com', profile_name: 'p1', credential: { provider: 'op', path: 'v/i' } }, 400, /credential/);
    await bad('/auth/connections', { domain: 'example.com', profile_name: 'p1', credential: { name: 'nope' } }, 404, /nope/);
    await bad('/auth/connections', { domain: 'not a domain', profile_name: 'p1' }, 400, /domain/);
    await bad('/auth/connections', { domain: 'example.com' }, 400, /profile_name/);
    const c = await kernel.auth.connections.create({ domain: 'https://Example.com/login', profile_name: 'p1' });
    assert.equal(c.domain, 'example.com');
    // A bad update changes nothing, not even its good fields.
    const badUpdate = await d.api('PATCH', `/auth/connections/${c.id}`, { record_session: true, allowed_domains: ['ok.example', 'not a domain'] });
    assert.equal(badUpdate.status, 400, badUpdate.text);
    assert.equal((await kernel.auth.connections.retrieve(c.id)).record_session, false);
    await bad(`/auth/connections/${c.id}/submit`, { fields: { a: 'b' } }, 409, /no login flow/);
    assert.equal((await d.api('GET', `/auth/connections/${c.id}/timeline`)).body.length, 0);
    const listed = await kernel.auth.connections.list({ domain: 'example.com' });
    assert.deepEqual(
      listed.getPaginatedItems().map((x) => x.id),
      [c.id],
    );
    await kernel.auth.connections.delete(c.id);
    assert.equal((await d.api('DELETE', `/auth/connections/${c.id}`)).status, 404);
  });
});
