import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { Multipart } from '@fastify/multipart';
import Kernel from '@onkernel/sdk';
import { ZipArchive } from 'archiver';
import { execa } from 'execa';
import { appFiles, zipFiles } from '../cli/app-zip.js';
import { Deployments, imageOf } from '../daemon/apps/deployments.js';
import { EventLog } from '../daemon/lib/event-log.js';
import { sinceTime } from '../src/since-time.js';
import { appBaseEnv, harnessArgv } from '../daemon/apps/harness-command.js';
import { ProcessLauncher } from '../daemon/box/launcher.js';
import { findMarkedProcesses, isAlive } from '../daemon/lib/procs.js';
import { Boxes } from '../daemon/box/boxes.js';
import { ActionRun } from '../daemon/apps/action-run.js';
import { markerOf } from '../daemon/apps/invocations.js';
import { EventStream } from '../daemon/lib/sse.js';
import { Store } from '../daemon/lib/state/store.js';
import { ROOT, startTestDaemon, waitFor, type CliResult, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';

const SAMPLE = join(ROOT, 'fixtures', 'apps', 'sample');
const SAMPLE_ACTIONS = ['echo', 'throw', 'sleep', 'log', 'scratch', 'env', 'browser-title'];
const SETTLED = ['running', 'failed', 'stopped'];

/** A zip of the sample app, as `rbrowse deploy` would make it. */
async function sampleZip(): Promise<Buffer> {
  return zipFiles(SAMPLE, (await appFiles(SAMPLE)).files);
}

/** A zip of the given files (path -> content). */
async function zipOf(files: Record<string, string>): Promise<Buffer> {
  const archive = new ZipArchive();
  const chunks: Buffer[] = [];
  archive.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise((r) => archive.on('end', r));
  for (const [name, content] of Object.entries(files)) archive.append(content, { name });
  await archive.finalize();
  await ended;
  return Buffer.concat(chunks);
}

const zipFile = (zip: Buffer) => new File([new Uint8Array(zip)], 'app.zip', { type: 'application/zip' });

/** An app that registers one action (`ping`) under `name`; `extra` is appended to its module. */
const oneActionApp = (name: string, extra = '') =>
  `import Kernel from '@onkernel/sdk';\nconst app = new Kernel().app(${JSON.stringify(name)});\napp.action('ping', async (_ctx) => 'pong');\n${extra}\n`;

/** POST /deployments with a hand-made multipart form (for what the SDK would never send). */
async function postForm(d: TestDaemon, fields: Record<string, string | Blob>, key = d.apiKey) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v as never);
  const res = await fetch(`${d.baseUrl}/deployments`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  return { status: res.status, body: (await res.json()) as any };
}

async function settled(kernel: Kernel, id: string): Promise<Kernel.Deployments.DeploymentRetrieveResponse> {
  const dep = await waitFor(
    async () => {
      const dep = await kernel.deployments.retrieve(id);
      return SETTLED.includes(dep.status) ? dep : undefined;
    },
    180_000,
    `deployment ${id} to settle`,
  );
  return dep!;
}

async function followAll(kernel: Kernel, id: string): Promise<any[]> {
  const events: any[] = [];
  for await (const e of await kernel.deployments.follow(id)) events.push(e);
  return events;
}

/** Invokes an action of the sample app through the API, as a Kernel user would; its logs too. */
async function invoke(
  kernel: Kernel,
  action: string,
  payload?: unknown,
): Promise<{ status: string; output?: unknown; reason?: string; logs: string[] }> {
  const r = await kernel.invocations.create({
    app_name: 'sample',
    version: 'latest',
    action_name: action,
    ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
  });
  const done =
    r.status === 'running' || r.status === 'queued'
      ? await waitFor(
          async () => {
            const now = await kernel.invocations.retrieve(r.id);
            return now.status === 'succeeded' || now.status === 'failed' ? now : undefined;
          },
          120_000,
          `invocation ${r.id}`,
        )
      : r;
  const logs: string[] = [];
  for await (const e of await kernel.invocations.follow(r.id)) if ((e as any).event === 'log') logs.push((e as any).message);
  return { status: done!.status, output: done!.output ? JSON.parse(done!.output) : undefined, reason: done!.status_reason ?? undefined, logs };
}

/** Where a deployment's installed code is: its image, a box disk (mounted from /proc/mounts' point of view). */
async function imageDir(id: string): Promise<string | undefined> {
  const mounts = await readFile('/proc/mounts', 'utf8');
  const dir = mounts
    .split('\n')
    .map((l) => l.split(' ')[1]!)
    .find((m) => m?.endsWith(`-${imageOf(id)}`));
  return dir && `${dir}/app`;
}

