import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import WebSocket from 'ws';
import type { CliResult as Result } from './helpers/daemon.js';
import { CLI, ROOT, callApi, cleanEnv, startTestDaemon, type TestDaemon, sansUsage } from './helpers/daemon.js';
import { installCommand, SYSTEM_DEPS } from '../src/system-deps.js';
import { isAlive } from '../daemon/lib/procs.js';

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
      assert.equal(health.body.status, 'ok');
      assert.deepEqual(health.body.standby, {}, 'no standby set in tests unless asked');
      assert.deepEqual(Object.keys(health.body.launches).sort(), ['launching', 'limit', 'queued']);

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
      assert.deepEqual(
        lines(out(ls)).map((l) => l.split(/\s+/)),
        [['SESSION', 'NAME', 'MODE', 'VIEWPORT', 'TIMEOUT', 'LEFT', 'AGE', 'STATUS']],
      );
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
      assert.deepEqual(
        listA.body.map((s: { session_id: string }) => s.session_id),
        [idA],
      );
      const listB2 = await daemon.api('GET', '/browsers?status=all', undefined, keyB2);
      assert.deepEqual(
        listB2.body.map((s: { session_id: string }) => s.session_id),
        [idB],
      );
      const ownB = await daemon.api('GET', `/browsers/${idB}`, undefined, keyB2);
      assert.equal(ownB.status, 200);
      assert.deepEqual(sansUsage(ownB.body), sansUsage(sb.body));

      // The CLI with the other org's key (--api-key) sees only that org.
      const lsB = await cli(['--api-key', keyB, 'ls', '-q']);
      assertOk(lsB, 'ls -q with --api-key');
      assert.deepEqual(lines(out(lsB)), [idB]);

      // The table says how long each session has left: a countdown without a client, "in use" with one.
      const leftOf = async (id: string) => {
        const [header, ...rows] = lines(out(await cli(['ls'])));
        const row = rows.find((l) => l.startsWith(id));
        assert.ok(header && row, `ls shows ${id}`);
        return row.slice(header.indexOf('LEFT'), header.indexOf('AGE')).trim();
      };
      const idle = await leftOf(idA);
      assert.match(idle, /^\d+:\d\d$/);
      const [m, sec] = idle.split(':').map(Number);
      assert.ok(m! * 60 + sec! <= sa.body.timeout_seconds && m! * 60 + sec! > 0, `${idle} left of ${sa.body.timeout_seconds}s`);
      const client = new WebSocket(sa.body.cdp_ws_url);
      await new Promise((resolve, reject) => client.once('open', resolve).once('error', reject));
      try {
        assert.equal(await leftOf(idA), 'in use');
      } finally {
        client.close();
      }
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
    assert.deepEqual(out(r).split('\n'), [`export KERNEL_BASE_URL=${daemon.baseUrl}`, `export KERNEL_API_KEY=${daemon.apiKey}`]);
  });

  test('doctor: a ✓ checklist, one line per dependency; --json the same checks', async () => {
    const r = await cli(['doctor']);
    assertOk(r, 'doctor');
    const got = lines(out(r));
    // After the packages: the build headless sessions run, whether sessions can have a GPU, what boxes have here (namespaces, users, network, Chromium's own sandbox, the totals, each limit), whether the state parses; then node.
    const boxes = ['namespaces', 'users', 'network', 'chromium-sandbox', 'limits total', 'limit memory', 'limit pids', 'limit shm', 'limit disk'];
    const names = [...SYSTEM_DEPS.map((d) => d.name), 'headless', 'gpu', ...boxes, 'state', 'node'];
    const width = Math.max(...names.map((n) => n.length));
    assert.equal(got.length, names.length, out(r));
    names.forEach((name, i) => {
      const line = got[i]!;
      assert.ok(line.startsWith('✓ '), `not ✓: ${line}`);
      assert.equal(line.slice(2).startsWith(`${name.padEnd(width)} `), true, `line ${i} is not about ${name}, aligned: ${line}`);
    });
    assert.doesNotMatch(out(r), /✗|fix:/);
    const json = parseJson<{ name: string; state: string; detail: string }[]>(await cli(['doctor', '--json']), 'doctor --json');
    assert.deepEqual(
      json.map((c) => [c.name, c.state]),
      names.map((n) => [n, 'ok']),
    );
    for (const c of json.filter((x) => SYSTEM_DEPS.some((d) => d.name === x.name)))
      assert.ok(
        got.some((l) => l.endsWith(c.detail)),
        `${c.detail} not in the checklist`,
      );
  });

  test('doctor: a missing dependency is a ✗ line with its fix, and exit 1', async () => {
    // A Chromium path that does not exist makes the chromium check fail, as on a machine without it.
    const r = await cli(['doctor'], { RBROWSE_CHROMIUM: '/nonexistent/chromium' });
    assert.equal(r.exitCode, 1, out(r));
    const got = lines(out(r));
    const i = got.findIndex((l) => l.startsWith('✗ chromium '));
    assert.ok(i >= 0, out(r));
    assert.match(got[i]!, /needed for the browser of every session/);
    const fix = installCommand([SYSTEM_DEPS.find((dep) => dep.name === 'chromium')!]);
    assert.ok(fix.includes('apt-get install -y -qq chromium'), fix);
    assert.equal(got[i + 1]!.trim(), `fix: ${fix}`);
    assert.ok(out(r).endsWith(`install everything missing with:\n  ${fix}\n  (or: rbrowse setup)`), out(r));
    const jr = await cli(['doctor', '--json'], { RBROWSE_CHROMIUM: '/nonexistent/chromium' });
    assert.equal(jr.exitCode, 1);
    const json = JSON.parse(out(jr)) as { name: string }[];
    assert.deepEqual(
      json.find((c) => c.name === 'chromium'),
      { name: 'chromium', state: 'missing', detail: 'needed for the browser of every session', fix },
    );
  });

  test('create / get / ls -q / rm round trip', async () => {
    const created = await cli(['create', '--headless', '--viewport', '1024x768', '--timeout-seconds', '30', '--json']);
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
    assert.deepEqual(sansUsage(got), sansUsage(s));
    const api = await daemon.api('GET', `/browsers/${id}`);
    assert.equal(api.status, 200);
    assert.deepEqual(sansUsage(api.body), sansUsage(s));

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
    assert.deepEqual(sansUsage(rest), sansUsage(s));
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

  test('errors: server validation and not found exit 1, usage errors exit 2', async () => {
    // An unsupported viewport is a usage error, listing the supported ones, before anything is sent.
    const before = (await daemon.api('GET', '/browsers')).body.length;
    const badViewport = await cli(['create', '--headless', '--viewport', '123x45']);
    assert.equal(badViewport.exitCode, 2);
    assert.equal(out(badViewport), '');
    assert.match(err(badViewport), /viewport/);
    assert.match(err(badViewport), /1024x768@60/, 'the error should list the supported viewports');
    assert.equal((await daemon.api('GET', '/browsers')).body.length, before, 'nothing was created');

    const missing = await cli(['browsers', 'get', 'nosuchid']);
    assert.equal(missing.exitCode, 1);
    assert.equal(out(missing), '');
    assert.match(err(missing), /not_found/);
    assert.match(err(missing), /nosuchid/);

    const local = await cli(['create', '--viewport', 'abc']);
    assert.equal(local.exitCode, 2);
    assert.equal(out(local), '');
    assert.match(err(local), /viewport/);
    assert.match(err(local), /abc/);
    assert.doesNotMatch(err(local), /bad_request/, 'a local argument error must not reach the server');

    const badTimeout = await cli(['create', '--timeout-seconds', 'soon']);
    assert.equal(badTimeout.exitCode, 2);
    assert.match(err(badTimeout), /timeout-seconds/);

    const unknown = await cli(['frobnicate']);
    assert.equal(unknown.exitCode, 2);
    assert.match(err(unknown), /frobnicate/);
    assert.match(err(unknown), /rbrowse --help/);

    const unknownOption = await cli(['ls', '--frob']);
    assert.equal(unknownOption.exitCode, 2);
    assert.match(err(unknownOption), /--frob/);

    const missingArg = await cli(['browsers', 'get']);
    assert.equal(missingArg.exitCode, 2);
    assert.match(err(missingArg), /missing required argument/);

    // Help is not an error.
    const help = await cli(['pools', 'acquire', '--help']);
    assertOk(help, 'pools acquire --help');
    assert.match(out(help), /Example:\n {2}rbrowse pools acquire ci/);

    // None of these created a session.
    const list = await daemon.api('GET', '/browsers');
    assert.deepEqual(list.body, []);
  });

  test('ls -q | xargs rbrowse rm, as a shell runs it; rm goes on past a bad id and exits 1', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(parseJson(await cli(['create', '--headless', '--json']), 'create').session_id);
    assert.deepEqual(lines(out(await cli(['ls', '-q']))).sort(), [...ids].sort());
    const pipeline = await execa('sh', ['-c', `"${CLI}" ls -q | xargs "${CLI}" rm`], { env: daemon.env, extendEnv: false, reject: false });
    assert.equal(pipeline.exitCode, 0, pipeline.stderr);
    assert.deepEqual(lines(pipeline.stdout).sort(), [...ids].sort());
    assert.deepEqual((await daemon.api('GET', '/browsers')).body, []);

    const keep = parseJson(await cli(['create', '--headless', '--json']), 'create').session_id as string;
    const mixed = await cli(['rm', 'nosuchid', keep]);
    assert.equal(mixed.exitCode, 1);
    assert.match(err(mixed), /not_found: .*nosuchid/);
    assert.deepEqual(lines(out(mixed)), [keep], 'the good id is deleted although an earlier one failed');
    assert.equal((await daemon.api('GET', `/browsers/${keep}`)).status, 404);

    // Every page: more sessions than one page of the API (limit 2 here) are all listed.
    const many: string[] = [];
    for (let i = 0; i < 3; i++) many.push(parseJson(await cli(['create', '--headless', '--json']), 'create').session_id);
    assert.equal(lines(out(await cli(['ls', '-q', '--limit', '2']))).length, 2);
    assert.deepEqual(lines(out(await cli(['ls', '-q']))), [...many].reverse());
    assertOk(await cli(['rm', ...many]), 'rm');
  });

  test('first contact: the pipeline with nothing to delete, rm --all, the inactivity note, a range the CLI checks, a screenshot to stdout, the daemon log', async () => {
    // xargs runs rm once with no argument when ls prints nothing: nothing to delete is no error.
    const empty = await execa('sh', ['-c', `"${CLI}" ls -q | xargs "${CLI}" rm`], { env: daemon.env, extendEnv: false, reject: false });
    assert.equal(empty.exitCode, 0, empty.stderr);
    assert.equal(empty.stdout, '');

    // The human output ends with a newline and says when the session ends by itself.
    const created = await execa(CLI, ['create', '--headless'], { env: daemon.env, extendEnv: false, reject: false, stripFinalNewline: false });
    assert.equal(created.exitCode, 0, created.stderr);
    assert.ok(created.stdout.endsWith('\n') && created.stderr.endsWith('\n'), 'each stream ends its last line');
    assert.match(created.stderr, /ends 60 s after its last CDP client or live viewer leaves/);
    const id = /^session_id\s+(\S+)$/m.exec(created.stdout)![1]!;

    const png = await execa(CLI, ['computer', 'screenshot', id, '-o', '-'], { env: daemon.env, extendEnv: false, encoding: 'buffer', reject: false });
    assert.equal(png.exitCode, 0, String(png.stderr));
    assert.deepEqual([...png.stdout.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG on stdout');
    assert.equal(existsSync('-'), false, 'no file named -');

    // The range --help states is checked by the CLI itself: a usage error, before any request.
    for (const bad of ['999999', '5']) {
      const r = await cli(['create', '--headless', '--timeout-seconds', bad]);
      assert.equal(r.exitCode, 2, `${bad}: ${r.stderr}`);
      assert.match(err(r), /10\.\.259200/);
    }

    const second = parseJson(await cli(['create', '--headless', '--json']), 'create').session_id as string;
    const all = await cli(['rm', '--all']);
    assertOk(all, 'rm --all');
    assert.deepEqual(lines(out(all)).sort(), [id, second].sort());
    assert.deepEqual((await daemon.api('GET', '/browsers')).body, []);
    assert.equal((await cli(['rm', '--all', id])).exitCode, 2, 'ids and --all together are a usage error');

    const logs = await cli(['daemon', 'logs', '-n', '3']);
    assertOk(logs, 'daemon logs');
    assert.equal(lines(out(logs)).length, 3);
    assert.match(out(logs), /^\d{4}-\d\d-\d\dT\S+ {2}\S/m, 'time, then the message');
    const json = await cli(['daemon', 'logs', '-n', '1', '--json']);
    assert.ok(JSON.parse(out(json)).msg, 'the JSON line as written');
  });

  test('every rbrowse command the docs show exists, with the options they give it', async () => {
    const tree = parseJson(await cli(['__operations']), '__operations').commands as { path: string; aliases: string[]; options: string[] }[];
    const GLOBAL = ['base-url', 'api-key', 'project', 'help', 'version'];
    /** The command a line's words name (aliases too), and the words after it. */
    const resolve = (words: string[]) => {
      let path: string[] = [];
      let node: (typeof tree)[number] | undefined;
      for (const word of words) {
        const next = tree.find((c) => {
          const parts = c.path.split(' ');
          return (
            parts.length === path.length + 1 && parts.slice(0, -1).join(' ') === path.join(' ') && (parts.at(-1) === word || c.aliases.includes(word))
          );
        });
        if (!next) break;
        node = next;
        path = next.path.split(' ');
      }
      return node;
    };
    const docs = [
      'README.md',
      ...readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    const wrong: string[] = [];
    let checked = 0;
    for (const doc of docs) {
      const text = readFileSync(join(ROOT, doc), 'utf8');
      for (const block of text.matchAll(/```sh\n([\s\S]*?)\n```/g)) {
        for (const m of block[1]!.matchAll(/(?:^|[|;&(]\s*|\$\()rbrowse((?: +[^\s|;&)#]+)*)/gm)) {
          const args = m[1]!.trim().split(/\s+/).filter(Boolean);
          // The program's own options come first, with their values.
          while (/^--(project|base-url|api-key)$/.test(args[0] ?? '')) args.splice(0, 2);
          const words = args.filter((a) => /^[a-z][\w-]*$/.test(a));
          const node = resolve(words);
          checked++;
          if (!node) {
            wrong.push(`${doc}: rbrowse ${args.join(' ')}: no such command`);
            continue;
          }
          for (const opt of args.filter((a) => /^--[a-z]/.test(a)).map((a) => a.replace(/^--/, '').replace(/=.*$/, ''))) {
            if (!node.options.includes(opt) && !GLOBAL.includes(opt)) wrong.push(`${doc}: rbrowse ${node.path}: no option --${opt}`);
          }
        }
      }
    }
    assert.ok(checked > 100, `checked ${checked} command lines`);
    assert.deepEqual(wrong, []);
  });

  test('--json prints the API objects: pools, files, mouse, keys', async () => {
    const pool = parseJson(
      await cli(['pools', 'create', '--name', 'cli-json', '--size', '1', '--headless', '--fill-rate-per-minute', '100', '--wait', '--json']),
      'pools create --wait --json',
    );
    try {
      assert.equal(pool.available_count, 1, 'pools create --wait returns once the pool is full');
      assert.deepEqual(pool, (await daemon.api('GET', `/browser_pools/${pool.id}`)).body);
      assert.deepEqual(
        parseJson(await cli(['pools', 'get', 'cli-json', '--json']), 'pools get'),
        (await daemon.api('GET', `/browser_pools/${pool.id}`)).body,
      );
      assert.deepEqual(parseJson(await cli(['pools', 'ls', '--json']), 'pools ls'), (await daemon.api('GET', '/browser_pools')).body);
      assert.deepEqual(lines(out(await cli(['pools', 'ls', '-q']))), [pool.id]);
      const session = parseJson(await cli(['pools', 'acquire', 'cli-json', '--json']), 'pools acquire');
      assert.deepEqual(sansUsage(session), sansUsage((await daemon.api('GET', `/browsers/${session.session_id}`)).body));
      assert.deepEqual(session.pool, { id: pool.id, name: 'cli-json' });

      const id: string = session.session_id;
      const dir = await mkdtemp(join(tmpdir(), 'rbrowse-cli-'));
      try {
        await writeFile(join(dir, 'a.txt'), 'alpha\n');
        await writeFile(join(dir, 'b.bin'), Buffer.from([0, 1, 2, 255]));
        assertOk(await cli(['fs', 'mkdir', id, '/home/kernel/work']), 'fs mkdir');
        assertOk(await cli(['fs', 'put', id, join(dir, 'a.txt'), '/home/kernel/work/a.txt']), 'fs put');
        assertOk(
          await cli(['fs', 'upload', id, `${join(dir, 'b.bin')}:/home/kernel/work/sub/b.bin`, `${join(dir, 'a.txt')}:/tmp/a2.txt`]),
          'fs upload',
        );
        const listed = parseJson(await cli(['fs', 'ls', id, '/home/kernel/work', '--json']), 'fs ls --json');
        assert.deepEqual(listed, (await daemon.api('GET', `/browsers/${id}/fs/list_files?path=/home/kernel/work`)).body);
        assert.deepEqual(listed.map((f: { name: string }) => f.name).sort(), ['a.txt', 'sub']);
        assert.deepEqual(lines(out(await cli(['fs', 'ls', id, '/home/kernel/work', '-q']))).sort(), [
          '/home/kernel/work/a.txt',
          '/home/kernel/work/sub',
        ]);
        const info = parseJson(await cli(['fs', 'stat', id, '/home/kernel/work/sub/b.bin', '--json']), 'fs stat --json');
        assert.deepEqual(info, (await daemon.api('GET', `/browsers/${id}/fs/file_info?path=/home/kernel/work/sub/b.bin`)).body);
        assert.equal(info.size_bytes, 4);
        assert.equal(out(await cli(['fs', 'cat', id, '/tmp/a2.txt'])), 'alpha');
        const zip = join(dir, 'work.zip');
        assertOk(await cli(['fs', 'zip', id, '/home/kernel/work', '-o', zip]), 'fs zip');
        assert.equal((await readFile(zip)).subarray(0, 2).toString(), 'PK');

        assertOk(await cli(['computer', 'move', id, '--x', '33', '--y', '44']), 'computer move');
        const pos = parseJson(await cli(['computer', 'position', id, '--json']), 'computer position --json');
        assert.deepEqual(pos, { x: 33, y: 44 });
        assert.equal(out(await cli(['computer', 'position', id])), '33 44');
        assertOk(await cli(['computer', 'press', id, 'Return', 'ctrl+a']), 'computer press');
        await writeFile(join(dir, 'batch.json'), JSON.stringify([{ type: 'move_mouse', move_mouse: { x: 5, y: 6 } }]));
        assertOk(await cli(['computer', 'batch', id, join(dir, 'batch.json')]), 'computer batch');
        assert.deepEqual(parseJson(await cli(['computer', 'position', id, '--json']), 'position'), { x: 5, y: 6 });
        const badBatch = await cli(['computer', 'batch', id, join(dir, 'a.txt')]);
        assert.equal(badBatch.exitCode, 2);
        assert.match(err(badBatch), /not JSON/);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
      assertOk(await cli(['pools', 'release', 'cli-json', id]), 'pools release');
    } finally {
      assertOk(await cli(['pools', 'rm', 'cli-json', '--force']), 'pools rm');
    }
    const gone = await cli(['pools', 'get', 'cli-json']);
    assert.equal(gone.exitCode, 1);
    assert.match(err(gone), /not_found/);
  });

  test('completion: bash, zsh and fish scripts generated from the commands', async () => {
    const bash = await cli(['completion', 'bash']);
    assertOk(bash, 'completion bash');
    const syntax = await execa('bash', ['-n'], { input: out(bash), reject: false });
    assert.equal(syntax.exitCode, 0, syntax.stderr);
    const complete = async (words: string[]) => {
      const script = `${out(bash)}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _rbrowse; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const r = await execa('bash', ['-c', script], { reject: false });
      assert.equal(r.exitCode, 0, r.stderr);
      return lines(r.stdout).sort();
    };
    assert.deepEqual(await complete(['rbrowse', 'pools', 'ac']), ['acquire']);
    assert.deepEqual(await complete(['rbrowse', 'browsers', 'l']), ['list', 'ls']);
    assert.deepEqual(await complete(['rbrowse', 'w']), ['watch', 'webmcp']);
    assert.deepEqual(await complete(['rbrowse', 'create', '--timeout-s']), ['--timeout-seconds']);
    // Aliases lead to their command's words, past options and their values.
    assert.ok((await complete(['rbrowse', '--api-key', 'k', 'browsers', 'ls', '--'])).includes('--status'));
    assert.deepEqual(await complete(['rbrowse', 'computer', 'scroll', 'id', '--delta-']), ['--delta-x', '--delta-y']);

    for (const shell of ['zsh', 'fish']) {
      const r = await cli(['completion', shell]);
      assertOk(r, `completion ${shell}`);
      for (const word of ['pools', 'acquire', 'watch', 'completion', 'timeout-seconds', 'fs', 'upload'])
        assert.ok(out(r).includes(word), `${shell} script lacks ${word}`);
      assert.ok(!out(r).includes('__operations'), `${shell} script offers the hidden __operations`);
    }
    assert.match(out(await cli(['completion', 'zsh'])), /^#compdef rbrowse/);
    const bad = await cli(['completion', 'tcsh']);
    assert.equal(bad.exitCode, 2);
    assert.match(err(bad), /bash, zsh, fish/);
  });

  test('--base-url / --api-key and KERNEL_BASE_URL / KERNEL_API_KEY reach that server without a local daemon', async () => {
    const home = await mkdtemp(join(tmpdir(), 'rbrowse-remote-'));
    try {
      const env = { ...daemon.env, RBROWSE_HOME: home };
      const created = await execa(CLI, ['--base-url', daemon.baseUrl, '--api-key', daemon.apiKey, 'create', '--headless', '-q'], {
        env,
        extendEnv: false,
        reject: false,
      });
      assert.equal(created.exitCode, 0, created.stderr);
      const id = created.stdout.trim();
      assert.match(id, ID_RE);
      const viaEnv = await execa(CLI, ['ls', '--json'], {
        env: { ...env, KERNEL_BASE_URL: daemon.baseUrl, KERNEL_API_KEY: daemon.apiKey },
        extendEnv: false,
        reject: false,
      });
      assert.equal(viaEnv.exitCode, 0, viaEnv.stderr);
      assert.deepEqual(sansUsage(JSON.parse(viaEnv.stdout)), sansUsage((await daemon.api('GET', '/browsers')).body));
      const rmR = await execa(CLI, ['rm', id], {
        env: { ...env, KERNEL_BASE_URL: daemon.baseUrl, KERNEL_API_KEY: daemon.apiKey },
        extendEnv: false,
        reject: false,
      });
      assert.equal(rmR.exitCode, 0, rmR.stderr);
      const wrongKey = await execa(CLI, ['--base-url', daemon.baseUrl, '--api-key', 'nope', 'ls'], { env, extendEnv: false, reject: false });
      assert.equal(wrongKey.exitCode, 1);
      assert.match(wrongKey.stderr, /unauthorized/);
      const unreachable = await execa(CLI, ['--base-url', 'http://127.0.0.1:9', '--api-key', 'k', 'ls'], { env, extendEnv: false, reject: false });
      assert.equal(unreachable.exitCode, 1);
      assert.match(unreachable.stderr, /cannot reach the server: .*ECONNREFUSED/);
      // None of this started a daemon in that home.
      assert.equal(existsSync(join(home, 'daemon.json')), false, 'a local daemon was started');
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });

  test('after eval "$(rbrowse env)" a stopped daemon still starts by itself, a wrong KERNEL_API_KEY is refused, and one alone is said to be unused', async () => {
    const home = await mkdtemp(join(tmpdir(), 'rbrowse-env-'));
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const env = { ...daemon.env, RBROWSE_HOME: home, RBROWSE_PORT: String(port) };
    const run = (args: string[], extra: Record<string, string> = {}) =>
      execa(CLI, args, { env: { ...env, ...extra }, extendEnv: false, reject: false });
    try {
      const printed = await run(['env']);
      assert.equal(printed.exitCode, 0, printed.stderr);
      const exported = Object.fromEntries([...printed.stdout.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
      assert.equal(exported.KERNEL_BASE_URL, `http://127.0.0.1:${port}`);
      assert.equal((await run(['daemon', 'stop'])).exitCode, 0);
      const ls = await run(['ls', '-q'], exported);
      assert.equal(ls.exitCode, 0, ls.stderr);
      assert.equal(JSON.parse((await run(['daemon', 'status', '--json'])).stdout).running, true, 'the daemon runs again');
      const wrong = await run(['ls'], { ...exported, KERNEL_API_KEY: 'wrong' });
      assert.equal(wrong.exitCode, 1);
      assert.match(wrong.stderr, /unauthorized/);
      // Without KERNEL_BASE_URL it is likely a cloud key kept for the SDK: not sent here, and said so.
      const alone = await run(['ls', '-q'], { KERNEL_API_KEY: 'a-cloud-key' });
      assert.equal(alone.exitCode, 0, alone.stderr);
      assert.match(alone.stderr, /KERNEL_API_KEY is not used without KERNEL_BASE_URL/);
    } finally {
      await run(['daemon', 'stop']);
      await rm(home, { recursive: true, force: true });
    }
  });

  test('a daemon that cannot start says why, in one line', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    const home = await mkdtemp(join(tmpdir(), 'rbrowse-blocked-'));
    try {
      const r = await execa(CLI, ['ls'], { env: { ...cleanEnv(home), RBROWSE_PORT: String(port) }, extendEnv: false, reject: false });
      assert.equal(r.exitCode, 1);
      assert.equal(r.stdout, '');
      assert.equal(
        r.stderr.trim().split('\n')[0],
        `error: port ${port} is taken by another program: set RBROWSE_PORT to a free port (0: any), or stop what listens there`,
      );
      assert.doesNotMatch(r.stderr, /"msg"/, 'no raw log lines');
    } finally {
      blocker.close();
      await rm(home, { recursive: true, force: true });
    }
  });

  test('a daemon slow to answer on a busy machine is still found running; one that is gone is not', async () => {
    // A daemon's home as a running one leaves it: daemon.json with a live pid (this process) and
    // the URL of a server that answers /health only after 3 s, as a daemon did at a load of 50.
    const slow = createHttpServer((req, res) => void setTimeout(() => res.writeHead(req.url === '/health' ? 200 : 404).end('{"status":"ok"}'), 3000));
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const port = (slow.address() as AddressInfo).port;
    const home = await mkdtemp(join(tmpdir(), 'rbrowse-slow-'));
    const info = {
      pid: process.pid,
      host: '127.0.0.1',
      port,
      base_url: `http://127.0.0.1:${port}`,
      started_at: new Date().toISOString(),
      version: '0',
    };
    await writeFile(join(home, 'daemon.json'), JSON.stringify(info), { mode: 0o600 });
    const status = async () =>
      JSON.parse((await execa(CLI, ['daemon', 'status', '--json'], { env: cleanEnv(home), extendEnv: false, reject: false })).stdout);
    try {
      assert.deepEqual(await status(), { running: true, pid: process.pid, base_url: info.base_url });
      // The control: the same home once nothing answers there.
      await new Promise((resolve) => slow.close(resolve));
      assert.equal((await status()).running, false);
    } finally {
      slow.close();
      await rm(home, { recursive: true, force: true });
    }
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
    await cli(['completion', 'bash'], noColor);
    await cli(['watch'], noColor);
    await cli(['pools', 'ls'], noColor);
    await cli(['daemon', 'stop'], noColor);
    daemon.baseUrl = out(await cli(['daemon', 'start'], noColor)).trim();
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
