/**
 * App deploys use the npm of the daemon's user: a lockfile pinning a package of a private HTTPS
 * registry (a stand-in on 127.0.0.1, with a throwaway CA that only the user's npmrc trusts, and a
 * token it asks for) installs, and fails with the certificate named once the npmrc no longer
 * trusts that CA; the token never reaches the app's code or its install scripts (which look for
 * it everywhere they can, with controls they must find); with the registry out of reach, the
 * lockfile's packages come from npm's cache and @onkernel/sdk from the daemon's own copy, and a
 * package neither has fails the deploy with one line naming it.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Kernel, { toFile } from '@onkernel/sdk';
import { execa } from 'execa';
import * as tar from 'tar';
import { appFiles, zipFiles } from '../cli/app-zip.js';
import { throwawayCa } from './helpers/throwaway-ca.js';
import { startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

const TOKEN = `rbrowse-test-token-${randomBytes(12).toString('hex')}`;
const CONTROL = `rbrowse-control-${randomBytes(6).toString('hex')}`;
const DEP = 'rbrowse-fixture-dep';

/** A one-package registry over HTTPS that answers only requests with the token. */
async function privateRegistry(dir: string, tls: { key: string; cert: string }) {
  const pkgDir = join(dir, 'pkg', 'package');
  await mkdir(pkgDir, { recursive: true });
  await writeFile(join(pkgDir, 'package.json'), JSON.stringify({ name: DEP, version: '1.0.0', main: 'index.js' }));
  await writeFile(join(pkgDir, 'index.js'), "module.exports = 'fixture-dep-ok';\n");
  const tgz = join(dir, 'dep.tgz');
  await tar.create({ gzip: true, cwd: join(dir, 'pkg'), file: tgz, portable: true }, ['package']);
  const tarball = await readFile(tgz);
  const integrity = `sha512-${createHash('sha512').update(tarball).digest('base64')}`;
  const seen: { url: string; authorized: boolean }[] = [];
  let base = '';
  const server: Server = createServer(tls, (req, res) => {
    const authorized = req.headers.authorization === `Bearer ${TOKEN}`;
    seen.push({ url: req.url ?? '', authorized });
    if (!authorized) return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
    if (req.url === `/${DEP}`) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(
        JSON.stringify({
          name: DEP,
          'dist-tags': { latest: '1.0.0' },
          versions: { '1.0.0': { name: DEP, version: '1.0.0', dist: { tarball: `${base}/${DEP}/-/${DEP}-1.0.0.tgz`, integrity } } },
        }),
      );
    }
    if (req.url === `/${DEP}/-/${DEP}-1.0.0.tgz`) return void res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(tarball);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, integrity, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/**
 * The app's way of looking for the token: its environment, every process's environment and
 * command line it can read, and every file below the places a box has. It reports the controls
 * too: what it must find (a marker in its environment and in one of its files) to show it looks.
 */
const SCAN = `import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
/** Everything it can read: [where, text]. */
function readable() {
  const out = [['env', JSON.stringify(process.env)]];
  const walk = (dir, depth) => {
    let entries;
    try { entries = readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      const p = join(dir, e.name);
      if (e.isDirectory() && depth < 12) walk(p, depth + 1);
      else if (e.isFile()) {
        try { if (statSync(p).size > 8 * 1024 * 1024 || p.endsWith('install-dump.json')) continue; out.push([p, readFileSync(p, 'latin1')]); } catch {}
      }
    }
  };
  for (const dir of ['/app', '/home', '/tmp', '/etc', '/run', '/dev/shm', '/var', '/opt/rbrowse/etc']) walk(dir, 0);
  for (const pid of readdirSync('/proc').filter((d) => /^\\d+$/.test(d))) {
    for (const f of ['environ', 'cmdline']) { try { out.push(['/proc/' + pid + '/' + f, readFileSync('/proc/' + pid + '/' + f, 'latin1')]); } catch {} }
  }
  return out;
}
/** What the install saw, kept for the action to search: the install is never told what to look for. */
export function dumpInstall() { writeFileSync('install-dump.json', JSON.stringify(readable())); }
// Each needle comes in two halves, so that the action's own payload (in its environment) does not hold it whole.
const search = (seen, halves) => { const needles = halves.map((h) => h.join('')); return searchWhole(seen, needles); };
const searchWhole = (seen, needles) => ({ files: seen.length, hits: Object.fromEntries(needles.map((n) => [n, seen.filter(([, t]) => t.includes(n)).map(([w]) => w)])) });
export function scan(needles) {
  return { install: search(JSON.parse(readFileSync('install-dump.json', 'utf8')), needles), now: search(readable(), needles) };
}
`;

function appFilesFor(opts: { lock: object; deps: Record<string, string> }): Record<string, string> {
  return {
    'package.json': JSON.stringify(
      {
        name: 'npm-app',
        version: '1.0.0',
        type: 'module',
        dependencies: opts.deps,
        // Runs in the build, after the fetch: it must not find the token, and must find its control.
        scripts: { postinstall: 'node -e "import(\'./scan.mjs\').then((m) => m.dumpInstall())"' },
      },
      null,
      2,
    ),
    'package-lock.json': JSON.stringify(opts.lock, null, 2),
    // The app's own setting: set aside during the fetch, back for its scripts (npm passes it to them as npm_config_rbrowse_control).
    '.npmrc': `rbrowse-control=${CONTROL}\n`,
    'control.txt': `${CONTROL}\n`,
    'scan.mjs': SCAN,
    'index.mjs': `import Kernel from '@onkernel/sdk';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { scan } from './scan.mjs';
const require = createRequire(import.meta.url);
const app = new Kernel().app('npm-app');
app.action('deps', async (_ctx) => Object.fromEntries(${JSON.stringify(Object.keys(opts.deps))}.map((d) => [d, d === '@onkernel/sdk' ? JSON.parse(readFileSync('node_modules/@onkernel/sdk/package.json', 'utf8')).version : (() => { try { const v = require(d); return typeof v === 'function' ? 'function' : v; } catch (e) { return 'missing: ' + e.message; } })()])));
app.action('scan', async (_ctx, needles) => scan(needles));
`,
  };
}

const lockOf = (packages: Record<string, object>, deps: Record<string, string>) => ({
  name: 'npm-app',
  version: '1.0.0',
  lockfileVersion: 3,
  requires: true,
  packages: { '': { name: 'npm-app', version: '1.0.0', dependencies: deps }, ...packages },
});

describe('app deploys with the npm settings of the daemon’s user', () => {
  let dir: string;
  let registry: Awaited<ReturnType<typeof privateRegistry>>;
  let ca: string;
  let npmrc: string;
  let cache: string;
  let d: TestDaemon;
  let kernel: Kernel;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rbrowse-app-npm-'));
    const tls = await throwawayCa(dir);
    ca = tls.ca;
    registry = await privateRegistry(dir, tls);
    npmrc = join(dir, 'user.npmrc');
    cache = join(dir, 'npm-cache');
    await mkdir(cache);
    d = await startTestDaemon({
      env: {
        // The user's own npm settings and cache, as npm reads them from the environment.
        npm_config_userconfig: npmrc,
        npm_config_cache: cache,
      },
    });
    kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl });
  });
  after(async () => {
    await d?.stop();
    await registry?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function deploy(files: Record<string, string>, envVars: Record<string, string> = {}) {
    const appDir = await mkdtemp(join(dir, 'app-'));
    for (const [name, content] of Object.entries(files)) await writeFile(join(appDir, name), content);
    const file = await toFile(await zipFiles(appDir, (await appFiles(appDir)).files), 'app.zip');
    const created = await kernel.deployments.create({ file, entrypoint_rel_path: 'index.mjs', env_vars: envVars });
    const dep = await waitFor(
      async () => {
        const dep = await kernel.deployments.retrieve(created.id);
        return dep.status === 'running' || dep.status === 'failed' ? dep : undefined;
      },
      300_000,
      `deployment ${created.id}`,
    );
    const log: string[] = [];
    for await (const e of await kernel.deployments.follow(created.id))
      if ((e as { event: string }).event === 'log') log.push((e as unknown as { message: string }).message);
    return { ...dep!, log: log.join('\n') };
  }

  async function invoke(action: string, payload?: unknown): Promise<any> {
    const r = await kernel.invocations.create({
      app_name: 'npm-app',
      version: 'latest',
      action_name: action,
      async: false,
      ...(payload ? { payload: JSON.stringify(payload) } : {}),
    });
    const done = await waitFor(
      async () => {
        const now = await kernel.invocations.retrieve(r.id);
        return now.status === 'succeeded' || now.status === 'failed' ? now : undefined;
      },
      120_000,
      `invocation ${r.id}`,
    );
    assert.equal(done!.status, 'succeeded', done!.status_reason ?? '');
    return JSON.parse(done!.output ?? 'null');
  }

  const privateApp = () => {
    const deps = { [DEP]: '1.0.0' };
    return appFilesFor({
      deps,
      lock: lockOf(
        { [`node_modules/${DEP}`]: { version: '1.0.0', resolved: `${registry.base}/${DEP}/-/${DEP}-1.0.0.tgz`, integrity: registry.integrity } },
        deps,
      ),
    });
  };

  test('a private HTTPS registry only the user’s npmrc trusts: installed with its token, which the app never sees; without the CA, the certificate is named', async () => {
    await writeFile(npmrc, `registry=${registry.base}/\ncafile=${ca}\n//127.0.0.1:${new URL(registry.base).port}/:_authToken=${TOKEN}\n`);
    const dep = await deploy(privateApp(), { CONTROL_ENV: CONTROL });
    assert.equal(dep.status, 'running', `${dep.status_reason}\n${dep.log}`);
    assert.ok(
      registry.seen.some((r) => r.authorized && r.url.endsWith('.tgz')),
      'the tarball was fetched with the token',
    );
    assert.deepEqual(await invoke('deps'), { [DEP]: 'fixture-dep-ok' });

    const halves = (s: string) => [s.slice(0, 12), s.slice(12)];
    const found = await invoke('scan', [halves(TOKEN), halves(CONTROL)]);
    // Controls: the scans read environments and files (the app's own marker is found in both, at install and at run).
    assert.ok(found.install.hits[CONTROL].includes('env'), 'the install scan reads its environment (the app’s .npmrc, back for its scripts)');
    assert.ok(
      found.install.hits[CONTROL].some((w: string) => w.endsWith('/control.txt')),
      'the install scan reads files',
    );
    assert.ok(
      found.now.hits[CONTROL].includes('env') && found.now.hits[CONTROL].some((w: string) => w.endsWith('/control.txt')),
      'the action’s scan reads both',
    );
    assert.ok(found.install.files > 50 && found.now.files > 50, `the scans read files: ${found.install.files}, ${found.now.files}`);
    assert.deepEqual(found.install.hits[TOKEN], [], 'no install script finds the token');
    assert.deepEqual(found.now.hits[TOKEN], [], 'no action finds the token');
    // Nor does anything the deployment shows its organization.
    const events = JSON.stringify(await kernel.deployments.retrieve(dep.id)) + (await d.api('GET', `/deployments/${dep.id}/events`)).text;
    assert.ok(!events.includes(TOKEN));

    // The same deploy once the user's npmrc no longer trusts the registry's CA.
    await writeFile(npmrc, `registry=${registry.base}/\nfetch-retries=0\n//127.0.0.1:${new URL(registry.base).port}/:_authToken=${TOKEN}\n`);
    const failed = await deploy(privateApp());
    assert.equal(failed.status, 'failed');
    assert.match(failed.status_reason ?? '', /certificate/i);
    assert.match(failed.status_reason ?? '', new RegExp(DEP));
  });

  test('with the registry out of reach: the lockfile’s packages from npm’s cache, @onkernel/sdk from the daemon’s copy; a package neither has is named', async () => {
    // The user's cache holds is-number (added while the registry was there); then npm cannot reach it.
    await execa('npm', ['cache', 'add', 'is-number@7.0.0', '--cache', cache], { env: process.env });
    const isNumber = JSON.parse(
      (await execa('npm', ['view', 'is-number@7.0.0', 'dist.integrity', '--json', '--prefer-offline', '--cache', cache])).stdout,
    );
    await writeFile(npmrc, 'registry=https://127.0.0.1:1/\nfetch-retries=0\nfetch-timeout=5000\n');
    const sdk = JSON.parse(await readFile(new URL('../package-lock.json', import.meta.url), 'utf8')).packages['node_modules/@onkernel/sdk'];
    const deps = { 'is-number': '7.0.0', '@onkernel/sdk': '0.84.0' };
    const files = appFilesFor({
      deps,
      lock: lockOf(
        {
          'node_modules/is-number': { version: '7.0.0', resolved: 'https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz', integrity: isNumber },
          'node_modules/@onkernel/sdk': {
            version: '0.84.0',
            resolved: 'https://registry.npmjs.org/@onkernel/sdk/-/sdk-0.84.0.tgz',
            integrity: sdk.integrity,
          },
        },
        deps,
      ),
    });
    // No install script this time: the scan is the other test's.
    const pkg = JSON.parse(files['package.json']!);
    delete pkg.scripts;
    files['package.json'] = JSON.stringify(pkg);
    const dep = await deploy(files);
    assert.equal(dep.status, 'running', `${dep.status_reason}\n${dep.log}`);
    const got = await invoke('deps');
    assert.equal(got['is-number'], 'function', 'is-number came from the cache');
    assert.equal(got['@onkernel/sdk'], sdk.version);

    // A package npm's cache does not hold cannot be had without the registry: one line says which.
    const needy = { 'is-odd': '3.0.1' };
    const needyFiles = appFilesFor({
      deps: needy,
      lock: lockOf(
        {
          'node_modules/is-odd': {
            version: '3.0.1',
            resolved: 'https://registry.npmjs.org/is-odd/-/is-odd-3.0.1.tgz',
            integrity: 'sha512-CQpnWPrDwmP1+SMHXZhtLtJv90yiyVfluGsX5iNCVkrhQtU3TQHsUWPG9wkdk9Lgd5yNpAg9jQEo90CBaXgWMA==',
          },
        },
        needy,
      ),
    });
    const failed = await deploy(needyFiles);
    assert.equal(failed.status, 'failed');
    assert.match(failed.status_reason ?? '', /is-odd@3\.0\.1/);
    assert.match(failed.status_reason ?? '', /out of reach/);
    assert.ok(!(failed.status_reason ?? '').includes('\n'), 'one line');
  });
});

