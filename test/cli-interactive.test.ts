import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createElement as h } from 'react';
import { render } from 'ink-testing-library';
import WebSocket from 'ws';
import type { WatchSession } from '../src/api/watch.js';
import { PassThrough } from 'node:stream';
import { downloadWithProgress, followEvents } from '../cli/progress.js';
import { sseEvents } from '../cli/sse.js';
import type { FeedEvent, FeedSource, FeedState } from '../cli/watch/connection.js';
import { Dashboard, type DashboardActions } from '../cli/watch/dashboard.js';
import { countdown } from '../cli/output.js';
import { visibleWindow } from '../cli/watch/model.js';
import { isAlive } from '../daemon/lib/procs.js';
import { CLI, ROOT, sleep, startTestDaemon, waitFor, type TestDaemon, sansUsage } from './helpers/daemon.js';
import { TmuxTerminal } from './helpers/tmux.js';

const ID_RE = /^[a-z0-9]{24}$/;
type WatchSnapshot = Extract<FeedEvent, { event: 'snapshot' }>;
const ESC = '\x1b';

/** Reads GET /watch in the background, keeping every event, until stop(). */
class FeedReader {
  readonly events: FeedEvent[] = [];
  private readonly abort = new AbortController();
  readonly done: Promise<unknown>;

  constructor(baseUrl: string, key: string | undefined) {
    this.done = (async () => {
      for await (const e of sseEvents<FeedEvent>(`${baseUrl}/watch`, key ? { authorization: `Bearer ${key}` } : {}, this.abort.signal))
        this.events.push(e);
    })().catch((err: unknown) => err);
  }

  get snapshots(): WatchSnapshot[] {
    return this.events.filter((e): e is WatchSnapshot => e.event === 'snapshot');
  }

  /** The first snapshot (from `from` on) whose sessions satisfy `check`. */
  async snapshotWhere(check: (s: WatchSnapshot) => boolean, what: string, from = 0): Promise<WatchSnapshot> {
    return (await waitFor(() => this.snapshots.slice(from).find(check), 30_000, what))!;
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.done;
  }
}

const sessionIn = (s: WatchSnapshot, id: string): WatchSession | undefined => s.sessions.find((w) => w.session.session_id === id);

