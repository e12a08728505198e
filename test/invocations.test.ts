import { test, describe, before, after } from 'node:test';
import { readFile } from 'node:fs/promises';
import assert from 'node:assert/strict';
import { execa } from 'execa';
import Kernel from '@onkernel/sdk';
import { findMarkedProcesses, isAlive } from '../daemon/lib/procs.js';
import { markerOf } from '../daemon/apps/invocations.js';
import { LineSplitter } from '../daemon/lib/line-splitter.js';
import { nowNano } from '../daemon/apps/timestamps.js';
import { sseEvents } from '../cli/sse.js';
import { deployFixtureApp } from './helpers/apps.js';
import { CLI, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';

const ID_RE = /^[a-z0-9]{24}$/;
const NANO_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/;
/** Sync calls answer "still running" after this long in this suite (the real cap is 100 s). */
const SYNC_CAP_MS = 15_000;

interface Followed {
  states: string[];
  logs: string[];
  errors: string[];
  final: any;
}

/** Reads an invocation's whole event stream with the official SDK's follow, until the server ends it. */
async function followAll(kernel: Kernel, id: string, onLog?: (line: string) => void): Promise<Followed> {
  const out: Followed = { states: [], logs: [], errors: [], final: undefined };
  for await (const e of await kernel.invocations.follow(id)) {
    assert.match(e.timestamp, e.event === 'sse_heartbeat' ? /^\d{4}-/ : NANO_RE);
    if (e.event === 'invocation_state') {
      out.states.push(e.invocation.status);
      out.final = e.invocation;
    } else if (e.event === 'log') {
      out.logs.push(e.message);
      onLog?.(e.message);
    } else if (e.event === 'error') out.errors.push(e.error.message);
  }
  return out;
}

const childPids = (d: TestDaemon, invocationId: string) => findMarkedProcesses(d.home, markerOf(invocationId));
/**
 * Waits until nothing of an invocation runs: an action that returned by itself gets its answer
 * first, and its box ends (with anything the action left behind) just after it.
 */
const leftNothing = (d: TestDaemon, invocationId: string) =>
  waitFor(async () => (await childPids(d, invocationId)).length === 0, 15_000, `the processes of ${invocationId} to end`);

describe('invocation pure parts', () => {
  test('nowNano: RFC 3339 with nanoseconds, UTC, strictly increasing, close to Date.now()', () => {
    const stamps = Array.from({ length: 1000 }, () => nowNano());
    for (const s of stamps) assert.match(s, NANO_RE);
    for (let i = 1; i < stamps.length; i++) assert.ok(stamps[i]! > stamps[i - 1]!, `${stamps[i]} after ${stamps[i - 1]}`);
    assert.ok(Math.abs(Date.parse(stamps.at(-1)!) - Date.now()) < 1000);
  });

  test('LineSplitter: lines across chunks, CRLF, split UTF-8, bounded long lines, a last line without newline', () => {
    const lines: string[] = [];
    const split = new LineSplitter((l) => lines.push(l), 8);
    const euro = Buffer.from('€');
    split.write(Buffer.concat([Buffer.from('ab\r\nc'), euro.subarray(0, 1)]));
    split.write(Buffer.concat([euro.subarray(1), Buffer.from('d\n\n')]));
    split.write('0123456789abcdefXY');
    split.write('Z\nrest');
    split.end();
    assert.deepEqual(lines, ['ab', 'c€d', '', '01234567', '89abcdef', 'XYZ', 'rest']);
  });
});

describe('invocations', () => {
  let d: TestDaemon;
  let kernel: Kernel;
  let other: Kernel;
  let otherKey: string;
  let pages: Awaited<ReturnType<typeof startFixtureServer>>;
  let sampleDeployment: string;

  const invoke = (action: string, body: Record<string, unknown> = {}, app = 'sample') =>
    d.api('POST', '/invocations', { app_name: app, version: 'latest', action_name: action, ...body });

  before(async () => {
    // App boxes started ahead as shipped (one per deployment invoked lately): most invocations here start in one.
    d = await startTestDaemon({ env: { RBROWSE_SYNC_INVOCATION_CAP_MS: String(SYNC_CAP_MS), RBROWSE_APP_SPARE_BOXES: '1' } });
    kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0, timeout: 180_000 });
    otherKey = (await d.cli(['auth', 'create-key', '--org', 'other'])).stdout.trim();
    other = new Kernel({ apiKey: otherKey, baseURL: d.baseUrl, maxRetries: 0 });
    pages = await startFixtureServer();
    sampleDeployment = await deployFixtureApp(kernel, 'sample', { SAMPLE_GREETING: 'hello from the deploy' });
    await deployFixtureApp(kernel, 'crash');
  });

  after(async () => {
    await pages?.close();
    if (d) {
      const left = await d.api('GET', '/browsers?status=active&limit=100');
      for (const s of (left.body ?? []) as { session_id: string }[]) await d.api('DELETE', `/browsers/${s.session_id}`);
      await d.stop();
    }
  });

  test('bad input is refused with 400 naming the field, unknown targets with 404', async () => {
    const cases: [object, number, string][] = [
      [{ version: 'latest', action_name: 'echo' }, 400, 'app_name'],
      [{ app_name: 'sample', action_name: 'echo' }, 400, 'version'],
      [{ app_name: 'sample', version: 'latest' }, 400, 'action_name'],
      [{ app_name: 'sample', version: 'latest', action_name: 'echo', async: true, async_timeout_seconds: 9 }, 400, 'async_timeout_seconds'],
      [{ app_name: 'sample', version: 'latest', action_name: 'echo', async: true, async_timeout_seconds: 3601 }, 400, 'async_timeout_seconds'],
      [{ app_name: 'sample', version: 'latest', action_name: 'echo', async_timeout_seconds: '60' }, 400, 'async_timeout_seconds'],
      [{ app_name: 'sample', version: 'latest', action_name: 'echo', payload: '{nope' }, 400, 'payload'],
      [{ app_name: 'sample', version: 'latest', action_name: 'echo', payload: { a: 1 } }, 400, 'payload'],
      [{ app_name: 'sample', version: 'latest', action_name: 'echo', payload: JSON.stringify('x'.repeat(140_000)) }, 400, 'payload'],
      [{ app_name: 'sample', version: 'latest', action_name: 'echo', asyncc: true }, 400, 'asyncc'],
      [{ app_name: 'nope', version: 'latest', action_name: 'echo' }, 404, 'nope'],
      [{ app_name: 'sample', version: '9.9.9', action_name: 'echo' }, 404, '9.9.9'],
      [{ app_name: 'sample', version: 'latest', action_name: 'nope' }, 404, 'nope'],
    ];
    for (const [body, status, mention] of cases) {
      const res = await d.api('POST', '/invocations', body);
      assert.equal(res.status, status, `${JSON.stringify(body)}: ${res.text}`);
      assert.match(res.body.message, new RegExp(mention));
      assert.equal(res.headers.get('x-should-retry'), 'false');
      if (status === 400) assert.match(res.body.details[0].message, new RegExp(mention));
    }
    assert.deepEqual((await d.api('GET', '/invocations?action_name=nope')).body, []);
    for (const q of ['status=done', 'since=yesterday', 'limit=0', 'limit=101']) {
      const res = await d.api('GET', `/invocations?${q}`);
      assert.equal(res.status, 400, `${q}: ${res.text}`);
    }
    assert.equal((await d.api('GET', '/invocations/nope')).status, 404);
    assert.equal((await d.api('PATCH', '/invocations/nope', { status: 'failed' })).status, 404);
    assert.equal((await d.api('GET', '/invocations/nope/events')).status, 404);
    assert.equal((await d.api('GET', '/invocations/nope/browsers')).status, 404);
    assert.equal((await d.api('DELETE', '/invocations/nope/browsers')).status, 404);
  });

  test('sync invocations of each sample action answer the final status and output', { timeout: 300_000 }, async () => {
    const echo = await kernel.invocations.create({ app_name: 'sample', version: 'latest', action_name: 'echo', payload: '{"a":1}' });
    assert.match(echo.id, ID_RE);
    assert.equal(echo.status, 'succeeded');
    assert.deepEqual(JSON.parse(echo.output!), { a: 1 });
    const got = await kernel.invocations.retrieve(echo.id);
    assert.equal(got.app_name, 'sample');
    assert.equal(got.action_name, 'echo');
    assert.equal(got.version, 'latest', 'deployed without a version: the label is latest');
    assert.equal(got.payload, '{"a":1}');
    assert.match(got.started_at, NANO_RE);
    assert.match(got.finished_at!, NANO_RE);
    assert.ok(got.finished_at! > got.started_at);

    const big = JSON.stringify({ s: 'y'.repeat(100_000) });
    const bigEcho = await kernel.invocations.create({ app_name: 'sample', version: 'latest', action_name: 'echo', payload: big });
    assert.equal(bigEcho.output, big, 'a 100 KB payload goes through');

    const noPayload = await kernel.invocations.create({ app_name: 'sample', version: 'latest', action_name: 'echo' });
    assert.equal(noPayload.status, 'succeeded');
    assert.equal(noPayload.output, undefined, 'undefined returned: no output');

    const thrown = await kernel.invocations.create({
      app_name: 'sample',
      version: 'latest',
      action_name: 'throw',
      payload: JSON.stringify({ message: 'boom on purpose' }),
    });
    assert.equal(thrown.status, 'failed');
    assert.equal(thrown.status_reason, 'boom on purpose');
    assert.equal(thrown.output, undefined);

    const slept = await kernel.invocations.create({ app_name: 'sample', version: 'latest', action_name: 'sleep', payload: '{"ms":300}' });
    assert.equal(slept.status, 'succeeded');
    assert.deepEqual(JSON.parse(slept.output!), { slept_ms: 300 });

    const logged = await kernel.invocations.create({ app_name: 'sample', version: 'latest', action_name: 'log', payload: '{"lines":2}' });
    assert.equal(logged.status, 'succeeded');
    const replay = await followAll(kernel, logged.id);
    assert.deepEqual(replay.states, ['queued', 'running', 'succeeded'], 'a finished invocation replays its states');
    assert.deepEqual([...replay.logs].sort(), ['stderr line 1', 'stderr line 2', 'stdout line 1', 'stdout line 2']);

    const env = async (name: string) => {
      const r = await kernel.invocations.create({ app_name: 'sample', version: 'latest', action_name: 'env', payload: JSON.stringify({ name }) });
      assert.equal(r.status, 'succeeded', r.status_reason);
      return { id: r.id, value: JSON.parse(r.output!).value as string | null };
    };
    assert.equal((await env('SAMPLE_GREETING')).value, 'hello from the deploy');
    assert.equal((await env('KERNEL_BASE_URL')).value, d.baseUrl);
    assert.equal((await env('ENTRYPOINT_RELPATH')).value, 'index.ts');
    assert.equal((await env('RBROWSE_HOME')).value, null, "the daemon's home is nothing of the action's");
    // The harness's own settings are taken out before the app loads (ctx.invocation_id says which invocation runs).
    for (const name of ['RBROWSE_INVOCATION_ID', 'RBROWSE_PAYLOAD', 'RBROWSE_RESULT_FD']) assert.equal((await env(name)).value, null, name);
    const key = (await env('KERNEL_API_KEY')).value!;
    assert.ok(key && key !== d.apiKey, 'each invocation gets a key of its own');
    assert.equal((await d.api('GET', '/invocations', undefined, key)).status, 401, 'the key is revoked when the invocation ends');

    const titled = await kernel.invocations.create({
      app_name: 'sample',
      version: 'latest',
      action_name: 'browser-title',
      payload: JSON.stringify({ url: `${pages.url}/hello.html` }),
    });
    assert.equal(titled.status, 'succeeded', titled.status_reason);
    const { title, session_id } = JSON.parse(titled.output!);
    assert.equal(typeof title, 'string');
    assert.ok(title.length > 0);
    const session = await d.api('GET', `/browsers/${session_id}?include_deleted=true`);
    assert.equal(session.body.invocation_id, titled.id, 'the browser the action made belongs to its invocation');
    assert.ok(session.body.deleted_at, 'the action deleted it itself');
  });

  test('an invocation takes the box started ahead for its deployment: a fresh home and /tmp, its own id on its processes', {
    timeout: 300_000,
  }, async () => {
    const scratch = () => kernel.invocations.create({ app_name: 'sample', version: 'latest', action_name: 'scratch' });
    const spares = async () =>
      (await d.api('GET', '/health', undefined, null)).body.app_spare_boxes as { ready: number; deployments: number; served: number };
    const first = await scratch();
    assert.equal(first.status, 'succeeded', first.status_reason ?? '');
    assert.deepEqual(JSON.parse(first.output!), { found: [] });
    // The first invocation of the deployment (in this test or before) has a box started for the next one.
    await waitFor(async () => (await spares()).ready >= 1, 240_000, 'a box started ahead for the sample deployment');
    const before = await spares();
    assert.equal(before.deployments, 1);
    const held = await kernel.invocations.create({
      app_name: 'sample',
      version: 'latest',
      action_name: 'sleep',
      payload: '{"ms":60000}',
      async: true,
    });
    try {
      const during = await spares();
      assert.equal(during.served, before.served + 1, 'the invocation took the box started ahead');
      // The action runs in that box, under the invocation's own id.
      const pids = await waitFor(async () => ((await childPids(d, held.id)).length ? childPids(d, held.id) : undefined), 30_000, 'the held action');
      assert.ok(pids!.length > 0);
    } finally {
      await kernel.invocations.update(held.id, { status: 'failed' });
    }
    // A box started ahead is fresh: nothing an earlier action wrote is in its home or /tmp.
    await waitFor(async () => (await spares()).ready >= 1, 240_000, 'the next box started ahead');
    const again = await scratch();
    assert.equal(again.status, 'succeeded', again.status_reason ?? '');
    assert.deepEqual(JSON.parse(again.output!), { found: [] });
    assert.ok((await spares()).served >= before.served + 2);
  });

  test('async invocations move queued -> running -> terminal, as the SDK follow sees them', { timeout: 300_000 }, async () => {
    const cases: [string, object | undefined, string][] = [
      ['echo', { b: 2 }, 'succeeded'],
      ['throw', undefined, 'failed'],
      ['sleep', { ms: 500 }, 'succeeded'],
      ['log', { lines: 3 }, 'succeeded'],
      ['env', undefined, 'succeeded'],
      ['browser-title', { url: `${pages.url}/hello.html` }, 'succeeded'],
    ];
    for (const [action, payload, expected] of cases) {
      const res = await invoke(action, { async: true, ...(payload ? { payload: JSON.stringify(payload) } : {}) });
      assert.equal(res.status, 202, res.text);
      assert.equal(res.body.status, 'queued');
      assert.equal(res.body.finished_at, null);
      const seen = await followAll(kernel, res.body.id);
      assert.deepEqual(seen.states, ['queued', 'running', expected], action);
      assert.equal(seen.final.status, expected);
      assert.equal(seen.errors.length, expected === 'failed' ? 1 : 0, `${action}: ${seen.errors.join()}`);
      const got = await kernel.invocations.retrieve(res.body.id);
      assert.deepEqual(got, seen.final, `${action}: the last state event is the invocation`);
      if (action === 'log') assert.equal(seen.logs.length, 6);
      if (action === 'echo') assert.deepEqual(JSON.parse(got.output!), { b: 2 });
      await leftNothing(d, res.body.id);
    }
  });

  test('async_timeout_seconds ends a hanging action failed and kills it', { timeout: 120_000 }, async () => {
    const res = await invoke('sleep', { async: true, async_timeout_seconds: 10, payload: '{"ms":600000}' });
    assert.equal(res.status, 202);
    await waitFor(async () => (await childPids(d, res.body.id)).length > 0, 30_000, 'the child to run');
    // rbrowse watch's feed lists it while it runs, and drops it once it has ended.
    const feed = new AbortController();
    const listed: boolean[] = [];
    const reading = (async () => {
      for await (const e of sseEvents<any>(`${d.baseUrl}/watch`, { authorization: `Bearer ${d.apiKey}` }, feed.signal)) {
        if (e.event === 'snapshot') listed.push(e.invocations.some((i: any) => i.id === res.body.id && i.status === 'running'));
      }
    })().catch(() => {});
    await waitFor(() => listed.includes(true), 10_000, 'the running invocation in the watch feed');
    const seen = await followAll(kernel, res.body.id);
    await waitFor(() => listed.at(-1) === false, 10_000, 'the ended invocation to leave the watch feed');
    feed.abort();
    await reading;
    assert.deepEqual(seen.states, ['queued', 'running', 'failed']);
    assert.match(seen.final.status_reason, /timed out after 10 s/);
    assert.match(seen.errors[0]!, /timed out/);
    assert.deepEqual(await childPids(d, res.body.id), []);
  });

  test('a sync call longer than the cap answers running; PATCH failed then stops the child', { timeout: 120_000 }, async () => {
    const started = Date.now();
    const res = await invoke('sleep', { payload: '{"ms":600000}' });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'running');
    assert.ok(Date.now() - started >= SYNC_CAP_MS - 1000);
    const pids = await childPids(d, res.body.id);
    assert.ok(pids.length > 0, 'the action still runs');

    const patched = await kernel.invocations.update(res.body.id, { status: 'failed', output: '"given up"' });
    assert.equal(patched.status, 'failed');
    assert.equal(patched.output, '"given up"');
    assert.match(patched.finished_at!, NANO_RE);
    assert.equal(patched.app_name, 'sample', 'the full invocation object');
    // Stopped by the answer's time or moments after (its box ends in the background).
    await waitFor(() => pids.every((pid) => !isAlive(pid)), 15_000, `the action's processes (${pids.join(', ')}) to be gone`);
    assert.equal((await kernel.invocations.retrieve(res.body.id)).status, 'failed');

    // Any state may be replaced, as the spec's table says.
    const again = await kernel.invocations.update(res.body.id, { status: 'succeeded' });
    assert.equal(again.status, 'succeeded');
    assert.equal(again.output, '"given up"');
  });

  test('PATCH succeeded on a running action stops it too, including what it spawned', { timeout: 120_000 }, async () => {
    const res = await invoke('spawn-and-hang', { async: true }, 'crash');
    let pids: { pid: number; grandchild: number } | undefined;
    const following = followAll(kernel, res.body.id, (line) => {
      if (line.startsWith('{')) pids = JSON.parse(line);
    });
    await waitFor(() => pids, 60_000, 'the action to log its pids');
    // Its pids are its box's; on the host its processes are found below the box's bubblewrap.
    const node = async () => {
      const all = await Promise.all(
        (await childPids(d, res.body.id)).map(async (p) => ({
          p,
          cmd: (await readFile(`/proc/${p}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' '),
        })),
      );
      return all.filter((x) => x.cmd.includes('harness.mjs run') || x.cmd.startsWith('sleep 1000')).map((x) => x.p);
    };
    const running = await node();
    assert.ok(running.length >= 2, `the action and the process it started run (${running.join(', ')})`);
    const patched = await kernel.invocations.update(res.body.id, { status: 'succeeded', output: '{"ok":true}' });
    assert.equal(patched.status, 'succeeded');
    assert.equal(patched.output, '{"ok":true}');
    // As for PATCH failed: stopped by the answer's time or moments after (its box ends in the background).
    await waitFor(
      () => running.every((pid) => !isAlive(pid)),
      15_000,
      `the action and what it started in the background (${running.join(', ')}) to be gone`,
    );
    const seen = await following;
    assert.deepEqual(seen.states.slice(-1), ['succeeded'], 'the stream ends at the PATCHed state');
  });

  test('browsers tied to an invocation are listed, ended by DELETE .../browsers and when it ends', { timeout: 300_000 }, async () => {
    const res = await invoke('sleep', { async: true, payload: '{"ms":600000}' });
    const id = res.body.id as string;
    const create = () => d.api('POST', '/browsers', { headless: true, invocation_id: id });
    const first = await create();
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.invocation_id, id);
    const listed = await kernel.invocations.listBrowsers(id);
    assert.deepEqual(
      listed.browsers.map((b) => b.session_id),
      [first.body.session_id],
    );
    assert.deepEqual(await other.invocations.listBrowsers(id).catch((e) => e.status), 404);

    assert.equal((await d.api('DELETE', `/invocations/${id}/browsers`, undefined, otherKey)).status, 404);
    assert.equal((await d.api('GET', `/browsers/${first.body.session_id}`)).status, 200, 'another org cannot end them');
    const deleted = await d.api('DELETE', `/invocations/${id}/browsers`);
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, '');
    assert.deepEqual((await kernel.invocations.listBrowsers(id)).browsers, []);
    assert.ok((await d.api('GET', `/browsers/${first.body.session_id}?include_deleted=true`)).body.deleted_at);
    assert.equal((await kernel.invocations.retrieve(id)).status, 'running', 'the invocation itself goes on');

    const second = await create();
    const third = await create();
    assert.equal((await kernel.invocations.listBrowsers(id)).browsers.length, 2);
    await kernel.invocations.update(id, { status: 'failed' });
    for (const s of [second, third]) {
      const got = await d.api('GET', `/browsers/${s.body.session_id}?include_deleted=true`);
      assert.ok(got.body.deleted_at, 'ended with the invocation');
    }
    assert.deepEqual((await kernel.invocations.listBrowsers(id)).browsers, []);

    const late = await create();
    assert.equal(late.status, 409, `an ended invocation takes no browsers: ${late.text}`);
    assert.equal((await d.api('POST', '/browsers', { headless: true, invocation_id: 'nope' })).status, 404);
    const foreign = await d.api('POST', '/browsers', { headless: true, invocation_id: id }, otherKey);
    assert.equal(foreign.status, 404, "another org's invocation is not found");

    // An action that succeeds leaves its browsers running (listed still, until DELETE .../browsers);
    // one that fails by itself ends them.
    const short = await invoke('sleep', { async: true, payload: '{"ms":20000}' });
    await waitFor(async () => (await kernel.invocations.retrieve(short.body.id)).status === 'running', 60_000, 'running');
    const tied = await d.api('POST', '/browsers', { headless: true, invocation_id: short.body.id });
    assert.equal(tied.status, 200, tied.text);
    const seen = await followAll(kernel, short.body.id);
    assert.equal(seen.final.status, 'succeeded');
    assert.equal((await d.api('GET', `/browsers/${tied.body.session_id}`)).status, 200, 'alive after the success');
    assert.deepEqual(
      (await kernel.invocations.listBrowsers(short.body.id)).browsers.map((b) => b.session_id),
      [tied.body.session_id],
    );
    assert.equal((await d.api('POST', '/browsers', { headless: true, invocation_id: short.body.id })).status, 409, 'but it takes no new ones');
    assert.equal((await d.api('DELETE', `/invocations/${short.body.id}/browsers`)).status, 204);
    assert.ok((await d.api('GET', `/browsers/${tied.body.session_id}?include_deleted=true`)).body.deleted_at);

    const failing = await invoke('sleep', { async: true, payload: '{"ms":600000}', async_timeout_seconds: 10 });
    await waitFor(async () => (await kernel.invocations.retrieve(failing.body.id)).status === 'running', 60_000, 'running');
    const doomed = await d.api('POST', '/browsers', { headless: true, invocation_id: failing.body.id });
    assert.equal(doomed.status, 200, doomed.text);
    assert.equal((await followAll(kernel, failing.body.id)).final.status, 'failed');
    assert.ok((await d.api('GET', `/browsers/${doomed.body.session_id}?include_deleted=true`)).body.deleted_at, 'ended with the failed action');
  });

  test('crashing, aborting and memory-hungry actions fail their invocation; the daemon serves on', { timeout: 300_000 }, async () => {
    // A sync call answers at the lowered cap with the invocation still running on a loaded machine: its end is awaited then.
    const crash = async (action: string) => {
      const created = await kernel.invocations.create({ app_name: 'crash', version: 'latest', action_name: action });
      if (created.status !== 'queued' && created.status !== 'running') return created;
      const ended = await waitFor(
        async () => {
          const now = await kernel.invocations.retrieve(created.id);
          return now.status === 'queued' || now.status === 'running' ? undefined : now;
        },
        120_000,
        `the ${action} invocation to end`,
      );
      return ended!;
    };
    const exited = await crash('exit');
    assert.equal(exited.status, 'failed');
    assert.match(exited.status_reason!, /exited with code 1/);
    const aborted = await crash('abort');
    assert.equal(aborted.status, 'failed');
    assert.match(aborted.status_reason!, /SIGABRT|signal|code 134/i, aborted.status_reason);
    const hog = await crash('hog');
    assert.equal(hog.status, 'failed');
    assert.match(hog.status_reason!, /heap|memory|SIGABRT|SIGKILL|code/i, hog.status_reason);
    assert.equal((await d.api('GET', '/health')).status, 200);
    for (const inv of [exited, aborted, hog]) await leftNothing(d, inv.id);
    const seen = await followAll(kernel, exited.id);
    assert.ok(seen.logs.includes('about to exit'));
  });

  test('log events are kept bounded, long lines in pieces, for a late subscriber', { timeout: 300_000 }, async () => {
    const flood = await kernel.invocations.create({ app_name: 'crash', version: 'latest', action_name: 'flood', payload: '{"lines":20000}' });
    assert.equal(flood.status, 'succeeded', flood.status_reason);
    const seen = await followAll(kernel, flood.id);
    assert.ok(seen.logs.length < 20_000, `kept ${seen.logs.length} lines`);
    assert.equal(seen.logs.at(-1), 'line 19999', 'the newest lines are the ones kept');
    assert.ok(seen.logs.every((l) => l.length <= 16_384));
    assert.deepEqual(seen.states, ['queued', 'running', 'succeeded']);
  });

  test('list: filters, newest first, pagination headers, SDK auto-paging', { timeout: 120_000 }, async () => {
    const a = await kernel.invocations.create({ app_name: 'sample', version: 'latest', action_name: 'echo', payload: '1' });
    const b = await kernel.invocations.create({ app_name: 'sample', version: 'latest', action_name: 'echo', payload: '2' });
    const page = await d.api('GET', '/invocations?action_name=echo&limit=1');
    assert.equal(page.status, 200);
    assert.deepEqual(
      page.body.map((i: any) => i.id),
      [b.id],
      'newest first',
    );
    assert.equal(page.headers.get('x-has-more'), 'true');
    assert.equal(page.headers.get('x-next-offset'), '1');
    assert.equal((await d.api('GET', '/invocations?action_name=echo&limit=1&offset=1')).body[0].id, a.id);

    const all: string[] = [];
    for await (const i of kernel.invocations.list({ app_name: 'sample', action_name: 'echo', status: 'succeeded', limit: 2 })) all.push(i.id);
    assert.ok(all.includes(a.id) && all.includes(b.id));
    assert.equal(new Set(all).size, all.length);
    const ids = async (q: string) => ((await d.api('GET', `/invocations?limit=100&${q}`)).body as any[]).map((i) => i.id);
    assert.ok(!(await ids('status=failed')).includes(a.id));
    assert.ok((await ids(`deployment_id=${sampleDeployment}`)).includes(a.id));
    assert.deepEqual(await ids('deployment_id=nope'), []);
    assert.ok((await ids(`query=${a.id}`)).includes(a.id));
    assert.ok((await ids('since=1h')).includes(a.id));
    assert.deepEqual(await ids(`since=${new Date(Date.now() + 60_000).toISOString()}`), []);
    assert.deepEqual(await ids('app_name=crash&action_name=echo'), []);
    const version = (await kernel.invocations.retrieve(a.id)).version;
    assert.ok((await ids(`version=${encodeURIComponent(version)}`)).includes(a.id));
  });

  test("another org's key gets 404 for every invocation route and sees none in lists", async () => {
    const mine = await kernel.invocations.create({ app_name: 'sample', version: 'latest', action_name: 'echo' });
    for (const [method, path, body] of [
      ['GET', `/invocations/${mine.id}`],
      ['PATCH', `/invocations/${mine.id}`, { status: 'failed' }],
      ['GET', `/invocations/${mine.id}/events`],
      ['GET', `/invocations/${mine.id}/browsers`],
      ['DELETE', `/invocations/${mine.id}/browsers`],
    ] as [string, string, object?][]) {
      const res = await d.api(method, path, body, otherKey);
      assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
      assert.equal(res.body.code, 'not_found');
    }
    assert.deepEqual((await d.api('GET', '/invocations', undefined, otherKey)).body, []);
    const theirs = await d.api('POST', '/invocations', { app_name: 'sample', version: 'latest', action_name: 'echo' }, otherKey);
    assert.equal(theirs.status, 404, "another org's app is not found");
    assert.equal((await kernel.invocations.retrieve(mine.id)).status, 'succeeded', 'untouched');
  });

  test('CLI: invoke --sync, async following, failure exit status, invocations subcommands', { timeout: 300_000 }, async () => {
    const sync = await d.cli(['invoke', 'sample', 'echo', '-p', '{"a":1}', '--sync']);
    assert.equal(sync.exitCode, 0, sync.stderr);
    assert.deepEqual(JSON.parse(sync.stdout), { a: 1 });
    const id = /invocation ([a-z0-9]{24})/.exec(sync.stderr)![1]!;
    assert.match(sync.stderr, /succeeded/);

    const followed = await d.cli(['invoke', 'sample', 'log', '-p', '{"lines":2}', '--version', 'latest', '--async-timeout-seconds', '60']);
    assert.equal(followed.exitCode, 0, followed.stderr);
    assert.deepEqual(JSON.parse(followed.stdout), { lines: 2 });
    assert.match(followed.stderr, /queued/);
    assert.match(followed.stderr, /stdout line 2/);
    assert.match(followed.stderr, /stderr line 1/);
    assert.match(followed.stderr, /succeeded/);

    const failed = await d.cli(['invoke', 'sample', 'throw', '-p', '{"message":"cli boom"}', '--json']);
    assert.equal(failed.exitCode, 1);
    assert.equal(JSON.parse(failed.stdout).status, 'failed');
    assert.match(failed.stderr, /cli boom/);
    assert.notEqual((await d.cli(['invoke', 'sample', 'echo', '-p', '{nope'])).exitCode, 0);
    assert.equal((await d.cli(['invoke', 'nope', 'echo'])).exitCode, 1);

    const got = await d.cli(['invocations', 'get', id, '--json']);
    assert.equal(JSON.parse(got.stdout).id, id);
    const listed = await d.cli(['invocations', 'list', '--app-name', 'sample', '--action-name', 'echo', '-q']);
    assert.ok(listed.stdout.split('\n').includes(id));
    const events = await d.cli(['invocations', 'events', id, '--json']);
    assert.equal(events.exitCode, 0, events.stderr);
    assert.deepEqual(
      events.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .filter((e) => e.event === 'invocation_state')
        .map((e) => e.invocation.status),
      ['queued', 'running', 'succeeded'],
    );
    const updated = await d.cli(['invocations', 'update', id, '--status', 'failed', '--output', '"x"', '--json']);
    assert.equal(JSON.parse(updated.stdout).status, 'failed');
    assert.equal((await d.cli(['invocations', 'delete-browsers', id])).exitCode, 0);
    assert.equal((await d.cli(['invocations', 'browsers', id, '--json'])).stdout.trim(), '[]');
  });

  test('CLI: Ctrl-C marks the followed invocation failed, stops it and ends its browsers', { timeout: 180_000 }, async () => {
    const child = execa(CLI, ['invoke', 'sample', 'sleep', '-p', '{"ms":600000}'], { env: d.env, extendEnv: false, reject: false });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c));
    await waitFor(() => /: running/.test(stderr), 60_000, 'the CLI to show the invocation running');
    const id = /invocation ([a-z0-9]{24})/.exec(stderr)![1]!;
    const tied = await d.api('POST', '/browsers', { headless: true, invocation_id: id });
    assert.equal(tied.status, 200, tied.text);
    const pids = await childPids(d, id);
    assert.ok(pids.length > 0);
    child.kill('SIGINT');
    const result = await child;
    assert.equal(result.exitCode, 130, stderr);
    const inv = await kernel.invocations.retrieve(id);
    assert.equal(inv.status, 'failed');
    for (const pid of pids) assert.ok(!isAlive(pid));
    assert.ok((await d.api('GET', `/browsers/${tied.body.session_id}?include_deleted=true`)).body.deleted_at);
  });

  test('a daemon stop kills running actions and leaves their invocations failed', { timeout: 180_000 }, async () => {
    const res = await invoke('sleep', { async: true, payload: '{"ms":600000}' });
    await waitFor(async () => (await childPids(d, res.body.id)).length > 0, 60_000, 'the child to run');
    const pids = await childPids(d, res.body.id);
    assert.equal((await d.cli(['daemon', 'stop'])).exitCode, 0);
    for (const pid of pids) assert.ok(!isAlive(pid), `pid ${pid} outlived the daemon`);
    const restarted = await d.cli(['daemon', 'start']);
    assert.equal(restarted.exitCode, 0, restarted.stderr);
    d.baseUrl = restarted.stdout.trim();
    const got = await d.api('GET', `/invocations/${res.body.id}`);
    assert.equal(got.body.status, 'failed');
    assert.match(got.body.status_reason, /daemon stopped/);
    // A finished invocation whose logs are no longer in memory still replays its final state.
    const k = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    assert.deepEqual((await followAll(k, res.body.id)).states, ['failed']);
  });

  test('after a kill -9 of the daemon, the orphaned action ends with its box and the restart fails its invocation', {
    timeout: 180_000,
  }, async () => {
    const res = await invoke('env', { async: true, payload: '{"name":"KERNEL_API_KEY"}' });
    await waitFor(async () => (await d.api('GET', `/invocations/${res.body.id}`)).body.status === 'succeeded', 60_000, 'env');
    const hanging = await invoke('sleep', { async: true, payload: '{"ms":600000}' });
    await waitFor(async () => (await childPids(d, hanging.body.id)).length > 0, 60_000, 'the child to run');
    const pids = await childPids(d, hanging.body.id);
    const { pid } = JSON.parse((await d.cli(['daemon', 'status', '--json'])).stdout);
    process.kill(pid, 'SIGKILL');
    await waitFor(() => !isAlive(pid), 10_000, 'the daemon to die');
    // The launcher outlives the daemon only to end its boxes: nothing of the action is left behind.
    await waitFor(() => pids.every((p) => !isAlive(p)), 20_000, `the orphaned action's processes (${pids.join(', ')}) to end`);
    const restarted = await d.cli(['daemon', 'start']);
    assert.equal(restarted.exitCode, 0, restarted.stderr);
    d.baseUrl = restarted.stdout.trim();
    const got = await d.api('GET', `/invocations/${hanging.body.id}`);
    assert.equal(got.body.status, 'failed');
    assert.match(got.body.status_reason, /daemon stopped while the invocation ran/);
    assert.match(got.body.finished_at, NANO_RE);
  });
});
