/**
 * Projects and limits through the official SDK and the CLI: every resource is its project's and
 * invisible from the others; the X-Kernel-Project-Id header, project-scoped keys and the default
 * project resolve as on Kernel; a project is deleted only when empty; concurrency caps answer 429
 * with Retry-After under concurrent creates, never a 5xx.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import Kernel, { toFile } from '@onkernel/sdk';
import { deployFixtureApp } from './helpers/apps.js';
import { zipOf } from './helpers/zip.js';
import { startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

describe('projects', () => {
  let d: TestDaemon;
  let kernel: Kernel;
  const inProject = (projectID: string | null, apiKey = d.apiKey) => new Kernel({ apiKey, baseURL: d.baseUrl, maxRetries: 0, projectID });
  /** A raw call with the default key and, if given, the project header. */
  const call = async (method: string, path: string, project?: string, body?: unknown, key = d.apiKey) => {
    const res = await fetch(`${d.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(project ? { 'x-kernel-project-id': project } : {}),
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    let answer: any;
    try {
      answer = text ? JSON.parse(text) : undefined;
    } catch {
      answer = text; // a download (an extension's zip)
    }
    return { status: res.status, headers: res.headers, body: answer };
  };
  const cleanup: (() => Promise<unknown>)[] = [];

  before(async () => {
    d = await startTestDaemon();
    kernel = inProject(null);
  });
  afterEach(async () => {
    for (const undo of cleanup.splice(0).reverse()) await undo().catch(() => {});
  });
  after(async () => {
    await d?.stop();
  });

  test('a default project holds what requests without a project make; the header names a project by id', async () => {
    const projects = await kernel.projects.list();
    assert.deepEqual(
      projects.items.map((p) => [p.name, p.status]),
      [['Default', 'active']],
    );
    const def = projects.items[0]!;
    const b = await kernel.browsers.create({ headless: true });
    cleanup.push(() => kernel.browsers.deleteByID(b.session_id));
    // Naming the default project is the same as naming none.
    assert.equal((await inProject(def.id).browsers.retrieve(b.session_id)).session_id, b.session_id);
    const byName = await call('GET', '/browsers', def.name);
    assert.equal(byName.status, 404);
    assert.equal(byName.body.code, 'project_not_found');
    const unknown = await call('GET', '/browsers', 'nosuchproject00000000000');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.code, 'project_not_found');
    // X-Kernel-Project (the newer SDKs' `project` option) takes a name or an id; an unknown one is a 404, not the default.
    const byProjectHeader = async (value: string, extra: Record<string, string> = {}) =>
      fetch(`${d.baseUrl}/browsers/${b.session_id}`, { headers: { authorization: `Bearer ${d.apiKey}`, 'x-kernel-project': value, ...extra } });
    assert.equal((await byProjectHeader(def.name)).status, 200);
    assert.equal((await byProjectHeader(def.id)).status, 200);
    const unknownName = await byProjectHeader('No Such Project');
    assert.deepEqual([unknownName.status, (await unknownName.json()).code], [404, 'project_not_found']);
    assert.equal((await byProjectHeader(def.name, { 'x-kernel-project-id': def.id })).status, 200, 'both headers, one project');
    // GET /auth/context: the key, its organization, its project (none: organization-wide) and the one this request acts in.
    const context = await call('GET', '/auth/context', def.id);
    assert.equal(context.status, 200);
    assert.deepEqual(context.body.authorization, { credential_scope: { project_id: null }, effective_scope: { project_id: def.id } });
    assert.deepEqual([context.body.principal.type, context.body.authentication.method], ['api_key', 'api_key']);
    // GET /org/entitlements: what is served is enabled (managed auth too), Kernel's cloud-only features are not.
    const entitlements = (await call('GET', '/org/entitlements')).body;
    assert.deepEqual(
      [entitlements.features.browser_pools.enabled, entitlements.features.gpu.enabled, entitlements.features.managed_auth.enabled],
      [true, false, true],
    );
    assert.equal(entitlements.limits.max_concurrent_browsers, (await kernel.organization.limits.retrieve()).max_concurrent_sessions);
    // Another organization has its own Default project, and ours is unknown to it.
    const otherKey = (await d.cli(['auth', 'create-key', '--org', 'projects-other'])).stdout.trim();
    const theirs = await call('GET', '/org/projects', undefined, undefined, otherKey);
    assert.deepEqual(
      theirs.body.map((p: { name: string; id: string }) => p.name),
      ['Default'],
    );
    assert.notEqual(theirs.body[0].id, def.id);
    assert.equal((await call('GET', '/browsers', def.id, undefined, otherKey)).status, 404);
    assert.equal((await call('GET', `/org/projects/${def.id}`, undefined, undefined, otherKey)).status, 404);
  });

  test("every kind of resource is its project's: invisible and untouchable from another", async () => {
    const staging = await kernel.projects.create({ name: 'staging' });
    cleanup.push(() => kernel.projects.delete(staging.id));
    const s = inProject(staging.id);
    const browser = await s.browsers.create({ headless: true, name: 'in-staging' });
    cleanup.push(() => s.browsers.deleteByID(browser.session_id));
    const profile = await s.profiles.create({ name: 'staging-profile' });
    cleanup.push(() => s.profiles.delete(profile.id));
    const proxy = await s.proxies.create({ type: 'custom', name: 'staging-proxy', config: { host: '127.0.0.1', port: 9 } });
    cleanup.push(() => s.proxies.delete(proxy.id!));
    const pool = await s.browserPools.create({ name: 'staging-pool', size: 1, headless: true });
    cleanup.push(() => s.browserPools.delete(pool.id, { force: true }));

    // The default project sees none of them, by id or by name, and cannot touch them.
    const ids = async <T extends { id?: string; session_id?: string }>(list: AsyncIterable<T>) => {
      const out: string[] = [];
      for await (const x of list) out.push((x.id ?? x.session_id)!);
      return out;
    };
    assert.ok(!(await ids(kernel.browsers.list())).includes(browser.session_id));
    assert.ok(!(await ids(kernel.profiles.list())).includes(profile.id));
    assert.ok(!(await ids(kernel.proxies.list())).includes(proxy.id!));
    assert.ok(!(await ids(kernel.browserPools.list())).includes(pool.id));
    for (const [path, method] of [
      [`/browsers/${browser.session_id}`, 'GET'],
      ['/browsers/in-staging', 'GET'],
      [`/browsers/${browser.session_id}`, 'DELETE'],
      [`/profiles/${profile.id}`, 'GET'],
      [`/proxies/${proxy.id}`, 'GET'],
      [`/browser_pools/${pool.id}`, 'GET'],
      [`/browser_pools/${pool.id}/acquire`, 'POST'],
    ] as const) {
      const r = await call(method, path, undefined, method === 'POST' ? {} : undefined);
      assert.equal(r.status, 404, `${method} ${path} from the default project: ${JSON.stringify(r.body)}`);
    }
    // A name is free again in another project.
    const same = await kernel.profiles.create({ name: 'staging-profile' });
    cleanup.push(() => kernel.profiles.delete(same.id));
    // And the project sees its own.
    assert.equal((await s.browsers.retrieve('in-staging')).session_id, browser.session_id);
    assert.ok((await ids(s.profiles.list())).includes(profile.id));

    // Not empty: 409 project_not_empty naming what it holds; then empty, deleted.
    const busy = await call('DELETE', `/org/projects/${staging.id}`);
    assert.equal(busy.status, 409);
    assert.equal(busy.body.code, 'project_not_empty');
    assert.match(busy.body.message, /sessions|profiles|proxies|pools/);
  });

  test("extensions, apps, deployments and invocations are their project's; an invocation's own key acts in it; the invocation cap", {
    timeout: 300_000,
  }, async () => {
    const apps = await kernel.projects.create({ name: 'apps-project' });
    const s = inProject(apps.id);
    const zip = await zipOf([{ name: 'manifest.json', data: JSON.stringify({ manifest_version: 3, name: 'Scoped', version: '1.0' }) }]);
    const ext = await s.extensions.upload({ file: await toFile(zip, 'ext.zip'), name: 'scoped-ext' });
    assert.equal((await call('GET', `/extensions/${ext.id}`)).status, 404);
    assert.equal((await call('GET', '/extensions/scoped-ext', apps.id)).status, 200);
    const deployment = await deployFixtureApp(s, 'sample');
    assert.equal((await call('GET', `/deployments/${deployment}`)).status, 404);
    assert.ok(!(await kernel.apps.list()).items.some((a) => a.app_name === 'sample'));
    assert.ok((await s.apps.list()).items.some((a) => a.app_name === 'sample'));
    // The invocation's minted key is bound to the project: the browser its action makes is the
    // project's (the audit log names the key and the project of that create).
    const started = Date.now();
    const env = await s.invocations.create({
      app_name: 'sample',
      version: 'latest',
      action_name: 'browser-title',
      payload: JSON.stringify({ url: 'about:blank' }),
    });
    assert.equal(env.status, 'succeeded', JSON.stringify(env));
    const creates = [];
    for await (const e of kernel.auditLogs.list({
      start: new Date(started).toISOString(),
      end: new Date(Date.now() + 1000).toISOString(),
      method: 'POST',
    })) {
      if (e.route === '/browsers') creates.push(e as typeof e & { project_id: string; api_key_id: string });
    }
    // Only the action made a browser since: with its own key, in the project.
    assert.equal(creates.length, 1, JSON.stringify(creates));
    assert.equal(creates[0]!.project_id, apps.id);
    assert.equal(creates[0]!.status, 200);
    const ours = (await kernel.apiKeys.list({ limit: 100 })).items.map((k) => k.id);
    assert.ok(!ours.includes(creates[0]!.api_key_id), "made with the invocation's minted key, not ours");
    assert.equal((await call('GET', `/invocations/${env.id}`)).status, 404);
    assert.equal((await call('GET', `/invocations/${env.id}`, apps.id)).status, 200);
    // One invocation at a time in this project.
    await kernel.projects.limits.update(apps.id, { max_concurrent_invocations: 1 });
    const running = await s.invocations.create({
      app_name: 'sample',
      version: 'latest',
      action_name: 'sleep',
      payload: JSON.stringify({ ms: 5000 }),
      async: true,
    });
    const refused = await call('POST', '/invocations', apps.id, { app_name: 'sample', version: 'latest', action_name: 'echo', async: true });
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    // Another project is not held by this one's cap.
    const elsewhere = await call('POST', '/invocations', undefined, { app_name: 'sample', version: 'latest', action_name: 'echo' });
    assert.equal(elsewhere.status, 404, 'the default project has no such app');
    await s.invocations.update(running.id, { status: 'failed' });
    await s.extensions.delete(ext.id);
    await s.deployments.delete(deployment);
    // Emptied, the project goes (its finished invocations are history, not contents).
    await waitFor(
      async () => (await call('DELETE', `/org/projects/${apps.id}`)).status === 204 || undefined,
      15_000,
      'the emptied project to be deleted',
    );
  });

  test('a project-scoped key sees only its project; a header naming another is 403; archived projects refuse', async () => {
    const a = await kernel.projects.create({ name: 'team-a' });
    cleanup.push(() => kernel.projects.delete(a.id));
    const key = await kernel.apiKeys.create({ name: 'team-a-key', project_id: a.id });
    cleanup.push(() => kernel.apiKeys.delete(key.id));
    assert.equal(key.project_id, a.id);
    assert.equal(key.project_name, 'team-a');
    const scoped = inProject(null, key.key);
    const p = await scoped.profiles.create({ name: 'made-by-scoped-key' });
    cleanup.push(() => scoped.profiles.delete(p.id));
    assert.ok(
      (await inProject(a.id).profiles.list()).items.some((x) => x.id === p.id),
      'made in the key project',
    );
    assert.ok(!(await kernel.profiles.list()).items.some((x) => x.id === p.id), 'not in the default project');
    const def = (await kernel.projects.list({ name: 'Default' })).items[0]!;
    const other = await call('GET', '/profiles', def.id, undefined, key.key);
    assert.equal(other.status, 403);
    assert.equal((await call('GET', '/profiles', a.id, undefined, key.key)).status, 200);
    // Organization management is for organization-wide keys; its own keys only.
    assert.equal((await call('POST', '/org/projects', undefined, { name: 'x' }, key.key)).status, 403);
    const visibleKeys = (await scoped.apiKeys.list({ limit: 100 })).items;
    assert.deepEqual(
      visibleKeys.map((k) => k.id),
      [key.id],
    );

    await kernel.projects.update(a.id, { status: 'archived' });
    const archived = await call('GET', '/profiles', a.id);
    assert.equal(archived.status, 404);
    assert.equal(archived.body.code, 'project_not_found');
    assert.equal((await call('GET', '/profiles', undefined, undefined, key.key)).status, 404);
    await kernel.projects.update(a.id, { status: 'active' });
  });

  test('the default project and the last one cannot go; an empty project is deleted', async () => {
    const def = (await kernel.projects.list({ name: 'default' })).items[0]!;
    const r = await call('DELETE', `/org/projects/${def.id}`);
    assert.equal(r.status, 409);
    assert.equal(r.body.code, 'last_active_project');
    assert.equal((await call('PATCH', `/org/projects/${def.id}`, undefined, { status: 'archived' })).status, 409);
    const empty = await kernel.projects.create({ name: 'empty' });
    await kernel.projects.delete(empty.id);
    await assert.rejects(kernel.projects.retrieve(empty.id), (err: { status?: number }) => err.status === 404);
    assert.equal((await call('GET', '/profiles', empty.id)).status, 404);
  });

  test('limits: concurrent creates beyond a project cap get 429 with Retry-After, never a 5xx; pools reserve their size', async () => {
    const capped = await kernel.projects.create({ name: 'capped' });
    cleanup.push(() => kernel.projects.delete(capped.id));
    assert.deepEqual(await kernel.projects.limits.retrieve(capped.id), {
      max_concurrent_sessions: null,
      max_concurrent_invocations: null,
      max_pooled_sessions: null,
    });
    const limits = await kernel.projects.limits.update(capped.id, { max_concurrent_sessions: 2 });
    assert.equal(limits.max_concurrent_sessions, 2);
    const answers = await Promise.all(Array.from({ length: 6 }, () => call('POST', '/browsers', capped.id, { headless: true })));
    for (const a of answers) if (a.status === 200) cleanup.push(() => call('DELETE', `/browsers/${a.body.session_id}`, capped.id));
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [200, 200, 429, 429, 429, 429]);
    for (const a of answers.filter((x) => x.status === 429)) {
      assert.equal(a.body.code, 'rate_limit_exceeded');
      assert.ok(Number(a.headers.get('retry-after')) > 0);
    }
    // A pool reserves its size: one more browser is over the cap.
    const pool = await call('POST', '/browser_pools', capped.id, { size: 1, headless: true });
    assert.equal(pool.status, 429);
    // 0 removes the cap.
    assert.equal((await kernel.projects.limits.update(capped.id, { max_concurrent_sessions: 0 })).max_concurrent_sessions, null);
    const more = await call('POST', '/browsers', capped.id, { headless: true });
    assert.equal(more.status, 200);
    cleanup.push(() => call('DELETE', `/browsers/${more.body.session_id}`, capped.id));
    // A cap lowered below what runs: a pool's browser is not handed out (acquire), 429 at once.
    const capless = await call('POST', '/browser_pools', capped.id, { size: 1, headless: true });
    assert.equal(capless.status, 200);
    cleanup.push(() => call('DELETE', `/browser_pools/${capless.body.id}?force=true`, capped.id));
    await kernel.projects.limits.update(capped.id, { max_concurrent_sessions: 1 });
    const acquire = await call('POST', `/browser_pools/${capless.body.id}/acquire`, capped.id, { acquire_timeout_seconds: 1 });
    assert.equal(acquire.status, 429, JSON.stringify(acquire.body));
    assert.equal(acquire.body.code, 'rate_limit_exceeded');
    assert.equal((await call('PATCH', `/org/projects/${capped.id}/limits`, undefined, { max_pooled_sessions: 3 })).status, 400);
  });

  test("the organization's default cap applies to projects without their own, and cannot exceed the organization's limit", async () => {
    const org = await kernel.organization.limits.retrieve();
    assert.ok(org.max_concurrent_sessions! >= 1);
    assert.equal(org.default_project_max_concurrent_sessions, null);
    const tooMuch = await call('PATCH', '/org/limits', undefined, { default_project_max_concurrent_sessions: org.max_concurrent_sessions! + 1 });
    assert.equal(tooMuch.status, 400);
    await kernel.organization.limits.update({ default_project_max_concurrent_sessions: 1 });
    cleanup.push(() => kernel.organization.limits.update({ default_project_max_concurrent_sessions: 0 }));
    const p = await kernel.projects.create({ name: 'defaulted' });
    cleanup.push(() => kernel.projects.delete(p.id));
    const first = await call('POST', '/browsers', p.id, { headless: true });
    assert.equal(first.status, 200);
    cleanup.push(() => call('DELETE', `/browsers/${first.body.session_id}`, p.id));
    assert.equal((await call('POST', '/browsers', p.id, { headless: true })).status, 429);
  });

  test("the organization's own limit (RBROWSE_ORG_MAX_SESSIONS) holds across its projects", async () => {
    const small = await startTestDaemon({ env: { RBROWSE_ORG_MAX_SESSIONS: '1' } });
    try {
      const k = new Kernel({ apiKey: small.apiKey, baseURL: small.baseUrl, maxRetries: 0 });
      assert.equal((await k.organization.limits.retrieve()).max_concurrent_sessions, 1);
      const other = await k.projects.create({ name: 'second' });
      const first = await k.browsers.create({ headless: true });
      const refused = await fetch(`${small.baseUrl}/browsers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${small.apiKey}`, 'content-type': 'application/json', 'x-kernel-project-id': other.id },
        body: JSON.stringify({ headless: true }),
      });
      assert.equal(refused.status, 429, await refused.text());
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
      await k.browsers.deleteByID(first.session_id);
    } finally {
      await small.stop();
    }
  });

  test('the CLI: projects and limits commands; --project and KERNEL_PROJECT take a name or an id', async () => {
    const made = await d.cli(['projects', 'create', '--name', 'cli-project', '--json']);
    assert.equal(made.exitCode, 0, made.stderr);
    const project = JSON.parse(made.stdout) as { id: string };
    const created = await d.cli(['--project', 'cli-project', 'create', '--headless', '-q']);
    assert.equal(created.exitCode, 0, created.stderr);
    const id = created.stdout.trim();
    assert.equal((await d.cli(['--project', 'cli-project', 'ls', '-q'])).stdout.trim(), id);
    assert.equal((await d.cli(['ls', '-q'], { env: { KERNEL_PROJECT: project.id } })).stdout.trim(), id);
    assert.ok(!(await d.cli(['ls', '-q'])).stdout.includes(id));
    const set = await d.cli(['projects', 'limits', 'set', 'cli-project', '--max-concurrent-sessions', '1', '--json']);
    assert.equal(JSON.parse(set.stdout).max_concurrent_sessions, 1);
    const refused = await d.cli(['--project', 'cli-project', 'create', '--headless']);
    assert.notEqual(refused.exitCode, 0);
    assert.match(refused.stderr, /rate_limit_exceeded|limit/);
    assert.equal((await d.cli(['--project', 'cli-project', 'rm', id])).exitCode, 0);
    assert.equal((await d.cli(['projects', 'delete', 'cli-project'])).exitCode, 0);
    const org = await d.cli(['limits', 'get', '--json']);
    assert.equal(org.exitCode, 0, org.stderr);
    assert.ok(JSON.parse(org.stdout).max_concurrent_sessions >= 1);
  });
});