describe('GET /watch: the live feed', () => {
  let d: TestDaemon;
  before(async () => {
    d = await startTestDaemon();
  });
  after(async () => {
    await d?.stop();
  });

  test('needs an API key, is in the OpenAPI document as an event stream', async () => {
    const res = await fetch(`${d.baseUrl}/watch`);
    assert.equal(res.status, 401);
    assert.equal((await res.json()).code, 'unauthorized');
    const doc = await d.api('GET', '/openapi.json');
    const op = doc.body.paths['/watch'].get;
    assert.equal(op.operationId, 'watch');
    assert.deepEqual(Object.keys(op.responses['200'].content), ['text/event-stream']);
  });

  test('snapshots on change with clients and the inactivity deadline, ticks each second, per organization', async () => {
    const feed = new FeedReader(d.baseUrl, d.apiKey);
    const otherKey = (await d.cli(['auth', 'create-key', '--org', 'watch-other'])).stdout.trim();
    const other = new FeedReader(d.baseUrl, otherKey);
    let id: string | undefined;
    try {
      const first = await feed.snapshotWhere(() => true, 'the first snapshot');
      assert.equal(feed.events[0]?.event, 'snapshot', 'the stream starts with a snapshot');
      assert.deepEqual({ ...first, server_time: undefined }, { event: 'snapshot', server_time: undefined, sessions: [], pools: [], invocations: [] });

      const created = await d.api('POST', '/browsers', { headless: true, timeout_seconds: 120, name: 'watched' });
      assert.equal(created.status, 200, created.text);
      id = created.body.session_id as string;
      const shown = await feed.snapshotWhere((s) => Boolean(sessionIn(s, id!)), 'the new session in a snapshot');
      const w = sessionIn(shown, id)!;
      assert.deepEqual(w.session, sansUsage((await d.api('GET', `/browsers/${id}`)).body), 'the snapshot carries the API object (its usage aside)');
      assert.equal(w.cdp_clients, 0);
      assert.equal(w.viewers, 0);
      const left = Date.parse(w.timeout_at!) - Date.parse(shown.server_time);
      assert.ok(left > 100_000 && left <= 120_000, `timeout_at is ${left} ms after server_time, not within the 120 s timeout`);

      // A CDP client stops the countdown; leaving restarts it from then. The count is taken before
      // the connect: the snapshot showing the client may arrive before the websocket's open does,
      // and an unchanged state is never sent again.
      const from = feed.snapshots.length;
      const ws = new WebSocket(created.body.cdp_ws_url);
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      const connected = await feed.snapshotWhere((s) => sessionIn(s, id!)?.cdp_clients === 1, 'cdp_clients 1', from);
      assert.equal(sessionIn(connected, id)!.timeout_at, null, 'no countdown while a client is connected');
      const closedAt = Date.now();
      ws.close();
      const after = feed.snapshots.length;
      const released = await feed.snapshotWhere((s) => sessionIn(s, id!)?.cdp_clients === 0, 'cdp_clients back to 0', after);
      const restarted = Date.parse(sessionIn(released, id)!.timeout_at!);
      assert.ok(restarted >= closedAt + 119_000, `the countdown restarted when the client left (timeout_at ${restarted - closedAt} ms after)`);

      // Ticks: one a second or so, the server's clock moving forward.
      const ticks = await waitFor(
        () => {
          const t = feed.events.filter((e) => e.event === 'tick');
          return t.length >= 3 ? t : undefined;
        },
        30_000,
        'three ticks',
      );
      for (let i = 1; i < ticks!.length; i++) assert.ok(Date.parse(ticks![i]!.server_time) > Date.parse(ticks![i - 1]!.server_time));

      // Unchanged state is not sent again.
      const keys = feed.snapshots.map((s) => JSON.stringify({ ...s, server_time: undefined }));
      for (let i = 1; i < keys.length; i++) assert.notEqual(keys[i], keys[i - 1], `snapshots ${i - 1} and ${i} are the same`);

      // Another organization never sees it.
      await other.snapshotWhere(() => true, "the other org's first snapshot");
      assert.ok(
        other.events.some((e) => e.event === 'tick') || (await waitFor(() => other.events.some((e) => e.event === 'tick'), 10_000, 'a tick')),
      );
      for (const s of other.snapshots) assert.deepEqual(s.sessions, []);

      // Deleted: gone from the next snapshot.
      const beforeDelete = feed.snapshots.length;
      assert.equal((await d.api('DELETE', `/browsers/${id}`)).status, 204);
      await feed.snapshotWhere((s) => !sessionIn(s, id!), 'the session gone after DELETE', beforeDelete);
      id = undefined;
    } finally {
      await feed.stop();
      await other.stop();
      if (id) await d.api('DELETE', `/browsers/${id}`);
    }
  });

  test('the progress helpers follow a real event stream and a real download, without animation off a terminal', async () => {
    assert.equal(process.stdout.isTTY, undefined, 'this test expects the runner to pipe stdout');
    const abort = new AbortController();
    const ticked = await followEvents(
      'following',
      sseEvents<FeedEvent>(`${d.baseUrl}/watch`, { authorization: `Bearer ${d.apiKey}` }, abort.signal),
      (e) => (e.event === 'tick' ? e.server_time : undefined),
    );
    abort.abort();
    assert.ok(Math.abs(Date.parse(ticked) - Date.now()) < 60_000, ticked);
    await assert.rejects(
      followEvents(
        'following',
        (async function* () {
          yield 1;
        })(),
        () => undefined,
      ),
      /the event stream ended early/,
    );

    const res = await fetch(`${d.baseUrl}/openapi.json`, { headers: { authorization: `Bearer ${d.apiKey}` } });
    const sink = new PassThrough();
    const chunks: Buffer[] = [];
    sink.on('data', (c: Buffer) => chunks.push(c));
    const n = await downloadWithProgress('openapi.json', res, sink);
    const text = Buffer.concat(chunks).toString('utf8');
    assert.equal(n, Buffer.byteLength(text));
    assert.equal(JSON.parse(text).openapi, '3.1.0');
  });

  test('pools with their counts, and their idle browsers with no countdown', async () => {
    const feed = new FeedReader(d.baseUrl, d.apiKey);
    let poolId: string | undefined;
    try {
      const pool = await d.api('POST', '/browser_pools', { name: 'watched-pool', size: 1, headless: true, fill_rate_per_minute: 100 });
      assert.equal(pool.status, 200, pool.text);
      poolId = pool.body.id;
      const filled = await feed.snapshotWhere((s) => s.pools.some((p) => p.id === poolId && p.available_count === 1), 'the pool filled');
      const p = filled.pools.find((x) => x.id === poolId)!;
      assert.deepEqual(
        { ...p, available_count: undefined },
        { ...(await d.api('GET', `/browser_pools/${poolId}`)).body, available_count: undefined },
      );
      const idle = filled.sessions.find((w) => w.session.pool?.id === poolId);
      assert.ok(idle, 'the idle pool browser is listed');
      assert.equal(idle.timeout_at, null, 'an idle pool browser never times out');

      const acquired = await d.api('POST', `/browser_pools/${poolId}/acquire`, {});
      assert.equal(acquired.status, 200, acquired.text);
      const leased = await feed.snapshotWhere((s) => s.pools.some((x) => x.id === poolId && x.acquired_count === 1), 'acquired_count 1');
      assert.ok(sessionIn(leased, acquired.body.session_id)?.timeout_at, 'an acquired browser counts down');
    } finally {
      await feed.stop();
      if (poolId) await d.api('DELETE', `/browser_pools/${poolId}`, { force: true });
    }
  });
});

