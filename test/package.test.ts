/**
 * rbrowse as its users install it: `npm pack` of a fresh clone, then `npm i -D <tarball>` in a
 * project of their own (npx rbrowse, and `rbrowse/playwright` under the project's own Playwright
 * Test, 1.45 and the newest, CommonJS and ESM), and `npm i -g <tarball>` as a user who is not
 * root, from a directory with no clone around. Each daemon these start has a home of its own and
 * is stopped at the end.
 */
import assert from 'node:assert/strict';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { execa } from 'execa';
import { VERSION } from '../src/version.js';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { callApi, cleanEnv, waitFor } from './helpers/daemon.js';
import { freshProject, npmInstall, packFreshClone } from './helpers/package.js';

/** A uid with no account here, as a user's would be to this machine's root. */
const USER = 4242;

let work: string;
let tarball: string;
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'rbrowse-package-'));
  // Readable by the user below, who installs it.
  await chmod(work, 0o755);
  tarball = await packFreshClone(work);
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

/** The environment a user's shell has: the machine's own (PATH, npm's CA settings), nothing of rbrowse's or Kernel's. */
function userEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  const env = cleanEnv(home);
  delete env.NODE_OPTIONS;
  // `npm test` puts this checkout's node_modules/.bin (its Node 24) first on PATH; a user's shell has none of it.
  env.PATH = (env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.includes('/node_modules/.bin'))
    .join(':');
  return { ...env, ...extra };
}

/** Stops the daemon of `home` through `cli`, then checks that nothing of it is left. */
async function stopDaemon(cli: string[], env: Record<string, string>, home: string): Promise<void> {
  await execa(cli[0]!, [...cli.slice(1), 'daemon', 'stop'], { env, extendEnv: false, reject: false, cwd: '/' });
  await waitFor(async () => (await findMarkedProcesses(home)).length === 0, 20_000, `the processes of ${home} to end`);
}

