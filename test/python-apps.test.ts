import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Kernel, { toFile } from '@onkernel/sdk';
import { deployFixtureApp } from './helpers/apps.js';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { zipOf } from './helpers/zip.js';

// Python apps written with Kernel's own `kernel.App` framework (fixtures/apps/python-sample), deployed
// and invoked as JavaScript ones are: the same routes, the same box, Kernel's Python SDK inside.
describe('Python apps', () => {
  let d: TestDaemon;
  let kernel: Kernel;
  let deployment: string;

  before(async () => {
    d = await startTestDaemon();
    kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0, timeout: 180_000 });
    deployment = await deployFixtureApp(kernel, 'python-sample', { PY_GREETING: 'hello from python' }, 'main.py');
  });
  after(async () => {
    await d?.stop();
  });

  test('a main.py deploys: its build says which SDK it uses, its app and actions are listed', async () => {
    const logs: string[] = [];
    for await (const e of await kernel.deployments.follow(deployment)) if (e.event === 'log') logs.push(e.message);
    assert.ok(logs.includes('no dependencies to install'), logs.join(' | '));
    assert.ok(logs.includes('using the daemon’s Kernel Python SDK'), logs.join(' | '));
    assert.ok(logs.includes('loading main.py'), logs.join(' | '));
    assert.ok(!logs.includes('run by hand: not by the daemon'), 'the entrypoint is not run as __main__');
    const apps = (await d.api('GET', '/apps?app_name=py-sample')).body;
    assert.equal(apps.length, 1);
    assert.deepEqual(
      apps[0].actions.map((a: { name: string }) => a.name),
      ['echo', 'greet', 'log', 'fail', 'browser'],
    );
    assert.equal((await kernel.deployments.retrieve(deployment)).entrypoint_rel_path, 'main.py');
  });

  test('actions run: payload and context in, JSON out, async handlers, env vars, logs, a raise is a failure', { timeout: 300_000 }, async () => {
    const invoke = (action_name: string, payload?: unknown) =>
      kernel.invocations.create({
        app_name: 'py-sample',
        version: 'latest',
        action_name,
        ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
      });
    const echo = await invoke('echo', { a: [1, 'two'] });
    assert.equal(echo.status, 'succeeded', echo.status_reason ?? '');
    assert.deepEqual(JSON.parse(echo.output!), { payload: { a: [1, 'two'] }, invocation_id: echo.id });

    const greet = await invoke('greet', { name: 'ada' });
    assert.equal(greet.status, 'succeeded', greet.status_reason ?? '');
    assert.deepEqual(JSON.parse(greet.output!), { greeting: 'hello from python', name: 'ada' });

    const log = await kernel.invocations.create({ app_name: 'py-sample', version: 'latest', action_name: 'log', async: true });
    const lines: string[] = [];
    let final: string | undefined;
    for await (const e of await kernel.invocations.follow(log.id)) {
      if (e.event === 'log') lines.push(e.message);
      if (e.event === 'invocation_state') final = e.invocation.status;
    }
    assert.equal(final, 'succeeded');
    assert.ok(lines.includes('py stdout line') && lines.includes('py stderr line'), lines.join(' | '));
    assert.equal((await kernel.invocations.retrieve(log.id)).output ?? undefined, undefined, 'None is no output');

    const fail = await invoke('fail');
    assert.equal(fail.status, 'failed');
    assert.equal(fail.status_reason, 'the python action failed on purpose');
  });

  test("an action drives the daemon with Kernel's Python SDK: a browser tied to its invocation", { timeout: 300_000 }, async () => {
    const r = await kernel.invocations.create({ app_name: 'py-sample', version: 'latest', action_name: 'browser' });
    assert.equal(r.status, 'succeeded', r.status_reason ?? '');
    const out = JSON.parse(r.output!) as { session_id: string; listed: boolean };
    assert.equal(out.listed, true);
    // The browser was created for the invocation and deleted by the action.
    assert.equal((await d.api('GET', `/browsers/${out.session_id}`)).status, 404);
  });

  test('a Python entrypoint that registers nothing, or fails at import, fails its deployment with the reason', { timeout: 300_000 }, async () => {
    for (const [source, reason] of [
      ['print("no app here")\n', /^main\.py registers no apps: create one with kernel\.App\(name\)/],
      ['import kernel\nraise RuntimeError("boom at import")\n', /^the entrypoint failed to load: boom at import/],
    ] as const) {
      const created = await kernel.deployments.create({
        file: await toFile(await zipOf([{ name: 'main.py', data: source }]), 'app.zip'),
        entrypoint_rel_path: 'main.py',
      });
      let dep = await kernel.deployments.retrieve(created.id);
      for await (const e of await kernel.deployments.follow(created.id)) if (e.event === 'deployment_state') dep = e.deployment as never;
      assert.equal(dep.status, 'failed');
      assert.match(dep.status_reason ?? '', reason);
    }
  });
});