describe('rbrowse watch in a terminal (tmux)', () => {
  let d: TestDaemon;
  let term: TmuxTerminal | undefined;
  const created: string[] = [];
  before(async () => {
    d = await startTestDaemon();
  });
  after(async () => {
    term?.stop();
    for (const id of created) await d.api('DELETE', `/browsers/${id}`).catch(() => {});
    await d?.stop();
  });

  test('shows sessions live, deletes with d, creates with c, survives a daemon restart, resizes, quits with q', async () => {
    term = TmuxTerminal.start([CLI, 'watch'], { env: d.env, columns: 160, rows: 40, cwd: ROOT });
    await term.waitForScreen((s) => s.includes('● live') && s.includes('Sessions (0)'), 60_000, 'the dashboard, live');
    const watchPid = term.commandPid();

    // A session made by another process is on screen within a second.
    const made = await d.cli(['create', '--name', 'from-outside', '-q']);
    assert.equal(made.exitCode, 0, made.stderr);
    const id = made.stdout.trim();
    assert.match(id, ID_RE);
    created.push(id);
    const madeAt = Date.now();
    const screen = await term.waitForScreen((s) => s.includes(id), 1000, `session ${id} on the dashboard`);
    const row = screen.split('\n').find((l) => l.includes(id))!;
    assert.match(
      row,
      /from-outside\s+headful\s+1920x1080@25\s+\d+s\s+0\s+0\s+\d:\d\d/,
      `the row shows name, mode, viewport, age, clients and time left: ${row}`,
    );
    process.stderr.write(`# watch showed the new session ${Date.now() - madeAt} ms after the create returned\n`);

    // enter: details, with the session's own URLs.
    const session = (await d.api('GET', `/browsers/${id}`)).body;
    term.keys('Enter');
    // Whole (over several lines), not cut with …: it can be copied.
    await term.waitForScreen(
      (s) => s.includes('Details') && s.replace(/\n/g, '').includes(session.cdp_ws_url),
      10_000,
      'the details pane, URLs whole',
    );
    term.keys('Escape');

    // l: the live view URL, printed whole in the status line (and copied); u: the CDP URL.
    term.keys('l');
    const live = await term.waitForScreen((s) => s.includes('live view: '), 10_000, 'the live view URL');
    assert.ok(live.replace(/\n/g, '').includes(session.browser_live_view_url), `the live view URL of ${id} is shown whole:\n${live}`);
    term.keys('u');
    const cdpShown = await term.waitForScreen((s) => s.includes('copied cdp_ws_url: '), 10_000, 'the CDP URL');
    assert.ok(cdpShown.replace(/\n/g, '').includes(session.cdp_ws_url), `the CDP URL of ${id} is shown whole:\n${cdpShown}`);

    // c, h: a headless session, really created.
    term.keys('c');
    await term.waitForScreen((s) => s.includes('Create a session'), 10_000, 'the create prompt');
    term.keys('h');
    const createdScreen = await term.waitForScreen((s) => /created [a-z0-9]{24}/.test(s), 60_000, 'the created message');
    const newId = /created ([a-z0-9]{24})/.exec(createdScreen)![1]!;
    created.push(newId);
    const got = await d.api('GET', `/browsers/${newId}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.headless, true);
    await term.waitForScreen((s) => s.includes('Sessions (2)'), 10_000, 'two sessions listed');

    // d then y: deleted for real; select it first (the new one is selected after c).
    for (
      let i = 0;
      i < 5 &&
      !term
        .screen()
        .split('\n')
        .some((l) => l.startsWith('›') && l.includes(id));
      i++
    ) {
      term.keys('Down');
      await sleep(100);
    }
    assert.ok(
      term
        .screen()
        .split('\n')
        .some((l) => l.startsWith('›') && l.includes(id)),
      `cannot select ${id}:\n${term.screen()}`,
    );
    term.keys('d');
    await term.waitForScreen((s) => s.includes(`Delete session ${id}? y/N`), 10_000, 'the delete confirmation');
    assert.equal((await d.api('GET', `/browsers/${id}`)).status, 200, 'nothing is deleted before the confirmation');
    term.keys('y');
    await term.waitForScreen(
      (s) => s.includes(`deleted ${id}`) && !s.split('\n').some((l) => l.startsWith('›') && l.includes(id)),
      60_000,
      'the deletion',
    );
    const gone = await d.api('GET', `/browsers/${id}`);
    assert.equal(gone.status, 404, `session ${id} still answers ${gone.status} after d, y`);
    await term.waitForScreen((s) => s.includes('Sessions (1)'), 10_000, 'one session left');

    // The daemon restarts (on another port: RBROWSE_PORT=0): the dashboard says so and comes back.
    assert.equal((await d.cli(['daemon', 'stop'])).exitCode, 0);
    await term.waitForScreen((s) => s.includes('reconnecting'), 15_000, 'the reconnecting state');
    const restarted = await d.cli(['daemon', 'start']);
    assert.equal(restarted.exitCode, 0, restarted.stderr);
    d.baseUrl = restarted.stdout.trim();
    await term.waitForScreen(
      (s) => s.includes('● live') && s.includes(d.baseUrl) && s.includes('Sessions (0)'),
      30_000,
      'live again on the new daemon',
    );
    const again = await d.api('POST', '/browsers', { headless: true });
    assert.equal(again.status, 200, again.text);
    created.push(again.body.session_id);
    await term.waitForScreen((s) => s.includes(again.body.session_id), 10_000, 'a session of the restarted daemon');

    // Resized: the layout follows the window.
    term.resize(90, 20);
    const small = await term.waitForScreen(
      (s) => s.split('\n').length === 20 && s.split('\n')[19]!.includes('q quit') && s.split('\n').some((l) => l.includes('…')),
      10_000,
      'the dashboard redrawn at 90x20',
    );
    for (const l of small.split('\n')) assert.ok([...l].length <= 90, `a line wider than the window: ${l}`);
    term.resize(160, 40);
    await term.waitForScreen(
      (s) => s.split('\n').length === 40 && s.includes(again.body.session_id) && !s.includes('…'),
      10_000,
      'the dashboard redrawn at 160x40',
    );

    // q: the process exits, cleanly, with the terminal restored.
    term.keys('q');
    const { status } = await term.waitForExit(10_000);
    assert.equal(status, 0);
    assert.equal(isAlive(watchPid), false, `rbrowse watch (pid ${watchPid}) is still running`);
  });

  test('without a terminal it refuses with a usage error', async () => {
    const r = await d.cli(['watch']);
    assert.equal(r.exitCode, 2);
    assert.match(r.stderr, /needs a terminal/);
  });
});

describe('output on a terminal', () => {
  let d: TestDaemon;
  const terms: TmuxTerminal[] = [];
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const t = TmuxTerminal.start([CLI, ...args], { env: { ...d.env, ...env }, columns: 200, rows: 50, cwd: ROOT });
    terms.push(t);
    return t.waitForExit(120_000, { escapes: true });
  };
  before(async () => {
    d = await startTestDaemon();
  });
  after(async () => {
    for (const t of terms) t.stop();
    const left = await d.api('GET', '/browsers?limit=100');
    for (const s of left.body ?? []) await d.api('DELETE', `/browsers/${s.session_id}`);
    await d?.stop();
  });

  test('colours on a terminal, none with NO_COLOR', async () => {
    // d.env carries NO_COLOR=1; an empty value still counts as set for node, so it is removed.
    const { NO_COLOR: _n, ...colourEnv } = d.env;
    const coloured = TmuxTerminal.start([CLI, 'ls'], { env: colourEnv, columns: 200, rows: 50, cwd: ROOT });
    terms.push(coloured);
    const withColour = await coloured.waitForExit(60_000, { escapes: true });
    assert.equal(withColour.status, 0);
    assert.ok(withColour.output.includes(`${ESC}[1mSESSION`), `the table header is bold on a terminal: ${JSON.stringify(withColour.output)}`);

    const plain = await run(['ls'], { NO_COLOR: '1' });
    assert.equal(plain.status, 0);
    assert.ok(plain.output.startsWith('SESSION'), plain.output);
    assert.ok(!plain.output.includes(ESC), `NO_COLOR output has escapes: ${JSON.stringify(plain.output)}`);

    const noColorError = await run(['browsers', 'get', 'nosuchid'], { NO_COLOR: '1' });
    assert.equal(noColorError.status, 1);
    assert.ok(noColorError.output.includes('error: not_found'), noColorError.output);
    assert.ok(!noColorError.output.includes(ESC), JSON.stringify(noColorError.output));
    const colourError = TmuxTerminal.start([CLI, 'browsers', 'get', 'nosuchid'], { env: colourEnv, columns: 200, rows: 50, cwd: ROOT });
    terms.push(colourError);
    const red = await colourError.waitForExit(60_000, { escapes: true });
    assert.ok(red.output.includes(`${ESC}[31merror:`), `errors are red on a terminal: ${JSON.stringify(red.output)}`);
  });

  test('create shows its progress on a terminal and leaves one ✓ line above the session', async () => {
    const r = await run(['create', '--headless']);
    assert.equal(r.status, 0, r.output);
    const lines = r.output.split('\n');
    const done = lines.findIndex((l) => /^✓ created session [a-z0-9]{24} \(\d+\.\d s\)$/.test(l));
    assert.ok(done >= 0, `no ✓ line: ${JSON.stringify(r.output)}`);
    const id = /created session ([a-z0-9]{24})/.exec(lines[done]!)![1];
    assert.match(lines[done + 1]!, new RegExp(`^session_id\\s+${id}$`));
    assert.equal((await d.api('GET', `/browsers/${id}`)).status, 200);

    // --json on a terminal: only the object.
    const json = await run(['create', '--headless', '--json']);
    assert.equal(json.status, 0);
    const s = JSON.parse(json.output);
    assert.deepEqual(sansUsage(s), sansUsage((await d.api('GET', `/browsers/${s.session_id}`)).body));
  });

  test('pools create --wait on a terminal: a bar until the pool is full, then one ✓ line', async () => {
    const r = await run(['pools', 'create', '--name', 'tty-pool', '--size', '1', '--headless', '--fill-rate-per-minute', '100', '--wait']);
    try {
      assert.equal(r.status, 0, r.output);
      const lines = r.output.split('\n');
      assert.match(lines[0]!, /^✓ pool tty-pool has 1 browsers ready \(\d+\.\d s\)$/, r.output);
      assert.match(lines[1]!, /^id\s+[a-z0-9]{24}$/);
      assert.ok(
        lines.some((l) => /^available\s+1 of 1$/.test(l)),
        r.output,
      );
    } finally {
      await d.api('DELETE', '/browser_pools/tty-pool', { force: true });
    }
  });

  test('daemon start on a terminal: a spinner, then where it runs', async () => {
    assert.equal((await d.cli(['daemon', 'stop'])).exitCode, 0);
    const r = await run(['daemon', 'start']);
    assert.equal(r.status, 0, r.output);
    const lines = r.output.split('\n');
    assert.match(lines[0]!, /^✓ daemon started at http:\/\/127\.0\.0\.1:\d+ \(\d+s\)$/);
    d.baseUrl = lines.at(-1)!;
    assert.match(d.baseUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal((await d.api('GET', '/health', undefined, null)).status, 200);
  });
});

describe('the dashboard component (ink-testing-library)', () => {
  /** A feed the test drives: the component cannot tell it from the daemon's. */
  class ScriptedFeed implements FeedSource {
    private listener?: { event(e: FeedEvent): void; state(s: FeedState): void };
    subscribe(listener: { event(e: FeedEvent): void; state(s: FeedState): void }) {
      this.listener = listener;
      listener.state({ status: 'connecting' });
      return () => (this.listener = undefined);
    }
    emit(e: FeedEvent) {
      this.listener!.state({ status: 'live', baseUrl: 'http://daemon.test' });
      this.listener!.event(e);
    }
    state(s: FeedState) {
      this.listener!.state(s);
    }
  }

  const session = (id: string, extra: Partial<WatchSession> = {}): WatchSession => ({
    session: {
      session_id: id,
      created_at: '2030-01-01T00:00:00.000Z',
      cdp_ws_url: `ws://daemon.test/browser/cdp?jwt=${id}`,
      webdriver_ws_url: `ws://daemon.test/browser/webdriver/session?jwt=${id}`,
      headless: false,
      stealth: false,
      region: 'us-east',
      memory: '6GiB',
      timeout_seconds: 60,
      viewport: { width: 1024, height: 768, refresh_rate: 60 },
      browser_live_view_url: `http://daemon.test/browser/live?jwt=${id}`,
    },
    cdp_clients: 0,
    viewers: 0,
    timeout_at: '2030-01-01T00:01:00.000Z',
    ...extra,
  });

  /** The first frame that passes `check` (Ink renders asynchronously, at most 30 times a second). */
  const frameWhere = async (ui: ReturnType<typeof render>, check: (frame: string) => boolean, what: string) =>
    (await waitFor(
      () => {
        const frame = ui.lastFrame() ?? '';
        return check(frame) ? frame : undefined;
      },
      10_000,
      what,
    ))!;
  const rowOf = (frame: string, id: string) => frame.split('\n').find((l) => l.includes(id)) ?? '';

  test('rows, countdown from the server clock, confirmation before delete, reconnecting state', async () => {
    const feed = new ScriptedFeed();
    const removed: string[] = [];
    const actions: DashboardActions = {
      remove: async (id) => void removed.push(id),
      create: async () => ({ session_id: 'n'.repeat(24) }),
      liveView: async (id) => `http://daemon.test/browser/live?jwt=${id}`,
      open: () => false,
      copy: () => {},
    };
    const ui = render(h(Dashboard, { target: 'http://daemon.test', feed, actions, color: false }));
    try {
      await frameWhere(ui, (f) => f.includes('connecting'), 'the connecting state');
      const a = 'a'.repeat(24);
      const b = 'b'.repeat(24);
      feed.emit({
        event: 'snapshot',
        server_time: '2030-01-01T00:00:15.000Z',
        sessions: [session(a), session(b, { cdp_clients: 2, viewers: 1, timeout_at: null })],
        pools: [],
        invocations: [{ id: 'inv1', app_name: 'app', action_name: 'act', status: 'running', started_at: '2030-01-01T00:00:05.000Z' }],
      });
      const frame = await frameWhere(ui, (f) => f.includes('● live') && f.includes(b), 'the snapshot');
      assert.match(rowOf(frame, a), /^› a{24}\s+headful\s+1024x768@60\s+15s\s+0\s+0\s+0:45/);
      assert.match(rowOf(frame, b), /^ {2}b{24}\s+headful\s+1024x768@60\s+15s\s+2\s+1\s+in use/);
      assert.match(frame, /Invocations \(1\)[\s\S]*inv1\s+app\s+act\s+running\s+10s/);

      // A tick moves the countdown with the server's clock.
      feed.emit({ event: 'tick', server_time: '2030-01-01T00:00:50.000Z' });
      await frameWhere(ui, (f) => /\s0:10(\s|$)/.test(rowOf(f, a)), 'the countdown at 0:10');

      // d asks; n keeps it; d, y deletes the selected one.
      ui.stdin.write('j');
      await frameWhere(ui, (f) => rowOf(f, b).startsWith('›'), 'the second row selected');
      ui.stdin.write('d');
      await frameWhere(ui, (f) => f.includes(`Delete session ${b}? y/N`), 'the confirmation');
      ui.stdin.write('n');
      await frameWhere(ui, (f) => f.includes('not deleted'), 'the refusal');
      assert.deepEqual(removed, []);
      ui.stdin.write('d');
      await frameWhere(ui, (f) => f.includes(`Delete session ${b}? y/N`), 'the confirmation again');
      ui.stdin.write('y');
      await frameWhere(ui, (f) => f.includes(`deleted ${b}`), 'the deletion');
      assert.deepEqual(removed, [b]);

      feed.state({ status: 'reconnecting', error: 'connect ECONNREFUSED', baseUrl: 'http://daemon.test' });
      const reconnecting = await frameWhere(ui, (f) => f.includes('reconnecting (connect ECONNREFUSED)'), 'the reconnecting state');
      assert.ok(reconnecting.includes(a), 'the last snapshot stays on screen while reconnecting');
    } finally {
      ui.unmount();
    }
  });

  test('countdown and scrolling window', () => {
    assert.equal(countdown(59_001), '1:00');
    assert.equal(countdown(5_000), '0:05');
    assert.equal(countdown(-3_000), '0:00');
    assert.equal(countdown(3_900_000), '1h05m');
    assert.deepEqual(visibleWindow(3, 2, 10), { start: 0, end: 3 });
    assert.deepEqual(visibleWindow(100, 0, 10), { start: 0, end: 10 });
    assert.deepEqual(visibleWindow(100, 50, 10), { start: 45, end: 55 });
    assert.deepEqual(visibleWindow(100, 99, 10), { start: 90, end: 100 });
  });
});