test('the tarball holds the built CLI, the fixture and the box runtime, and no tests, fixtures or sources', async () => {
  const list = (await execa('tar', ['tzf', tarball])).stdout.split('\n').map((f) => f.replace(/^package\//, ''));
  for (const file of [
    'bin/rbrowse',
    'bin/install-node.cjs',
    'dist/cli.js',
    'dist/daemon.js',
    'dist/cdp-relay.js',
    'dist/playwright.js',
    'dist/playwright.cjs',
    'dist/playwright.d.ts',
    'daemon/box/agent.mjs',
    'daemon/apps/harness.py',
    'README.md',
    'LICENSE',
  ]) {
    assert.ok(list.includes(file), `${file} is in the tarball`);
  }
  const unwanted = list.filter(
    (f) => /^(test|fixtures|bench|src|cli|\.ci)\//.test(f) || /\.ts$/.test(f.replace(/\.d\.ts$/, '')) || f.endsWith('.map'),
  );
  assert.deepEqual(unwanted, []);
  const pkg = JSON.parse((await execa('tar', ['xzOf', tarball, 'package/package.json'])).stdout);
  assert.equal(pkg.private, undefined, 'publishable');
  assert.equal(pkg.name, 'rbrowse');
  assert.equal(pkg.license, 'MIT');
  assert.ok(pkg.engines?.node, 'engines.node');
  assert.equal(pkg.dependencies.node, undefined, 'no dependency on the node package, which would take over the project');
  assert.equal(pkg.peerDependencies['@playwright/test'], '>=1.45');
});

describe('npm i -D <tarball> in a project of its own', () => {
  let project: string;
  let home: string;
  let env: Record<string, string>;
  before(async () => {
    project = await freshProject();
    home = await mkdtemp(join(tmpdir(), 'rbrowse-user-home-'));
    env = userEnv(home);
    await npmInstall(project, ['-D', tarball, '@playwright/test@1.45.3'], env);
  });
  after(async () => {
    await stopDaemon([join(project, 'node_modules/.bin/rbrowse')], env, home);
    await rm(project, { recursive: true, force: true });
    await rm(home, { recursive: true, force: true });
  });

  test("npx rbrowse works from the project and below it, and the project's own scripts stay on the machine's Node", async () => {
    const machineNode = (await execa('node', ['--version'], { env, extendEnv: false })).stdout.trim();
    // npm puts node_modules/.bin first on a script's PATH: a `node` there would take the project over.
    await execa('npm', ['pkg', 'set', 'scripts.which-node=node --version'], { cwd: project, env, extendEnv: false });
    const viaScript = await execa('npm', ['run', '--silent', 'which-node'], { cwd: project, env, extendEnv: false });
    assert.equal(viaScript.stdout.trim(), machineNode);
    const viaNpx = await execa('npx', ['node', '--version'], { cwd: project, env, extendEnv: false });
    assert.equal(viaNpx.stdout.trim(), machineNode);

    await mkdir(join(project, 'src', 'deep'), { recursive: true });
    for (const cwd of [project, join(project, 'src', 'deep')]) {
      const version = await execa('npx', ['rbrowse', '--version'], { cwd, env, extendEnv: false });
      assert.equal(version.stdout.trim(), VERSION);
    }
    const created = await execa('npx', ['rbrowse', 'create', '--headless', '--json'], { cwd: project, env, extendEnv: false, reject: false });
    assert.equal(created.exitCode, 0, created.stderr);
    const session = JSON.parse(created.stdout);
    // A Playwright run in the session's own box loads Playwright from the project's hoisted node_modules.
    const ran = await execa(
      'npx',
      ['rbrowse', 'playwright', session.session_id, "await page.setContent('<h1>from a project</h1>'); return await page.textContent('h1');"],
      {
        cwd: project,
        env,
        extendEnv: false,
        reject: false,
      },
    );
    assert.equal(ran.exitCode, 0, ran.stderr);
    assert.match(ran.stdout, /from a project/);
    const removed = await execa('npx', ['rbrowse', 'rm', '--all'], { cwd: project, env, extendEnv: false, reject: false });
    assert.equal(removed.exitCode, 0, removed.stderr);
    assert.match(removed.stdout, new RegExp(session.session_id));
  });

  /** Runs `npx playwright test` in the project: its summary line and exit code. */
  async function playwrightTest(extraEnv: Record<string, string> = {}): Promise<{ exitCode: number; output: string }> {
    const r = await execa('npx', ['playwright', 'test', '--reporter=line'], {
      cwd: project,
      env: { ...env, ...extraEnv },
      extendEnv: false,
      reject: false,
      timeout: 300_000,
    });
    return { exitCode: r.exitCode ?? -1, output: `${r.stdout}\n${r.stderr}` };
  }

  const spec = `import { test, expect } from 'rbrowse/playwright';

test('a page on rbrowse', async ({ page, rbrowseSession }) => {
  await page.setContent('<title>rbrowse</title><h1>Hello</h1>');
  await expect(page).toHaveTitle('rbrowse');
  await expect(page.locator('h1')).toHaveText('Hello');
  // The options in use reached the session.
  expect(rbrowseSession.viewport).toMatchObject({ width: 1024, height: 768 });
  expect(rbrowseSession.stealth).toBe(true);
  expect(rbrowseSession.headless).toBe(true);
});
`;
  const config = `import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: './tests',
  use: { rbrowse: { viewport: { width: 1024, height: 768 }, stealth: true } },
});
`;

  test('rbrowse/playwright runs under the project’s @playwright/test 1.45.3 (CommonJS), finding and starting the daemon by itself', async () => {
    await mkdir(join(project, 'tests'), { recursive: true });
    await writeFile(join(project, 'tests', 'example.spec.ts'), spec);
    await writeFile(join(project, 'playwright.config.ts'), config);
    // No daemon runs and no KERNEL_* is set: the fixture starts the daemon of RBROWSE_HOME.
    await stopDaemon([join(project, 'node_modules/.bin/rbrowse')], env, home);
    const run = await playwrightTest();
    assert.equal(run.exitCode, 0, run.output);
    assert.match(run.output, /1 passed/);
    const ended = (
      await callApi(
        JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')).base_url,
        'GET',
        '/browsers?status=deleted',
        undefined,
        (await readFile(join(home, 'credentials', 'api-key'), 'utf8')).trim(),
      )
    ).body;
    assert.ok(
      ended.some((s: { viewport?: { width: number } }) => s.viewport?.width === 1024),
      'the worker’s session was on this daemon and has ended',
    );
  });

  test('rbrowse/playwright runs under the newest @playwright/test in an ESM project, and honours KERNEL_BASE_URL of a daemon elsewhere', async () => {
    await execa('npm', ['pkg', 'set', 'type=module'], { cwd: project, env, extendEnv: false });
    const newest = JSON.parse(await readFile(new URL('../node_modules/@playwright/test/package.json', import.meta.url), 'utf8')).version as string;
    await npmInstall(project, ['-D', `@playwright/test@${newest}`], env);
    // A second daemon, on a port of its own, named by the environment: the fixture uses it and not the local one.
    const other = await mkdtemp(join(tmpdir(), 'rbrowse-user-home-'));
    const otherEnv = userEnv(other);
    const cli = join(project, 'node_modules/.bin/rbrowse');
    const started = await execa(cli, ['daemon', 'start'], { env: otherEnv, extendEnv: false });
    const baseUrl = started.stdout.trim();
    const key = (await execa(cli, ['auth', 'token'], { env: otherEnv, extendEnv: false })).stdout.trim();
    try {
      const run = await playwrightTest({ KERNEL_BASE_URL: baseUrl, KERNEL_API_KEY: key });
      assert.equal(run.exitCode, 0, run.output);
      assert.match(run.output, /1 passed/);
      assert.equal((await callApi(baseUrl, 'GET', '/browsers?status=deleted', undefined, key)).body.length, 1);
    } finally {
      await stopDaemon([cli], otherEnv, other);
      await rm(other, { recursive: true, force: true });
    }
  });
});

test('npm i -g <tarball> as a user who is not root: rbrowse from any directory, no clone around', async () => {
  const base = await mkdtemp(join(tmpdir(), 'rbrowse-global-'));
  await chmod(base, 0o755);
  const home = join(base, 'home');
  const prefix = join(base, 'prefix');
  await mkdir(home);
  await mkdir(prefix);
  await chown(home, USER, USER);
  await chown(prefix, USER, USER);
  const env = userEnv(join(home, '.rbrowse'), { HOME: home });
  env.PATH = `${prefix}/bin:${env.PATH}`;
  delete env.RBROWSE_HOME;
  const asUser = (cmd: string, args: string[]) =>
    execa('setpriv', [`--reuid=${USER}`, `--regid=${USER}`, '--clear-groups', cmd, ...args], {
      env,
      extendEnv: false,
      reject: false,
      cwd: '/',
      timeout: 600_000,
    });
  try {
    const installed = await asUser('npm', [
      'install',
      '-g',
      '--prefix',
      prefix,
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      tarball,
    ]);
    assert.equal(installed.exitCode, 0, installed.stderr);
    const version = await asUser('rbrowse', ['--version']);
    assert.equal(version.stdout.trim(), VERSION);
    const started = await asUser('rbrowse', ['daemon', 'start']);
    assert.equal(started.exitCode, 0, started.stderr);
    // What a daemon that is not root cannot enforce is said at its start.
    assert.match(started.stderr, /not root/);
    const created = await asUser('rbrowse', ['create', '--headless', '--json']);
    assert.equal(created.exitCode, 0, created.stderr);
    const session = JSON.parse(created.stdout);
    const ran = await asUser('rbrowse', ['playwright', session.session_id, 'return 6 * 7']);
    assert.equal(ran.exitCode, 0, ran.stderr);
    assert.match(ran.stdout, /42/);
    const doctor = await asUser('rbrowse', ['doctor']);
    assert.match(doctor.stdout, /not root/);
  } finally {
    await asUser('rbrowse', ['daemon', 'stop']);
    await waitFor(async () => (await findMarkedProcesses(join(home, '.rbrowse'))).length === 0, 20_000, "the user's daemon to end");
    await rm(base, { recursive: true, force: true });
  }
});
