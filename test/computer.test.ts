import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Kernel from '@onkernel/sdk';
import { chromium, type Browser, type Page } from 'playwright';
import { sleep, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';

interface Ev {
  type: string;
  x: number;
  y: number;
  buttons: number;
  deltaX: number;
  deltaY: number;
  key: string;
  ctrlKey: boolean;
  shiftKey: boolean;
  altKey: boolean;
  isTrusted: boolean;
  t: number;
}

interface Session {
  id: string;
  page: Page;
  browser: Browser;
}

let d: TestDaemon;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
const sessions: Record<'headful' | 'headless', Session> = {} as never;

/** kiosk_mode: the page fills the screen, so page coordinates are screen coordinates. */
async function open(headless: boolean): Promise<Session> {
  const res = await d.api('POST', '/browsers', { headless, kiosk_mode: true, viewport: { width: 1024, height: 768 }, timeout_seconds: 300 });
  assert.equal(res.status, 200, res.text);
  const browser = await chromium.connectOverCDP(res.body.cdp_ws_url);
  const page = browser.contexts()[0]!.pages()[0]!;
  await page.goto(`${fixtures.url}/events.html`);
  const session = { id: res.body.session_id, page, browser };
  await inputReaches(session);
  return session;
}

/**
 * Chromium drops input sent to a new document until it has painted (paint holding), and on a
 * loaded machine that can outlast page.goto: the first press of a drag was lost that way while
 * the moves and the release after it arrived. So no test starts until a pointer move has been
 * seen by the page, which proves input flows; then the page's record starts empty.
 */
async function inputReaches(s: Session): Promise<void> {
  await waitFor(
    async () => {
      const x = 5 + (Date.now() % 2); // a move to where the pointer already is generates no event
      await ok(s, 'move_mouse', { x, y: 5 });
      await sleep(100);
      return s.page.evaluate((x) => (window as any).events.some((e: Ev) => e.type === 'mousemove' && e.x === x && e.y === 5), x);
    },
    15_000,
    'input to reach the page',
  );
  await clear(s);
}

before(async () => {
  d = await startTestDaemon();
  fixtures = await startFixtureServer();
  [sessions.headful, sessions.headless] = await Promise.all([open(false), open(true)]);
});
after(async () => {
  for (const s of Object.values(sessions)) await s.browser.close().catch(() => {});
  await fixtures?.close();
  await d?.stop();
});

const computer = (s: Session, action: string, body?: object) => d.api('POST', `/browsers/${s.id}/computer/${action}`, body);

async function ok(s: Session, action: string, body?: object) {
  const res = await computer(s, action, body);
  assert.equal(res.status, 204, `${action}: ${res.text}`);
}

/** Takes the page's events once `done` says the last expected one arrived. */
async function takeEvents(s: Session, done: (evs: Ev[]) => boolean): Promise<Ev[]> {
  const seen = () => s.page.evaluate(() => (window as any).events as Ev[]);
  await waitFor(async () => done(await seen()), 5000, 'the events to arrive');
  return s.page.evaluate(() => (window as any).events.splice(0) as Ev[]);
}

const clear = (s: Session) => s.page.evaluate(() => void (window as any).events.splice(0));

/** Distance of p from the segment a-b. */
function offSegment(p: [number, number], a: [number, number], b: [number, number]): number {
  const [dx, dy] = [b[0] - a[0], b[1] - a[1]];
  const t = Math.max(0, Math.min(1, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / (dx * dx + dy * dy)));
  return Math.hypot(p[0] - (a[0] + t * dx), p[1] - (a[1] + t * dy));
}

function pngSize(png: Buffer): { width: number; height: number } {
  assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
  assert.equal(png.subarray(12, 16).toString('latin1'), 'IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

async function screenshot(s: Session, body: object): Promise<{ status: number; type: string | null; png: Buffer }> {
  const res = await fetch(`${d.baseUrl}/browsers/${s.id}/computer/screenshot`, {
    method: 'POST',
    headers: { authorization: `Bearer ${d.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, type: res.headers.get('content-type'), png: Buffer.from(await res.arrayBuffer()) };
}

for (const mode of ['headful', 'headless'] as const) {
  describe(`computer control, ${mode}`, () => {
    test('drag: mousedown at the first point, moves along the path, mouseup at the last, modifiers held', async () => {
      const s = sessions[mode];
      await ok(s, 'move_mouse', { x: 5, y: 5 });
      await clear(s);
      const path: [number, number][] = [
        [100, 100],
        [300, 200],
        [500, 150],
      ];
      await ok(s, 'drag_mouse', { path, steps_per_segment: 4, step_delay_ms: 40, hold_keys: ['ctrl', 'Shift_L'] });
      const all = await takeEvents(s, (e) => e.some((x) => x.type === 'mouseup'));
      const evs = all.filter((e) => e.type.startsWith('mouse'));
      const downAt = evs.findIndex((e) => e.type === 'mousedown');
      const down = evs[downAt]!;
      const up = evs.find((e) => e.type === 'mouseup')!;
      assert.deepEqual([down.x, down.y, down.buttons], [100, 100, 1]);
      assert.deepEqual([up.x, up.y], [500, 150]);
      const moves = evs.slice(downAt + 1).filter((e) => e.type === 'mousemove');
      assert.ok(moves.length >= 4, `moves seen while dragging: ${moves.length}`);
      for (const m of moves) {
        assert.equal(m.buttons, 1);
        const off = Math.min(offSegment([m.x, m.y], path[0]!, path[1]!), offSegment([m.x, m.y], path[1]!, path[2]!));
        assert.ok(off <= 1.5, `(${m.x},${m.y}) lies on the path`);
      }
      // Every move the page saw, those a busy renderer merged into one mousemove included.
      const coalesced = all.filter((e) => e.type === 'coalesced-move');
      assert.ok(
        [...moves, ...coalesced].some((m) => m.x === 300 && m.y === 200),
        `passes through the middle point exactly: ${[...moves, ...coalesced].map((m) => `${m.x},${m.y}`).join(' ')}`,
      );
      for (const e of [down, ...moves, up]) {
        assert.ok(e.ctrlKey && e.shiftKey && !e.altKey, `${e.type} carries ctrl and shift`);
        assert.equal(e.isTrusted, true);
      }
      const after = await computer(s, 'get_mouse_position');
      assert.deepEqual(after.body, { x: 500, y: 150 });
    });

    test("zero values as Kernel's SDKs send them: num_clicks 0 clicks once, a scroll of only {x, y} moves the pointer there", async () => {
      const s = sessions[mode];
      await s.page.fill('#text', '');
      await clear(s);
      await ok(s, 'click_mouse', { x: 700, y: 35, num_clicks: 0 });
      const clicks = (await takeEvents(s, (e) => e.some((x) => x.type === 'click'))).filter((e) => e.type === 'click');
      assert.deepEqual(
        clicks.map((c) => [c.x, c.y]),
        [[700, 35]],
      );
      await ok(s, 'scroll', { x: 321, y: 123 });
      assert.deepEqual((await computer(s, 'get_mouse_position')).body, { x: 321, y: 123 });
      const batch = await computer(s, 'batch', { actions: [{ type: 'click_mouse', click_mouse: { x: 10, y: 10, num_clicks: 0 } }] });
      assert.equal(batch.status, 204, batch.text);
    });

    test('scroll: notches in the right directions, vertical first, with held keys', async () => {
      const s = sessions[mode];
      await clear(s);
      await ok(s, 'scroll', { x: 400, y: 300, delta_y: 2, delta_x: -1, hold_keys: ['alt'] });
      await ok(s, 'scroll', { x: 400, y: 300, delta_y: -1 });
      await ok(s, 'scroll', { x: 400, y: 300, delta_x: 1 });
      const px = (w: Ev) => Math.abs(w.deltaX) + Math.abs(w.deltaY);
      const wheelsOf = (evs: Ev[]) => evs.filter((e) => e.type === 'wheel');
      const wheels = wheelsOf(await takeEvents(s, (e) => wheelsOf(e).reduce((sum, w) => sum + px(w), 0) >= 5 * 120));
      // A busy renderer merges notches that arrive close together into one event, even across axes
      // (a notch down and one left became deltaX -120, deltaY 120): compare what each call added up
      // to, and the order its first event shows. One notch is the same 120 px in both backends.
      const alt = wheels.filter((w) => w.altKey);
      const plain = wheels.filter((w) => !w.altKey);
      const sum = (ws: Ev[]) => ({ x: ws.reduce((t, w) => t + w.deltaX, 0), y: ws.reduce((t, w) => t + w.deltaY, 0) });
      assert.deepEqual(sum(alt), { x: -120, y: 240 }, 'two notches down and one left, with alt held');
      assert.ok(alt[0]!.deltaY > 0, `vertical first: ${JSON.stringify(alt.map((w) => [w.deltaX, w.deltaY]))}`);
      assert.deepEqual(sum(plain), { x: 120, y: -120 }, 'one notch up, then one right, without alt');
      assert.ok(plain[0]!.deltaY < 0, `up before right: ${JSON.stringify(plain.map((w) => [w.deltaX, w.deltaY]))}`);
      assert.ok(wheels.indexOf(plain[0]!) > wheels.indexOf(alt.at(-1)!), 'the held key is let go after its scroll');
      for (const w of wheels) assert.deepEqual([w.x, w.y, w.isTrusted], [400, 300, true]);
    });

    test('click, type (non-ASCII too) and press_key reach the focused input', async () => {
      const s = sessions[mode];
      await s.page.fill('#text', '');
      await clear(s);
      await ok(s, 'click_mouse', { x: 700, y: 35 });
      await ok(s, 'type', { text: 'héllo ✓ ok' });
      await ok(s, 'press_key', { keys: ['BackSpace', 'BackSpace', 'Left'] });
      await ok(s, 'type', { text: 'X' });
      await waitFor(async () => (await s.page.inputValue('#text')) === 'héllo ✓X ', 5000, 'the typed text');
      const evs = await takeEvents(s, () => true);
      assert.ok(evs.some((e) => e.type === 'click' && e.x === 700 && e.y === 35 && e.isTrusted));
      assert.ok(evs.some((e) => e.type === 'keydown' && e.key === 'Backspace' && e.isTrusted));
    });

    test('screenshot: a PNG of the screen, or of a region', async () => {
      const s = sessions[mode];
      const full = await screenshot(s, {});
      assert.equal(full.status, 200);
      assert.equal(full.type, 'image/png');
      assert.deepEqual(pngSize(full.png), { width: 1024, height: 768 });
      const part = await screenshot(s, { region: { x: 10, y: 20, width: 100, height: 50 } });
      assert.deepEqual(pngSize(part.png), { width: 100, height: 50 });
      // An empty region (a client's zero value) is the whole screen.
      const empty = await screenshot(s, { region: { x: 0, y: 0, width: 0, height: 0 } });
      assert.deepEqual([empty.status, pngSize(empty.png)], [200, { width: 1024, height: 768 }]);
      assert.equal((await screenshot(s, { region: { x: 1000, y: 0, width: 100, height: 50 } })).status, 400);
    });

    test('batch: runs in order and stops at the first error', async () => {
      const s = sessions[mode];
      await clear(s);
      const res = await computer(s, 'batch', {
        actions: [
          { type: 'move_mouse', move_mouse: { x: 123, y: 456 } },
          { type: 'sleep', sleep: { duration_ms: 10 } },
          {
            type: 'drag_mouse',
            drag_mouse: {
              path: [
                [0, 0],
                [2000, 10],
              ],
            },
          },
          { type: 'click_mouse', click_mouse: { x: 50, y: 50 } },
        ],
      });
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.message, /^actions\[2\] \(drag_mouse\): path\.1: /);
      assert.ok(
        res.body.details.some((x: any) => x.message.startsWith('actions.2.path.1')),
        res.text,
      );
      assert.deepEqual((await computer(s, 'get_mouse_position')).body, { x: 123, y: 456 });
      const evs = await takeEvents(s, () => true);
      assert.ok(!evs.some((e) => e.type === 'mousedown'), 'nothing after the failing action ran');
    });
  });
}

describe('computer control rules', () => {
  const bad: [string, string, object, string][] = [
    ['drag_mouse', 'one point', { path: [[1, 1]] }, 'path'],
    [
      'drag_mouse',
      'a point of 3 numbers',
      {
        path: [
          [1, 1],
          [2, 2, 2],
        ],
      },
      'path.1',
    ],
    [
      'drag_mouse',
      'a fractional coordinate',
      {
        path: [
          [1.5, 1],
          [2, 2],
        ],
      },
      'path.0.0',
    ],
    ['drag_mouse', 'no path', {}, 'path'],
    [
      'drag_mouse',
      'a point off the screen',
      {
        path: [
          [1, 1],
          [1024, 2],
        ],
      },
      'path.1',
    ],
    [
      'drag_mouse',
      'a negative point',
      {
        path: [
          [-1, 1],
          [2, 2],
        ],
      },
      'path.0',
    ],
    [
      'drag_mouse',
      'steps_per_segment 0',
      {
        path: [
          [1, 1],
          [2, 2],
        ],
        steps_per_segment: 0,
      },
      'steps_per_segment',
    ],
    [
      'drag_mouse',
      'negative delay',
      {
        path: [
          [1, 1],
          [2, 2],
        ],
        delay: -1,
      },
      'delay',
    ],
    [
      'drag_mouse',
      'negative step_delay_ms',
      {
        path: [
          [1, 1],
          [2, 2],
        ],
        step_delay_ms: -1,
      },
      'step_delay_ms',
    ],
    [
      'drag_mouse',
      'an unknown button',
      {
        path: [
          [1, 1],
          [2, 2],
        ],
        button: 'back',
      },
      'button',
    ],
    [
      'drag_mouse',
      'an unknown hold key',
      {
        path: [
          [1, 1],
          [2, 2],
        ],
        hold_keys: ['ctrl', 'hyperspace'],
      },
      'hold_keys.1',
    ],
    ['scroll', 'no x', { y: 1, delta_y: 1 }, 'x'],
    ['scroll', 'a negative y', { x: 1, y: -1, delta_y: 1 }, 'y'],
    ['scroll', 'a point off the screen', { x: 1, y: 768, delta_y: 1 }, 'x'],
    ['scroll', 'an unknown hold key', { x: 1, y: 1, delta_y: 1, hold_keys: ['nope'] }, 'hold_keys.0'],
    ['click_mouse', 'an unknown button', { x: 1, y: 1, button: 'side' }, 'button'],
    ['press_key', 'no keys', { keys: [] }, 'keys'],
    ['press_key', 'an unknown key', { keys: ['ctrl+nokey'] }, 'keys.0'],
    // Valid-looking input that would hold the request for hours: refused before it starts.
    ['scroll', '2^53 notches', { x: 1, y: 1, delta_y: 2 ** 53 + 1 }, 'delta_y'],
    ['click_mouse', '101 clicks', { x: 1, y: 1, num_clicks: 101 }, 'num_clicks'],
    ['press_key', 'two keys held 30 s each', { keys: ['a', 'b'], duration: 30_001 }, 'duration'],
    [
      'drag_mouse',
      'more than 60 s of moves',
      {
        path: [
          [1, 1],
          [2, 2],
        ],
        steps_per_segment: 100,
        step_delay_ms: 601,
      },
      'step_delay_ms',
    ],
    ['type', 'no text', {}, 'text'],
    ['type', 'more than 10,000 characters', { text: 'x'.repeat(10_001), delay: 0 }, 'text'],
    // 5,001 keys 12 ms apart: a minute of typing (as a batch's sleep may wait), not twenty.
    ['type', 'more than 60 s of typing', { text: 'x'.repeat(5001) }, 'text'],
    [
      'batch',
      'more than 300 s of sleeps',
      { actions: Array.from({ length: 6 }, () => ({ type: 'sleep', sleep: { duration_ms: 60_000 } })) },
      'actions',
    ],
    ['batch', 'more than 60 s of typing in one action', { actions: [{ type: 'type_text', type_text: { text: 'ab', delay: 30_001 } }] }, 'actions.0'],
    ['screenshot', 'a region off the screen', { region: { x: 0, y: 0, width: 1025, height: 10 } }, 'region'],
    ['screenshot', 'a region of no width but some height', { region: { x: 0, y: 0, width: 0, height: 10 } }, 'region'],
    ['batch', 'an action without its parameters', { actions: [{ type: 'scroll' }] }, 'actions.0.scroll'],
  ];
  for (const [action, what, body, field] of bad) {
    test(`${action}: ${what} is a 400 naming ${field}`, async () => {
      const res = await computer(sessions.headless, action, body);
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.code, 'bad_request');
      assert.ok(
        res.body.details?.some((x: any) => x.code === 'invalid_input' && x.message.startsWith(field)),
        `${field} named: ${res.text}`,
      );
    });
  }

  test("another org's session is not found", async () => {
    const other = (await d.cli(['auth', 'create-key', '--org', 'computer-other'])).stdout.trim();
    const res = await d.api('POST', `/browsers/${sessions.headless.id}/computer/scroll`, { x: 1, y: 1, delta_y: 1 }, other);
    assert.equal(res.status, 404, res.text);
  });

  test('one input action at a time per session; other sessions do not wait', async () => {
    const a = sessions.headful;
    const b = sessions.headless;
    await Promise.all([clear(a), clear(b)]);
    const drag = {
      path: [
        [50, 300],
        [250, 300],
      ],
      steps_per_segment: 5,
      step_delay_ms: 80,
    };
    const timed = async (s: Session) => {
      const t = Date.now();
      await ok(s, 'drag_mouse', drag);
      return Date.now() - t;
    };
    const started = Date.now();
    const [a1, a2, b1] = await Promise.all([timed(a), timed(a), timed(b)]);
    const both = Date.now() - started;
    const evs = await takeEvents(a, (e) => e.filter((x) => x.type === 'mouseup').length >= 2);
    const order = evs.filter((e) => e.type === 'mousedown' || e.type === 'mouseup');
    assert.deepEqual(
      order.map((e) => e.type),
      ['mousedown', 'mouseup', 'mousedown', 'mouseup'],
    );
    assert.ok(order[1]!.t <= order[2]!.t, 'the second drag starts after the first ends');
    assert.ok(Math.max(a1, a2) >= 2 * 320, `one of the drags on a waited for the other (${a1}, ${a2} ms)`);
    // The drag on b ran while one on a did: with one queue for both sessions the three could not
    // overlap. (Its duration says nothing: on a busy machine b's drag alone took 313 ms against 383.)
    const bEvents = await takeEvents(b, (e) => e.some((x) => x.type === 'mouseup'));
    const bDown = bEvents.find((e) => e.type === 'mousedown')!.t;
    const bUp = bEvents.find((e) => e.type === 'mouseup')!.t;
    const overlaps = (down: number, up: number) => bDown < up && down < bUp;
    assert.ok(
      overlaps(order[0]!.t, order[1]!.t) || overlaps(order[2]!.t, order[3]!.t),
      `the drag on another session did not wait: b ${bDown}-${bUp}, a ${order.map((e) => e.t).join(', ')} (${b1} ms vs ${a1}, ${a2}; ${both} in all)`,
    );
  });

  test('the CLI drags, scrolls and saves a screenshot', async () => {
    const s = sessions.headless;
    await clear(s);
    const drag = await d.cli(['computer', 'drag', s.id, '--path', '30,30', '90,40', '--steps', '2', '--step-delay', '0', '--hold-key', 'shift']);
    assert.equal(drag.exitCode, 0, drag.stderr);
    const scroll = await d.cli(['computer', 'scroll', s.id, '--x', '90', '--y', '40', '--dy', '-1']);
    assert.equal(scroll.exitCode, 0, scroll.stderr);
    const evs = await takeEvents(s, (e) => e.some((x) => x.type === 'wheel'));
    assert.ok(evs.some((e) => e.type === 'mousedown' && e.x === 30 && e.y === 30 && e.shiftKey));
    assert.ok(evs.some((e) => e.type === 'wheel' && e.deltaY < 0));
    const file = join(d.home, 'shot.png');
    const shot = await d.cli(['computer', 'screenshot', s.id, '-o', file, '--region', '0,0,64,32']);
    assert.equal(shot.exitCode, 0, shot.stderr);
    assert.deepEqual(pngSize(await readFile(file)), { width: 64, height: 32 });
    const bad = await d.cli(['computer', 'drag', s.id, '--path', '30,30']);
    assert.notEqual(bad.exitCode, 0);
    assert.match(bad.stderr, /path/);
  });

  test('the official SDK drives drag_mouse and scroll', async () => {
    const s = sessions.headless;
    const kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0 });
    await clear(s);
    await kernel.browsers.computer.dragMouse(s.id, {
      path: [
        [20, 20],
        [60, 80],
      ],
      steps_per_segment: 2,
      step_delay_ms: 0,
    });
    await kernel.browsers.computer.scroll(s.id, { x: 60, y: 80, delta_y: 1 });
    const evs = await takeEvents(s, (e) => e.some((x) => x.type === 'wheel'));
    assert.deepEqual(
      evs.filter((e) => e.type !== 'mousemove' && e.type !== 'coalesced-move' && e.type !== 'click').map((e) => `${e.type} ${e.x},${e.y}`),
      ['mousedown 20,20', 'mouseup 60,80', 'wheel 60,80'],
    );
    assert.deepEqual(await kernel.browsers.computer.getMousePosition(s.id), { x: 60, y: 80 });
  });
});
