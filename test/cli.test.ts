import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CliResult as Result } from './helpers/daemon.js';
import { ROOT, callApi, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { SYSTEM_DEPS } from '../src/system-deps.js';
import { isAlive } from '../daemon/browser/procs.js';

const PKG_VERSION: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
const ID_RE = /^[a-z0-9]{24}$/;
const ISO_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

const text = (v: unknown) => (typeof v === 'string' ? v : String(v ?? ''));
const out = (r: Result) => text(r.stdout);
const err = (r: Result) => text(r.stderr);
const lines = (s: string) => s.split('\n').filter((l) => l.length > 0);

/** Fails with the command's output, so a red test says what the CLI printed. */
function assertOk(r: Result, what: string): void {
  assert.equal(r.exitCode, 0, `${what} exited ${r.exitCode}\nstdout: ${out(r)}\nstderr: ${err(r)}`);
}

function parseJson<T = any>(r: Result, what: string): T {
  assertOk(r, what);
  try {
    return JSON.parse(out(r)) as T;
  } catch {
    assert.fail(`${what} did not print JSON: ${out(r)}`);
  }
}

interface Status {
  running: boolean;
  pid: number | null;
  base_url: string;
}

/** The RBROWSE_HOME a process was started with, read from /proc. */
function homeOf(pid: number): string | undefined {
  const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  return env.find((e) => e.startsWith('RBROWSE_HOME='))?.slice('RBROWSE_HOME='.length);
}

describe('rbrowse CLI', () => {
  let daemon: TestDaemon;
  /** Every CLI result of the suite, checked for ANSI escapes at the end. */
  const seen: { args: string[]; r: Result }[] = [];
  const cli = async (args: string[], env?: Record<string, string>) => {
    const r = await daemon.cli(args, env ? { env } : {});
    seen.push({ args, r });
    return r;
  };

  before(async () => {
    daemon = await startTestDaemon();
  });

  after(async () => {
    // Leave nothing running even when a test failed half way.
    if (daemon) {
      const left = await daemon.api('GET', '/browsers?status=active&limit=100');
      for (const s of (left.body ?? []) as { session_id: string }[]) await daemon.api('DELETE', `/browsers/${s.session_id}`);
      await daemon.stop();
    }
  });

  test('--version prints the package.json version', async () => {
    const r = await cli(['--version']);
    assertOk(r, '--version');
    assert.equal(out(r), PKG_VERSION);
    assert.equal(err(r), '');
  });

  test('daemon lifecycle: status, idempotent start, stop, auto-start by any command', async () => {
    const d = await startTestDaemon();
    try {
      const status1 = parseJson<Status>(await d.cli(['daemon', 'status', '--json']), 'daemon status --json');
      assert.equal(status1.running, true);
      assert.equal(status1.base_url, d.baseUrl);
      assert.match(d.baseUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(typeof status1.pid, 'number');
      const pid1 = status1.pid!;
      assert.equal(isAlive(pid1), true, `pid ${pid1} of status is not alive`);
      assert.equal(homeOf(pid1), d.home, 'status pid is not the daemon of this RBROWSE_HOME');
      assert.deepEqual(Object.keys(status1).sort(), ['base_url', 'pid', 'running']);
      const health = await callApi(d.baseUrl, 'GET', '/health', undefined, null);
      assert.equal(health.status, 200);
      assert.deepEqual(health.body, { status: 'ok' });

      // Human status.
      const human = await d.cli(['daemon', 'status']);
      assertOk(human, 'daemon status');
      assert.equal(out(human), `running (pid ${pid1}) at ${d.baseUrl}`);

      // Starting again is not an error and finds the same daemon.
      const again = await d.cli(['daemon', 'start']);
      assertOk(again, 'second daemon start');
      assert.equal(out(again).trim(), d.baseUrl);
      const status2 = parseJson<Status>(await d.cli(['daemon', 'status', '--json']), 'daemon status --json');
      assert.deepEqual(status2, status1);

      const stop = await d.cli(['daemon', 'stop']);
      assertOk(stop, 'daemon stop');
      assert.equal(isAlive(pid1), false, `daemon pid ${pid1} still alive after stop`);
      const status3 = parseJson<Status>(await d.cli(['daemon', 'status', '--json']), 'daemon status --json');
      assert.equal(status3.running, false);
      assert.equal(status3.pid, null);
      const down = await callApi(d.baseUrl, 'GET', '/health', undefined, null).catch((e: Error) => e);
      assert.ok(down instanceof Error, `the old base URL still answers after stop: ${JSON.stringify(down)}`);
      const humanDown = await d.cli(['daemon', 'status']);
      assert.equal(humanDown.exitCode, 3);
      assert.equal(out(humanDown), 'not running');

      // Any other command starts it again.
      const ls = await d.cli(['ls']);
      assertOk(ls, 'ls (auto-start)');
      assert.deepEqual(lines(out(ls)).map((l) => l.split(/\s+/)), [
        ['SESSION', 'NAME', 'MODE', 'VIEWPORT', 'TIMEOUT', 'AGE', 'STATUS'],
      ]);
      const status4 = parseJson<Status>(await d.cli(['daemon', 'status', '--json']), 'daemon status --json');
      assert.equal(status4.running, true);
      assert.equal(typeof status4.pid, 'number');
      assert.notEqual(status4.pid, pid1);
      assert.equal(isAlive(status4.pid!), true);
      assert.equal(homeOf(status4.pid!), d.home);
      const health2 = await callApi(status4.base_url, 'GET', '/health', undefined, null);
      assert.equal(health2.status, 200);

      // The default key survives the restart.
      const token = await d.cli(['auth', 'token']);
      assertOk(token, 'auth token');
      assert.equal(out(token), d.apiKey);
      const list = await callApi(status4.base_url, 'GET', '/browsers', undefined, d.apiKey);
      assert.equal(list.status, 200);
      assert.deepEqual(list.body, []);
    } finally {
      await d.stop();
    }
  });

  test('auth token and auth create-key: working keys, organizations isolated', async () => {
    const token = await cli(['auth', 'token']);
    assertOk(token, 'auth token');
    assert.equal(lines(out(token)).length, 1);
    const key = out(token).trim();
    assert.match(key, /^\S{16,}$/);
    assert.equal(key, daemon.apiKey);
    const ok = await daemon.api('GET', '/browsers', undefined, key);
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body, []);
    const noKey = await daemon.api('GET', '/browsers', undefined, null);
    assert.equal(noKey.status, 401);
    assert.equal(noKey.body.code, 'unauthorized');
    const badKey = await daemon.api('GET', '/browsers', undefined, `${key}x`);
    assert.equal(badKey.status, 401);

    const created = await cli(['auth', 'create-key', '--org', 'team-b']);
    assertOk(created, 'auth create-key');
    assert.equal(lines(out(created)).length, 1);
    const keyB = out(created).trim();
    assert.match(keyB, /^\S{16,}$/);
    assert.notEqual(keyB, key);
    const listB = await daemon.api('GET', '/browsers', undefined, keyB);
    assert.equal(listB.status, 200);
    assert.deepEqual(listB.body, []);

    // A second key of the same org sees the same sessions; a key of another org sees none.
    const keyB2 = out(await cli(['auth', 'create-key', '--org', 'team-b'])).trim();
    assert.notEqual(keyB2, keyB);

    const sb = await daemon.api('POST', '/browsers', { headless: true }, keyB);
    assert.equal(sb.status, 200, sb.text);
    const idB: string = sb.body.session_id;
    const sa = await daemon.api('POST', '/browsers', { headless: true }, key);
    assert.equal(sa.status, 200, sa.text);
    const idA: string = sa.body.session_id;
    try {
      const crossA = await daemon.api('GET', `/browsers/${idB}`, undefined, key);
      assert.equal(crossA.status, 404);
      assert.equal(crossA.body.code, 'not_found');
      const crossB = await daemon.api('GET', `/browsers/${idA}`, undefined, keyB);
      assert.equal(crossB.status, 404);
      assert.equal(crossB.body.code, 'not_found');
      const crossDel = await daemon.api('DELETE', `/browsers/${idA}`, undefined, keyB);
      assert.equal(crossDel.status, 404);

      const listA = await daemon.api('GET', '/browsers?status=all', undefined, key);
      assert.deepEqual(listA.body.map((s: { session_id: string }) => s.session_id), [idA]);
      const listB2 = await daemon.api('GET', '/browsers?status=all', undefined, keyB2);
      assert.deepEqual(listB2.body.map((s: { session_id: string }) => s.session_id), [idB]);
      const ownB = await daemon.api('GET', `/browsers/${idB}`, undefined, keyB2);
      assert.equal(ownB.status, 200);
      assert.deepEqual(ownB.body, sb.body);

      // The CLI with the other org's key (--api-key) sees only that org.
      const lsB = await cli(['--api-key', keyB, 'ls', '-q']);
      assertOk(lsB, 'ls -q with --api-key');
      assert.deepEqual(lines(out(lsB)), [idB]);
      const getCross = await cli(['--api-key', keyB, 'browsers', 'get', idA]);
      assert.notEqual(getCross.exitCode, 0);
      assert.match(err(getCross), /not_found/);
    } finally {
      assert.equal((await daemon.api('DELETE', `/browsers/${idA}`, undefined, key)).status, 204);
      assert.equal((await daemon.api('DELETE', `/browsers/${idB}`, undefined, keyB)).status, 204);
    }
    const empty = await daemon.api('GET', '/browsers', undefined, keyB);
    assert.deepEqual(empty.body, []);
  });

  test('env prints exactly the two exports', async () => {
    const r = await cli(['env']);
    assertOk(r, 'env');
    assert.deepEqual(out(r).split('\n'), [
      `export KERNEL_BASE_URL=${daemon.baseUrl}`,
      `export KERNEL_API_KEY=${daemon.apiKey}`,
    ]);
  });

  test('doctor: exit 0 and one line per dependency', async () => {
    const r = await cli(['doctor']);
    assertOk(r, 'doctor');
    const got = lines(out(r));
    // The sandbox line says whether bubblewrap runs, after the packages and before node.
    const names = [...SYSTEM_DEPS.map((d) => d.name), 'sandbox', 'node'];
    assert.equal(got.length, names.length, out(r));
    names.forEach((name, i) => {
      const line = got[i]!;
      assert.ok(line.startsWith('ok '), `not ok: ${line}`);
      assert.equal(line.slice(2).trim().startsWith(name), true, `line ${i} is not about ${name}: ${line}`);
    });
    assert.doesNotMatch(out(r), /MISSING/);
  });

  test('create / get / ls -q / rm round trip', async () => {
    const created = await cli(['create', '--headless', '--viewport', '1024x768', '--timeout', '30', '--json']);
    const s = parseJson(created, 'create --json');
    const id: string = s.session_id;
    assert.match(id, ID_RE);
    assert.match(s.created_at, ISO_RE);
    assert.ok(Math.abs(Date.parse(s.created_at) - Date.now()) < 60_000, `created_at ${s.created_at} is not now`);
    const wsPrefix = `${daemon.baseUrl.replace(/^http/, 'ws')}/browser/cdp?jwt=`;
    assert.ok(s.cdp_ws_url.startsWith(wsPrefix), `cdp_ws_url ${s.cdp_ws_url} does not start with ${wsPrefix}`);
    const jwt = new URL(s.cdp_ws_url).searchParams.get('jwt')!;
    assert.match(jwt, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    const claims = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));
    assert.equal(claims.session.id, id);
    assert.equal(s.headless, true);
    assert.equal(s.stealth, false);
    assert.equal(s.kiosk_mode, false);
    assert.deepEqual(s.viewport, { width: 1024, height: 768, refresh_rate: 60 });
    assert.equal(s.timeout_seconds, 30);
    assert.equal(s.deleted_at, undefined);
    assert.equal(s.browser_live_view_url, undefined, 'a headless session has no live view');

    const got = parseJson(await cli(['browsers', 'get', id, '--json']), 'browsers get --json');
    assert.deepEqual(got, s);
    const api = await daemon.api('GET', `/browsers/${id}`);
    assert.equal(api.status, 200);
    assert.deepEqual(api.body, s);

    // Human output of a create.
    const human = await cli(['create', '--headless']);
    assertOk(human, 'create --headless');
    const fields = new Map(
      lines(out(human)).map((l) => {
        const m = /^(\S+)\s+(.*)$/.exec(l);
        assert.ok(m, `not a "key  value" line: ${l}`);
        return [m[1]!, m[2]!] as const;
      }),
    );
    const id2 = fields.get('session_id')!;
    assert.match(id2, ID_RE);
    assert.notEqual(id2, id);
    const s2 = (await daemon.api('GET', `/browsers/${id2}`)).body;
    assert.equal(s2.session_id, id2);
    assert.equal(fields.get('cdp_ws_url'), s2.cdp_ws_url);
    assert.ok(out(human).includes(s2.cdp_ws_url));
    assert.equal(fields.get('mode'), 'headless');
    assert.equal(fields.get('viewport'), '1920x1080@25');
    assert.equal(fields.get('timeout_seconds'), '60');
    assert.equal(fields.get('status'), 'active');

    // ls -q: ids only, newest first.
    const ls = await cli(['ls', '-q']);
    assertOk(ls, 'ls -q');
    assert.equal(out(ls), `${id2}\n${id}`);
    const lsBrowsers = await cli(['browsers', 'list', '--json']);
    assert.deepEqual(
      parseJson<{ session_id: string }[]>(lsBrowsers, 'browsers list --json').map((x) => x.session_id),
      [id2, id],
    );

    // ls -q | xargs rbrowse rm
    const rm = await cli(['rm', ...lines(out(ls))]);
    assertOk(rm, 'rm');
    assert.deepEqual(lines(out(rm)), [id2, id]);
    const after = await cli(['ls', '-q']);
    assertOk(after, 'ls -q after rm');
    assert.equal(out(after), '');

    const deleted = parseJson(await cli(['browsers', 'get', id, '--include-deleted', '--json']), 'get --include-deleted');
    assert.match(deleted.deleted_at, ISO_RE);
    assert.ok(Date.parse(deleted.deleted_at) >= Date.parse(s.created_at));
    const { deleted_at: _d, ...rest } = deleted;
    assert.deepEqual(rest, s);
    const gone = await cli(['browsers', 'get', id]);
    assert.notEqual(gone.exitCode, 0);
    assert.match(err(gone), /not_found/);
    const rmAgain = await cli(['rm', id]);
    assert.notEqual(rmAgain.exitCode, 0);
    assert.match(err(rmAgain), /not_found/);
    const lsDeleted = await cli(['ls', '-q', '--status', 'deleted']);
    assertOk(lsDeleted, 'ls -q --status deleted');
    // Newest first; sessions deleted by earlier tests of this file come after these two.
    assert.deepEqual(lines(out(lsDeleted)).slice(0, 2), [id2, id]);
  });

  test('errors: server validation, not found, local argument errors', async () => {
    const badViewport = await cli(['create', '--headless', '--viewport', '123x45']);
    assert.equal(badViewport.exitCode, 1);
    assert.equal(out(badViewport), '');
    assert.match(err(badViewport), /bad_request/);
    assert.match(err(badViewport), /viewport/);
    assert.match(err(badViewport), /1024x768@60/, 'the error should list the supported viewports');

    const missing = await cli(['browsers', 'get', 'nosuchid']);
    assert.equal(missing.exitCode, 1);
    assert.equal(out(missing), '');
    assert.match(err(missing), /not_found/);
    assert.match(err(missing), /nosuchid/);

    const local = await cli(['create', '--viewport', 'abc']);
    assert.notEqual(local.exitCode, 0);
    assert.equal(out(local), '');
    assert.match(err(local), /viewport/);
    assert.match(err(local), /abc/);
    assert.doesNotMatch(err(local), /bad_request/, 'a local argument error must not reach the server');

    const badTimeout = await cli(['create', '--timeout', 'soon']);
    assert.notEqual(badTimeout.exitCode, 0);
    assert.match(err(badTimeout), /timeout/);

    const unknown = await cli(['frobnicate']);
    assert.notEqual(unknown.exitCode, 0);
    assert.match(err(unknown), /frobnicate/);

    // None of these created a session.
    const list = await daemon.api('GET', '/browsers');
    assert.deepEqual(list.body, []);
  });

  test('non-TTY output has no ANSI escapes', async () => {
    // NO_COLOR='' counts as unset: colour must be off because stdout is a pipe, not because of NO_COLOR.
    const noColor = { NO_COLOR: '' };
    await cli(['--help'], noColor);
    await cli(['ls'], noColor);
    await cli(['doctor'], noColor);
    await cli(['daemon', 'status'], noColor);
    await cli(['create', '--viewport', 'abc'], noColor);
    await cli(['browsers', 'get', 'nosuchid'], noColor);
    await cli(['create', '--viewport', '123x45'], noColor);
    const created = await cli(['create', '--headless'], noColor);
    assertOk(created, 'create --headless');
    const ids = lines(out(await cli(['ls', '-q'], noColor)));
    assert.equal(ids.length, 1);
    await cli(['ls'], noColor);
    assertOk(await cli(['rm', ...ids], noColor), 'rm');

    assert.ok(seen.length > 20, `only ${seen.length} CLI runs recorded`);
    for (const { args, r } of seen) {
      assert.ok(!out(r).includes('\x1b'), `ANSI escape on stdout of rbrowse ${args.join(' ')}: ${JSON.stringify(out(r))}`);
      assert.ok(!err(r).includes('\x1b'), `ANSI escape on stderr of rbrowse ${args.join(' ')}: ${JSON.stringify(err(r))}`);
    }
  });
});