describe('deployments over HTTP, the SDK and the CLI', () => {
  let d: TestDaemon;
  let kernel: Kernel;
  let sdkDeployment: string;

  before(async () => {
    d = await startTestDaemon({ env: { RBROWSE_APP_SPARE_BOXES: '1' } });
    kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
  });
  after(async () => {
    await d?.stop();
  });

  test('the SDK deploys the sample app; follow() streams logs, states and the app summary in order', async () => {
    const created = await kernel.deployments.create({
      file: zipFile(await sampleZip()),
      entrypoint_rel_path: 'index.ts',
      env_vars: { SAMPLE_GREETING: 'hello from the deploy' },
    });
    sdkDeployment = created.id;
    assert.match(created.id, /^[a-z0-9]{24}$/);
    assert.equal(created.status, 'queued');
    assert.equal(created.region, 'aws.us-east-1a');
    assert.equal(created.entrypoint_rel_path, 'index.ts');
    assert.deepEqual(created.env_vars, { SAMPLE_GREETING: '' }, 'values are redacted, keys shown');
    assert.match(created.source_checksum ?? '', /^[0-9a-f]{64}$/);

    const events = await followAll(kernel, created.id);
    const kinds = events.map((e) => (e.event === 'deployment_state' ? `state:${e.deployment.status}` : e.event));
    const at = (kind: string) => kinds.indexOf(kind);
    assert.equal(kinds[0], 'state:queued', kinds.join(' '));
    assert.ok(at('state:in_progress') > 0, kinds.join(' '));
    const messages = events.filter((e) => e.event === 'log').map((e) => e.message as string);
    for (const line of ['no dependencies to install', 'linked the daemon’s @onkernel/sdk into node_modules', 'loading index.ts']) {
      assert.ok(messages.includes(line), `log has "${line}": ${messages.join(' | ')}`);
    }
    const loading = events.findIndex((e) => e.event === 'log' && e.message === 'loading index.ts');
    assert.ok(at('state:in_progress') < loading, 'in_progress before loading');
    assert.ok(loading < at('app_version_summary'), 'the summary after loading');
    assert.equal(at('app_version_summary'), kinds.length - 2, 'the summary just before the final state');
    assert.equal(kinds.at(-1), 'state:running', 'the stream ends at running');
    const summary = events[at('app_version_summary')];
    assert.equal(summary.app_name, 'sample');
    assert.equal(summary.version, 'latest');
    assert.equal(summary.region, 'aws.us-east-1a');
    assert.deepEqual(
      summary.actions.map((a: any) => a.name),
      SAMPLE_ACTIONS,
    );
    for (const e of events) assert.ok(!Number.isNaN(Date.parse(e.timestamp)), `timestamp of ${e.event}`);

    const got = await kernel.deployments.retrieve(created.id);
    assert.equal(got.status, 'running');
    assert.deepEqual((got as any).app_names, ['sample']);
    assert.equal((got as any).version, 'latest');

    // A finished deployment's stream replays its history and ends.
    const replay = await followAll(kernel, created.id);
    assert.deepEqual(
      replay.map((e) => e.event),
      events.map((e) => e.event),
    );
    const sinceNow = [];
    for await (const e of await kernel.deployments.follow(created.id, { since: new Date(Date.now() + 60_000).toISOString() })) sinceNow.push(e);
    assert.deepEqual(
      sinceNow.map((e) => e.event),
      ['deployment_state', 'deployment_state', 'app_version_summary', 'deployment_state'],
      'since leaves out older log lines only',
    );
    const lastHour = await d.api('GET', `/deployments/${created.id}/events?since=1h30m`);
    assert.equal(lastHour.status, 200);
    assert.match(lastHour.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.match(lastHour.text, /^data: \{"event":"deployment_state"/);
    assert.match(lastHour.text, /"message":"loading index.ts"/);
    const badSince = await d.api('GET', `/deployments/${created.id}/events?since=yesterday`);
    assert.equal(badSince.status, 400);
    assert.match(badSince.body.message, /^since: /);
  });

  test('GET /apps lists the app, its actions and its deployment; lists filter and paginate', async () => {
    const apps = [];
    for await (const a of kernel.apps.list({ app_name: 'sample' })) apps.push(a);
    assert.equal(apps.length, 1);
    const [app] = apps;
    assert.equal(app!.deployment, sdkDeployment);
    assert.equal(app!.version, 'latest');
    assert.deepEqual(
      app!.actions.map((a) => a.name),
      SAMPLE_ACTIONS,
    );
    // Kernel's schemas of an action, null where it cannot make them (rbrowse reads no app's types).
    assert.deepEqual(
      app!.actions.map((a) => [(a as { input_schema?: unknown }).input_schema, (a as { output_schema?: unknown }).output_schema]),
      SAMPLE_ACTIONS.map(() => [null, null]),
    );
    assert.deepEqual(app!.env_vars, { SAMPLE_GREETING: '' });
    assert.deepEqual((await d.api('GET', '/apps?app_name=nope')).body, []);
    assert.deepEqual((await d.api('GET', '/apps?version=9.9.9')).body, []);

    const byApp = [];
    for await (const dep of kernel.deployments.list({ app_name: 'sample', app_version: 'latest' })) byApp.push(dep.id);
    assert.deepEqual(byApp, [sdkDeployment]);
    const page = await d.api('GET', '/deployments?limit=1');
    assert.equal(page.status, 200);
    assert.equal(page.body.length, 1);
    assert.equal(page.headers.get('x-has-more'), 'false');
    const noName = await d.api('GET', '/deployments?app_version=latest');
    assert.equal(noName.status, 400, 'app_version needs app_name');
    assert.match(noName.body.message, /app_version/);
  });

  test('actions of the deployed app run: echo returns its payload, a throw is an error, logs are stdout and stderr', async () => {
    const payload = { hello: 'world', n: [1, 2, 3] };
    const echo = await invoke(kernel, 'echo', payload);
    assert.equal(echo.status, 'succeeded', echo.reason);
    assert.deepEqual(echo.output, payload);

    const thrown = await invoke(kernel, 'throw', { message: 'nope' });
    assert.equal(thrown.status, 'failed');
    assert.equal(thrown.reason, 'nope');

    const logged = await invoke(kernel, 'log', { lines: 2 });
    assert.deepEqual(logged.output, { lines: 2 });
    assert.deepEqual([...logged.logs].sort(), ['stderr line 1', 'stderr line 2', 'stdout line 1', 'stdout line 2']);

    const env = await invoke(kernel, 'env', { name: 'HOME' });
    assert.deepEqual(env.output, { name: 'HOME', value: '/home/kernel' }, 'a home of its own');
  });

  test("an app's installed code is its boxes' alone: another local user cannot read it by its path", async () => {
    const file = join((await imageDir(sdkDeployment))!, 'package.json');
    const as = (uid: number) => execa('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'cat', file], { reject: false });
    // Control: the path is right (the daemon's user reads it).
    assert.match(await readFile(file, 'utf8'), /"name"/);
    const nobody = await as(65534);
    assert.notEqual(nobody.exitCode, 0, 'another local user is refused');
    assert.match(nobody.stderr, /Permission denied/);
    // Its invocations, users of their own, still read it.
    assert.equal((await invoke(kernel, 'echo', 'mine')).output, 'mine');
  });

  test('browser-title creates a browser through the daemon, reads a page title over CDP and deletes it', async () => {
    const pages = await startFixtureServer();
    try {
      const r = await invoke(kernel, 'browser-title', { url: `${pages.url}/hello.html` });
      assert.equal(r.status, 'succeeded', r.reason);
      const output = r.output as { title: string; session_id: string };
      assert.equal(output.title, 'rbrowse fixture');
      const session = await d.api('GET', `/browsers/${output.session_id}?include_deleted=true`);
      assert.ok(session.body.deleted_at, 'the action deleted its browser');
    } finally {
      await pages.close();
    }
  });

  test('rbrowse deploy zips the directory honouring .gitignore, follows the build and lists the app', async () => {
    const ignored = join(SAMPLE, 'scratch.local.txt');
    await writeFile(ignored, 'must not be deployed');
    const envFile = join(d.home, 'app.env');
    await writeFile(envFile, 'SAMPLE_GREETING=from the file\nOTHER="x y"\n');
    let out: CliResult;
    try {
      // A path relative to the working directory, as a user types it.
      const entry = relative(process.cwd(), join(SAMPLE, 'index.ts'));
      out = await d.cli(['deploy', entry, '--version', '1.0.0', '--env-file', envFile, '--env-var', 'SAMPLE_GREETING=hi']);
    } finally {
      await rm(ignored, { force: true });
    }
    assert.equal(out.exitCode, 0, out.stderr);
    const id = /deployment ([a-z0-9]{24}) queued/.exec(out.stdout)?.[1];
    assert.ok(id, out.stdout);
    assert.match(out.stdout, /loading index\.ts/);
    assert.match(out.stdout, /app sample \(version 1\.0\.0\): echo, throw, sleep, log, scratch, env, browser-title/);
    assert.match(out.stdout, new RegExp(`deployment ${id} running: sample \\(version 1\\.0\\.0\\)`));
    const dir = (await imageDir(id))!;
    assert.ok(existsSync(join(dir, 'index.ts')) && existsSync(join(dir, 'cdp.ts')), 'the app is unpacked');
    assert.ok(!existsSync(join(dir, 'scratch.local.txt')), 'the .gitignore’d file was not uploaded');

    const apps = await d.cli(['apps', 'list', '--app-name', 'sample']);
    assert.equal(apps.exitCode, 0, apps.stderr);
    assert.match(apps.stdout, /sample\s+1\.0\.0\s+echo, throw, sleep, log, scratch, env, browser-title/);
    assert.match(apps.stdout, /sample\s+latest/);
    const get = JSON.parse((await d.cli(['deployments', 'get', id, '--json'])).stdout);
    assert.equal(get.status, 'running');
    assert.deepEqual(get.env_vars, { SAMPLE_GREETING: '', OTHER: '' });
    const stored = JSON.parse(await readFile(join(d.home, 'state.json'), 'utf8')).deployments.find((x: any) => x.id === id);
    assert.deepEqual(stored.env_vars, { SAMPLE_GREETING: 'hi', OTHER: 'x y' }, '--env wins over --env-file');
    const ids = (await d.cli(['deployments', 'list', '-q', '--app-name', 'sample'])).stdout.trim().split('\n');
    assert.deepEqual(ids.slice(0, 2), [id, sdkDeployment], 'newest first');
    const events = await d.cli(['deployments', 'events', id]);
    assert.equal(events.exitCode, 0, events.stderr);
    assert.match(events.stdout, /loading index\.ts[\s\S]*app sample \(version 1\.0\.0\)/);
  });

  test('a new deploy of the same app and version replaces the old one; latest is the newest', async () => {
    const created = await kernel.deployments.create({ file: zipFile(await sampleZip()), entrypoint_rel_path: 'index.ts' });
    assert.equal((await settled(kernel, created.id)).status, 'running');
    const old = await kernel.deployments.retrieve(sdkDeployment);
    assert.equal(old.status, 'stopped');
    assert.equal(old.status_reason, `replaced by deployment ${created.id}`);
    await waitFor(() => !existsSync(join(d.home, 'apps', sdkDeployment)), 10_000, 'the old code to be removed');
    const latest = (await d.api('GET', '/apps?app_name=sample&version=latest')).body;
    assert.deepEqual(
      latest.map((a: any) => a.deployment),
      [created.id],
    );
    const v1 = (await d.api('GET', '/apps?app_name=sample&version=1.0.0')).body;
    assert.equal(v1.length, 1, 'another version label is not replaced');
    sdkDeployment = created.id;
  });

  test('bad uploads are refused at once with the field named', async () => {
    const zip = new Blob([new Uint8Array(await sampleZip())]);
    const cases: [Record<string, string | Blob>, RegExp][] = [
      [{ entrypoint_rel_path: 'index.ts' }, /^file: is required/],
      [{ file: zip }, /^entrypoint_rel_path: is required/],
      [{ file: new Blob(['not a zip at all']), entrypoint_rel_path: 'index.ts' }, /^file: not a readable zip archive/],
      [{ file: zip, entrypoint_rel_path: 'missing.ts' }, /^entrypoint_rel_path: missing\.ts is not a file in the zip \(its top level: .*index\.ts/],
      [{ file: zip, entrypoint_rel_path: '../index.ts' }, /^entrypoint_rel_path: may not contain \.\./],
      [{ file: zip, entrypoint_rel_path: '/index.ts' }, /^entrypoint_rel_path: must be relative/],
      [{ file: zip, entrypoint_rel_path: 'main.rb' }, /^entrypoint_rel_path: must be a JavaScript, TypeScript or Python file/],
      [{ file: zip, entrypoint_rel_path: 'index.ts', 'env_vars[1BAD]': 'x' }, /env_vars\.1BAD is not a known field/],
      [{ file: zip, entrypoint_rel_path: 'index.ts', region: 'eu-west-1' }, /region must be "aws\.us-east-1a"/],
      [{ file: zip, entrypoint_rel_path: 'index.ts', colour: 'blue' }, /colour is not a known field/],
      [
        {
          file: zip,
          entrypoint_rel_path: 'index.ts',
          source: JSON.stringify({ type: 'github', url: 'https://x.example/a', ref: 'main', entrypoint: 'index.ts' }),
        },
        /^source: give the app as a zip in `file` or as a `source`, not both/,
      ],
      [{ source: 'not json' }, /^source: must be a JSON object$/],
      [{ source: '{"type":"github"}' }, /source/],
      [{ source: JSON.stringify({ type: 'github', url: 'file:///etc', ref: 'main', entrypoint: 'index.ts' }) }, /source\.url/],
      [{ source: JSON.stringify({ type: 'github', url: 'https://x.example/a', ref: '--upload-pack=x', entrypoint: 'index.ts' }) }, /source\.ref/],
      [
        { source: JSON.stringify({ type: 'github', url: 'https://x.example/a', ref: 'main', entrypoint: 'index.ts', path: '../up' }) },
        /source\.path/,
      ],
      [{ file: zip, entrypoint_rel_path: 'index.ts', force: 'maybe' }, /force must be boolean/],
    ];
    for (const [fields, message] of cases) {
      const r = await postForm(d, fields);
      assert.equal(r.status, 400, `${JSON.stringify(Object.keys(fields))}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, 'bad_request');
      assert.match(r.body.message, message);
    }
    const json = await d.api('POST', '/deployments', { entrypoint_rel_path: 'index.ts' });
    assert.equal(json.status, 400);
    assert.match(json.body.message, /multipart\/form-data/);
    // The Go SDK's encoding of env_vars, and force as text, are accepted.
    const goStyle = await postForm(d, { file: zip, entrypoint_rel_path: 'index.ts', 'env_vars.GO_STYLE': '1', force: 'true', version: 'go' });
    assert.equal(goStyle.status, 200, JSON.stringify(goStyle.body));
    assert.deepEqual(goStyle.body.env_vars, { GO_STYLE: '' });
    assert.equal((await settled(kernel, goStyle.body.id)).status, 'running');
    assert.deepEqual(
      (await readdir(join(d.home, 'apps'))).filter((n) => n.startsWith('.upload')),
      [],
      'no upload left behind',
    );
  });

  test('builds that cannot work end failed with the reason, logged as an error event', async () => {
    const cases: [string, Record<string, string>, RegExp][] = [
      [
        'throws on import',
        { 'index.ts': oneActionApp('boom', "throw new Error('boom at import');") },
        /^the entrypoint failed to load: boom at import$/,
      ],
      ['no actions', { 'index.ts': "import Kernel from '@onkernel/sdk';\nnew Kernel().app('empty');\n" }, /^app empty registers no actions/],
      ['no apps', { 'index.ts': "console.log('just a script');\n" }, /^index\.ts registers no apps/],
      [
        'npm install fails',
        { 'index.ts': oneActionApp('npmfail'), 'package.json': '{"dependencies":{"missing-lib":"file:./missing-lib.tgz"}}' },
        /^npm install failed \(exit code \d+\): .*missing-lib\.tgz/,
      ],
      [
        'npm ci with a stale lockfile',
        {
          'index.ts': oneActionApp('cifail'),
          'package.json': '{"name":"cifail","dependencies":{"lib":"file:./lib"}}',
          'package-lock.json': '{"name":"cifail","lockfileVersion":3,"requires":true,"packages":{"":{"name":"cifail"}}}',
          'lib/package.json': '{"name":"lib","version":"1.0.0"}',
        },
        /^npm ci failed \(exit code \d+\): `npm ci` can only install packages when your package.json and package-lock.json/,
      ],
    ];
    for (const [what, files, reason] of cases) {
      const created = await kernel.deployments.create({ file: zipFile(await zipOf(files)), entrypoint_rel_path: 'index.ts' });
      const dep = await settled(kernel, created.id);
      assert.equal(dep.status, 'failed', what);
      assert.match(dep.status_reason ?? '', reason, what);
      const events = await followAll(kernel, created.id);
      const error = events.find((e) => e.event === 'error');
      assert.equal(error?.error.message, dep.status_reason, `${what}: an error event carries the reason`);
      assert.equal(events.at(-1)!.deployment.status, 'failed');
      assert.ok(!existsSync(join(d.home, 'apps', created.id)), `${what}: a failed deployment's code is removed`);
    }
    assert.deepEqual((await d.api('GET', '/deployments?query=boom')).body, [], 'a failed app never registered its name');
    const apps = (await d.api('GET', '/apps?limit=100')).body.map((a: any) => a.app_name);
    assert.ok(!apps.some((n: string) => ['boom', 'empty', 'npmfail', 'cifail'].includes(n)), apps.join());
  });

  test('dependencies are installed with npm: a local file dependency resolves in the app', async () => {
    const files = {
      'index.ts':
        "import Kernel from '@onkernel/sdk';\nimport { greet } from 'local-lib';\nconst app = new Kernel().app('withdeps');\napp.action('greet', async (_ctx) => greet());\n",
      'package.json': JSON.stringify({
        name: 'withdeps',
        type: 'module',
        dependencies: { 'local-lib': 'file:./local-lib' },
        scripts: { postinstall: 'node -e "console.log(\'postinstall on node \' + process.version)"' },
      }),
      'local-lib/package.json': '{"name":"local-lib","version":"1.0.0","main":"index.js"}',
      'local-lib/index.js': "exports.greet = () => 'hi from local-lib';\n",
    };
    const created = await kernel.deployments.create({ file: zipFile(await zipOf(files)), entrypoint_rel_path: 'index.ts' });
    const events = await followAll(kernel, created.id);
    assert.equal(events.at(-1)!.deployment.status, 'running', JSON.stringify(events.filter((e) => e.event !== 'log')));
    // The fetch (no scripts, no credentials needed here: a path dependency), then the build with the scripts.
    assert.ok(events.some((e) => e.event === 'log' && e.message.startsWith('$ npm install --ignore-scripts')));
    assert.ok(events.some((e) => e.event === 'log' && e.message.startsWith('$ npm rebuild')));
    assert.ok(
      events.some((e) => e.event === 'log' && e.message === `postinstall on node ${process.version}`),
      'npm and its scripts run on the daemon’s Node',
    );
    const r = await kernel.invocations.create({ app_name: 'withdeps', version: 'latest', action_name: 'greet' });
    assert.equal(r.status, 'succeeded', r.status_reason ?? undefined);
    assert.equal(r.output, '"hi from local-lib"');
    assert.equal((await d.api('DELETE', `/deployments/${created.id}`)).status, 204);
  });

  test('another organization sees none of it: 404 on every deployment route, empty lists', async () => {
    const other = (await d.cli(['auth', 'create-key', '--org', 'elsewhere'])).stdout.trim();
    for (const [method, path] of [
      ['GET', `/deployments/${sdkDeployment}`],
      ['GET', `/deployments/${sdkDeployment}/events`],
      ['DELETE', `/deployments/${sdkDeployment}`],
    ]) {
      const r = await d.api(method!, path!, undefined, other);
      assert.equal(r.status, 404, `${method} ${path}`);
      assert.equal(r.body.code, 'not_found');
    }
    assert.deepEqual((await d.api('GET', '/deployments', undefined, other)).body, []);
    assert.deepEqual((await d.api('GET', '/apps', undefined, other)).body, []);
    assert.equal((await kernel.deployments.retrieve(sdkDeployment)).status, 'running', 'untouched for its owner');
  });

  test('DELETE stops a deployment and removes its code; its app is gone from /apps', async () => {
    const created = await kernel.deployments.create({
      file: zipFile(await zipOf({ 'index.ts': oneActionApp('doomed') })),
      entrypoint_rel_path: 'index.ts',
    });
    assert.equal((await settled(kernel, created.id)).status, 'running');
    // Invoked once, it has a box started ahead for its next invocation (this daemon keeps one)...
    const ping = await kernel.invocations.create({ app_name: 'doomed', version: 'latest', action_name: 'ping' });
    assert.equal(ping.status, 'succeeded', ping.status_reason ?? '');
    // (the sample deployment, invoked by earlier tests, keeps one too)
    const spares = async () => (await d.api('GET', '/health', undefined, null)).body.app_spare_boxes;
    const kept = await waitFor(
      async () => {
        const s = await spares();
        return s.ready === s.deployments ? s : undefined;
      },
      240_000,
      'a box started ahead for doomed',
    );
    // The ping's own box ends by itself just after its answer, and its teardown runs processes of
    // its own (one may appear after the snapshot below): it is gone first.
    await waitFor(async () => (await findMarkedProcesses(d.home, markerOf(ping.id))).length === 0, 30_000, "the ping's box to end");
    const running = await findMarkedProcesses(d.home);
    await kernel.deployments.delete(created.id);
    // ...which goes with it: its processes end, the others' stay.
    await waitFor(async () => (await spares()).deployments === kept!.deployments - 1, 30_000, 'the box started ahead to stop');
    assert.equal((await spares()).ready, kept!.ready - 1);
    const left = await waitFor(
      async () => {
        const now = await findMarkedProcesses(d.home);
        return now.length < running.length ? now : undefined;
      },
      30_000,
      "the box's processes to end",
    );
    // A helper the teardown runs (an unmount, a cleanup) may come and go meanwhile: what must not
    // be is a process started then that stays.
    const started = left!.filter((pid) => !running.includes(pid));
    const staying = async () => (await Promise.all(started.map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')))).filter(Boolean);
    const stayed = await waitFor(async () => ((await staying()).length === 0 ? [] : undefined), 10_000, 'what the delete started to end').catch(
      async () => staying(),
    );
    assert.deepEqual(
      (stayed ?? []).map((c) => c.replaceAll('\0', ' ').trim()),
      [],
      'nothing new started that stays',
    );
    const dep = await kernel.deployments.retrieve(created.id);
    assert.equal(dep.status, 'stopped');
    assert.equal(dep.status_reason, 'deleted');
    assert.ok(!existsSync(join(d.home, 'apps', created.id)));
    assert.deepEqual((await d.api('GET', '/apps?app_name=doomed')).body, []);
    await kernel.deployments.delete(created.id); // already stopped: fine
    assert.equal((await d.api('DELETE', '/deployments/nosuchdeployment0000000')).status, 404);
  });

  test('a daemon that dies mid-build fails that build on restart; running deployments stay usable', async () => {
    const hang = { 'index.ts': `${oneActionApp('hangs')}\nawait new Promise((r) => setTimeout(r, 600_000));\n`, 'package.json': '{"type":"module"}' };
    const building = await kernel.deployments.create({ file: zipFile(await zipOf(hang)), entrypoint_rel_path: 'index.ts' });
    await waitFor(async () => (await findMarkedProcesses(d.home, imageOf(building.id))).length > 0, 60_000, 'the build to load the app');
    const pid = JSON.parse((await d.cli(['daemon', 'status', '--json'])).stdout).pid;
    process.kill(pid, 'SIGKILL');
    await waitFor(() => !isAlive(pid), 10_000, 'the daemon to die');
    // The launcher, alone, ends the boxes it started: nothing of the build outlives the daemon for long.
    await waitFor(async () => (await findMarkedProcesses(d.home)).length === 0, 20_000, 'the orphaned build to end');

    const started = await d.cli(['daemon', 'start']);
    assert.equal(started.exitCode, 0, started.stderr);
    d.baseUrl = started.stdout.trim();
    kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    assert.deepEqual(await findMarkedProcesses(d.home), [], 'the reaper killed the orphaned build');
    const failed = await kernel.deployments.retrieve(building.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.status_reason, 'the daemon restarted during the deployment');
    assert.ok(!existsSync(join(d.home, 'apps', building.id)));
    const replay = await followAll(kernel, building.id);
    assert.deepEqual(
      replay.map((e) => e.event),
      ['deployment_state'],
      'a replay of the final state, then the end',
    );

    assert.equal((await kernel.deployments.retrieve(sdkDeployment)).status, 'running');
    const apps = (await d.api('GET', '/apps?app_name=sample&version=latest')).body;
    assert.deepEqual(
      apps.map((a: any) => a.deployment),
      [sdkDeployment],
    );
    const afterRestart = await followAll(kernel, sdkDeployment);
    assert.deepEqual(
      afterRestart.map((e) => e.event),
      ['app_version_summary', 'deployment_state'],
    );
    const echo = await invoke(kernel, 'echo', 'still here');
    assert.deepEqual(echo.output, 'still here', 'its code survived the restart');

    // A graceful stop cancels a build too, and says so.
    const second = await kernel.deployments.create({ file: zipFile(await zipOf(hang)), entrypoint_rel_path: 'index.ts' });
    await waitFor(async () => (await findMarkedProcesses(d.home, imageOf(second.id))).length > 0, 60_000, 'the second build');
    const stop = await d.cli(['daemon', 'stop']);
    assert.equal(
      stop.exitCode,
      0,
      `${stop.stdout}\n${stop.stderr}\n${(await readFile(join(d.home, 'logs', 'daemon.log'), 'utf8')).split('\n').slice(-15).join('\n')}`,
    );
    assert.deepEqual(await findMarkedProcesses(d.home), [], 'the stop killed the build');
    assert.equal(await imageDir(sdkDeployment), undefined, "a running deployment's disk is unmounted at the stop");
    const state = JSON.parse(await readFile(join(d.home, 'state.json'), 'utf8'));
    const rec = state.deployments.find((x: any) => x.id === second.id);
    assert.equal(rec.status, 'failed');
    assert.equal(rec.status_reason, 'the daemon stopped during the deployment');
    const again = await d.cli(['daemon', 'start']);
    d.baseUrl = again.stdout.trim();
    kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    assert.deepEqual((await invoke(kernel, 'echo', 'back')).output, 'back', 'its code is back after the start');
  });
});

describe('Deployments.resolveAction against a real deployed app (in-process)', () => {
  let home: string;
  let deployments: Deployments;
  let launcher: ProcessLauncher;
  let boxes: Boxes;
  let store: Store;
  const org = { id: 'org-a', name: 'a', created_at: new Date().toISOString() };
  const otherOrg = { id: 'org-b', name: 'b', created_at: new Date().toISOString() };

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'rbrowse-deployments-'));
    launcher = new ProcessLauncher({ home, log: () => {} });
    boxes = await Boxes.create({ home, dir: join(home, 'boxes'), host: launcher, log: () => {} });
    store = await Store.open(join(home, 'state.json'));
    deployments = new Deployments({ store, dir: join(home, 'apps'), boxes, log: () => {} });
  });
  after(async () => {
    await deployments?.close();
    for (const id of (await boxes?.leftoverDisks()) ?? []) await boxes.dropDisk(id);
    await boxes?.close();
    launcher?.close();
    // The state file's last good copy is written after each change's answer: done before the home goes.
    await store?.flushed();
    await rm(home, { recursive: true, force: true });
  });

  /** The multipart parts the route hands over, as @fastify/multipart yields them. */
  async function* parts(zip: Buffer, fields: Record<string, string>): AsyncIterable<Multipart> {
    for (const [fieldname, value] of Object.entries(fields)) yield { type: 'field', fieldname, value } as unknown as Multipart;
    yield { type: 'file', fieldname: 'file', file: Readable.from([zip]) } as unknown as Multipart;
  }

  async function deploy(fields: Record<string, string>) {
    const created = await deployments.create(org, parts(await sampleZip(), { entrypoint_rel_path: 'index.ts', ...fields }));
    return waitFor(
      () => {
        const dep = deployments.get(org, created.id);
        return (SETTLED.includes(dep.status) ? dep : undefined)!;
      },
      180_000,
      'the in-process deployment',
    );
  }

  test('names what is missing: the app, the version, or the action (listing the actions)', async () => {
    const dep = await deploy({ version: '2.0.0', 'env_vars[SAMPLE_GREETING]': 'hello' });
    assert.equal(dep.status, 'running', dep.status_reason);
    const notFound = (fn: () => unknown, message: string) => assert.throws(fn, (e: any) => e.status === 404 && e.message === message);
    notFound(() => deployments.resolveAction(org, 'nope', 'latest', 'echo'), 'app nope not found');
    notFound(() => deployments.resolveAction(org, 'sample', '9.9', 'echo'), 'version 9.9 of app sample not found');
    notFound(
      () => deployments.resolveAction(org, 'sample', 'latest', 'fly'),
      'action fly not found in app sample (actions: echo, throw, sleep, log, scratch, env, browser-title)',
    );
    notFound(() => deployments.resolveAction(otherOrg, 'sample', 'latest', 'echo'), 'app sample not found');

    const resolved = deployments.resolveAction(org, 'sample', 'latest', 'echo');
    assert.deepEqual(resolved, {
      deployment_id: dep.id,
      app_name: 'sample',
      version: '2.0.0',
      action_name: 'echo',
      entrypoint_rel_path: 'index.ts',
      env_vars: { SAMPLE_GREETING: 'hello' },
    });
    assert.equal(deployments.resolveAction(org, 'sample', '2.0.0', 'echo').deployment_id, dep.id);
  });

  test('a held deployment keeps its code after it is replaced until the hold is released', async () => {
    const first = deployments.resolveAction(org, 'sample', '2.0.0', 'echo');
    const release = deployments.hold(first.deployment_id);
    const second = await deploy({ version: '2.0.0' });
    assert.equal(second.status, 'running');
    assert.equal(deployments.get(org, first.deployment_id).status, 'stopped');
    const image = boxes.diskDir(imageOf(first.deployment_id));
    assert.ok(existsSync(join(image, 'app', 'index.ts')), 'held code stays');
    const run = await ActionRun.start({
      boxes,
      id: `test-run-${Date.now()}`,
      image: await deployments.image(first.deployment_id),
      argv: harnessArgv('run', 'index.ts', 'sample', 'echo'),
      env: { ...appBaseEnv(), KERNEL_API_KEY: 'k', RBROWSE_PAYLOAD: '[1]' },
      onLog: () => {},
    });
    assert.deepEqual(await run.outcome, { status: 'succeeded', output: '[1]' });
    await run.stop();
    release();
    release(); // idempotent
    await waitFor(() => !existsSync(image), 10_000, 'the released code to be removed');
    assert.equal(deployments.resolveAction(org, 'sample', 'latest', 'echo').deployment_id, second.id);
  });
});

describe('EventLog and since (pure)', () => {
  /** What a follower of `log` receives: the replay (the log is finished, so the stream ends). */
  async function replay(log: EventLog, since?: number): Promise<any[]> {
    const stream = new EventStream();
    const body = stream.open({ header: () => undefined, raw: { once: () => undefined } } as never);
    log.follow(stream, since);
    let text = '';
    for await (const chunk of body) text += chunk;
    return text
      .split('\n\n')
      .filter(Boolean)
      .map((block) => JSON.parse(block.replace(/^data: /, '')));
  }
  const logEvent = (message: string, timestamp = new Date().toISOString()) => ({ event: 'log', message, timestamp });

  test('keeps the newest log lines within maxEvents and maxChars; other events stay', async () => {
    const log = new EventLog({ maxEvents: 5, maxChars: 1000 });
    log.push({ event: 'deployment_state', n: 1 });
    for (let i = 0; i < 10; i++) log.push(logEvent(`line ${i}`));
    log.push({ event: 'deployment_state', n: 2 });
    log.finish();
    const got = await replay(log);
    assert.deepEqual(
      got.map((e) => e.message ?? e.n),
      [1, 'line 7', 'line 8', 'line 9', 2],
    );

    const chars = new EventLog({ maxChars: 25 });
    for (let i = 0; i < 5; i++) chars.push(logEvent(`${i}`.repeat(10)));
    chars.finish();
    assert.deepEqual(
      (await replay(chars)).map((e) => e.message),
      ['3333333333', '4444444444'],
    );
  });

  test('since: RFC 3339 or a duration ago; log lines before it are left out; anything else is a 400', async () => {
    const now = Date.parse('2030-01-01T12:00:00Z');
    assert.equal(sinceTime('1h30m', now), now - 90 * 60_000);
    assert.equal(sinceTime('500ms', now), now - 500);
    assert.equal(sinceTime('2030-01-01T11:00:00Z', now), now - 3_600_000);
    assert.equal(sinceTime(undefined, now), undefined);
    assert.throws(
      () => sinceTime('yesterday', now),
      (e: any) => e.status === 400 && /^since: /.test(e.message),
    );
    const log = new EventLog();
    log.push(logEvent('old', '2030-01-01T10:00:00Z'));
    log.push({ event: 'deployment_state', timestamp: '2030-01-01T10:00:01Z' });
    log.push(logEvent('new', '2030-01-01T11:30:00Z'));
    log.finish();
    assert.deepEqual(
      (await replay(log, sinceTime('1h', now))).map((e) => e.message ?? e.event),
      ['deployment_state', 'new'],
    );
  });
});