test('the settings as the fetch and the build see them: variables filled in, credentials only in the fetch’s, CA files copied in', async () => {
  const { npmSettings } = await import('../daemon/apps/npm-settings.js');
  const dir = await mkdtemp(join(tmpdir(), 'rbrowse-npm-settings-'));
  try {
    await writeFile(join(dir, 'ca.pem'), 'PEM');
    // npm's references to the environment, as npm finds them in a file.
    const ref = (name: string) => `$${'{'}${name}}`;
    await writeFile(
      join(dir, 'npmrc'),
      [
        `registry=https://${ref('REG_HOST')}/`,
        `//${ref('REG_HOST')}/:_authToken=${ref('REG_TOKEN')}`,
        'cafile=ca.pem',
        'https-proxy=http://me:secret@proxy.example:3128',
        'nodedir=/usr',
        `optional=${ref('UNSET?')}`,
      ].join('\n'),
    );
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      npm_config_userconfig: join(dir, 'npmrc'),
      npm_config_globalconfig: '/dev/null',
      REG_HOST: 'npm.corp.example',
      REG_TOKEN: 'tok-123',
      npm_config_fund: 'false',
    };
    const s = await npmSettings(env);
    assert.match(s.fetch, /^\/\/npm\.corp\.example\/:_authToken=tok-123$/m);
    assert.match(s.fetch, /^https-proxy=http:\/\/me:secret@proxy\.example:3128$/m);
    assert.ok(!s.build.includes('tok-123') && !s.build.includes('secret'), s.build);
    assert.match(s.build, /^registry=https:\/\/npm\.corp\.example\/$/m);
    assert.match(s.build, /^https-proxy=http:\/\/proxy\.example:3128\/$/m);
    assert.match(s.build, /^nodedir=\/usr$/m);
    assert.match(s.build, /^fund=false$/m, 'the npm_config_* environment');
    assert.match(s.build, /^optional=$/m, 'an unset optional reference is empty');
    // The relative CA file, resolved against its npmrc, is copied in under /etc/npm.
    assert.deepEqual(s.files, [['/etc/npm/ca-0.pem', 'PEM']]);
    assert.match(s.build, /^cafile=\/etc\/npm\/ca-0\.pem$/m);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
