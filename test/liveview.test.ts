import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser } from 'playwright';
import { findMarkedProcesses } from '../daemon/lib/procs.js';
import { SUPPORTED_VIEWPORTS } from '../src/viewport.js';
import { processesGone, sleep, startTestDaemon, upgradeStatus, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startFixtureServer } from './helpers/fixtures.js';
import { canvasPixels, canvasSize, launchViewer, listeningSockets, openLiveView, pngPixels } from './helpers/viewer.js';

let d: TestDaemon;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
let viewer: Browser;

before(async () => {
  d = await startTestDaemon();
  fixtures = await startFixtureServer();
  viewer = await launchViewer();
});
after(async () => {
  await viewer?.close();
  await fixtures?.close();
  await d?.stop();
});

async function create(body: object) {
  const res = await d.api('POST', '/browsers', body);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

const close = (a: number[], b: number[], tolerance = 12) => a.slice(0, 3).every((v, i) => Math.abs(v - b[i]!) <= tolerance);

describe('live view', () => {
  test('shows the session page pixel for pixel, takes clicks, and read-only takes none', async () => {
    const s = await create({ viewport: { width: 1024, height: 768 }, kiosk_mode: true });
    assert.match(s.browser_live_view_url, /^http:\/\/127\.0\.0\.1:\d+\/browser\/live\?jwt=/);
    const cdp = await chromium.connectOverCDP(s.cdp_ws_url);
    const page = cdp.contexts()[0]!.pages()[0]!;
    await page.goto(`${fixtures.url}/liveview.html`);
    const view = await openLiveView(viewer, s.browser_live_view_url);
    try {
      assert.deepEqual(await canvasSize(view), { width: 1024, height: 768 });
      // The page fills the kiosk screen; the live view must show what a CDP screenshot shows.
      const points: [number, number][] = [
        [100, 100],
        [900, 100],
        [100, 700],
        [900, 700],
        [512, 384],
        [10, 760],
      ];
      const shot = await page.screenshot();
      await waitFor(
        async () => {
          const [seen, truth] = [await canvasPixels(view, points), await pngPixels(view, shot, points)];
          return seen.every((px, i) => close(px, truth[i]!));
        },
        10_000,
        'the live view to match the CDP screenshot',
      );
      const seen = await canvasPixels(view, [[100, 100]]);
      assert.ok(close(seen[0]!, [220, 40, 40]), `top-left quadrant is red, saw ${seen[0]}`);

      await view.mouse.click(300, 200);
      const clicksSeen = async () => (await page.evaluate(() => (window as any).events)).filter((e: any) => e.type === 'click');
      const clicks = await waitFor(async () => ((await clicksSeen()).length ? clicksSeen() : null), 5000, 'the click to arrive');
      assert.deepEqual(clicks, [{ type: 'click', x: 300, y: 200, trusted: true, buttons: 0 }]);

      const readOnly = await openLiveView(viewer, `${s.browser_live_view_url}&readOnly=true`);
      await readOnly.mouse.click(700, 500);
      await sleep(1000);
      assert.equal((await clicksSeen()).length, 1, 'a read-only viewer sends no input');
      await readOnly.close();

      // Nothing of the session listens in the host's network: its DevTools port is on its box's
      // own loopback, and x11vnc on a Unix socket of the box.
      const sockets = await listeningSockets(d.home, s.session_id);
      assert.ok(sockets.own.length >= 1, `DevTools listens in the session's own network (${sockets.own}; ${sockets.seen})`);
      for (const addr of sockets.own) assert.match(addr, /^(0100007F|00000000000000000000000001000000):/, addr);
      assert.deepEqual(sockets.host, [], "nothing of the session listens in the host's network namespace");
    } finally {
      await view.close();
      await cdp.close();
      await d.api('DELETE', `/browsers/${s.session_id}`);
    }
  });

  test('a wrong, tampered, other-scope or other-session jwt is refused on the page and the websocket', async () => {
    const a = await create({ viewport: { width: 1024, height: 768 } });
    const b = await create({ viewport: { width: 1024, height: 768 } });
    try {
      const live = new URL(a.browser_live_view_url);
      const jwtA = live.searchParams.get('jwt')!;
      const cdpJwtA = new URL(a.cdp_ws_url).searchParams.get('jwt')!;
      const jwtB = new URL(b.browser_live_view_url).searchParams.get('jwt')!;
      const page = (jwt: string) => fetch(`${live.origin}/browser/live?jwt=${jwt}`).then((r) => r.status);
      const ws = (jwt: string) => upgradeStatus(`${live.origin.replace('http', 'ws')}/browser/live/ws?jwt=${jwt}`);
      assert.equal(await page(jwtA), 200);
      assert.equal(await page(''), 401);
      assert.equal(await page('garbage'), 401);
      assert.equal(await page(`${jwtA.slice(0, -3)}abc`), 401, 'tampered signature');
      assert.equal(await page(cdpJwtA), 401, 'the CDP jwt does not open the live view');
      assert.equal(await ws(cdpJwtA), 401);
      assert.equal(await ws('garbage'), 401);
      assert.equal(await ws(jwtA), 101);
      assert.equal(await upgradeStatus(`${a.cdp_ws_url.split('?')[0]}?jwt=${jwtA}`), 401, 'the live jwt does not open CDP');
      // b's jwt opens b, and only b: its page streams b's screen, not a's.
      assert.equal(await ws(jwtB), 101);
      await d.api('DELETE', `/browsers/${a.session_id}`);
      assert.equal(await page(jwtA), 404, "an ended session's live view is gone");
      assert.equal(await ws(jwtA), 404);
    } finally {
      await d.api('DELETE', `/browsers/${a.session_id}`);
      await d.api('DELETE', `/browsers/${b.session_id}`);
    }
  });

  test('every supported viewport is exact inside the page, with and without kiosk', async () => {
    const check = async (v: { width: number; height: number }, kiosk_mode: boolean) => {
      const s = await create({ viewport: { width: v.width, height: v.height }, kiosk_mode });
      const cdp = await chromium.connectOverCDP(s.cdp_ws_url);
      try {
        const page = cdp.contexts()[0]!.pages()[0]!;
        const measure = () =>
          page.evaluate(() => ({ sw: screen.width, sh: screen.height, iw: innerWidth, ih: innerHeight, ow: outerWidth, oh: outerHeight }));
        // Right after start the window manager may still be fitting the window: let it settle.
        await waitFor(async () => (await measure()).iw === v.width, 5000, 'the window to fill the screen').catch(() => {});
        const m = await measure();
        const what = `${v.width}x${v.height}${kiosk_mode ? ' kiosk' : ''}: ${JSON.stringify(m)}`;
        assert.equal(m.sw, v.width, what);
        assert.equal(m.sh, v.height, what);
        assert.equal(m.iw, v.width, what);
        assert.equal(m.ow, v.width, what);
        assert.equal(m.oh, v.height, what);
        if (kiosk_mode) assert.equal(m.ih, v.height, `kiosk shows no address bar or tabs: ${what}`);
        else assert.ok(m.ih < v.height, `the address bar and tabs are shown: ${what}`);
      } finally {
        await cdp.close();
        await d.api('DELETE', `/browsers/${s.session_id}`);
      }
    };
    // Every viewport without kiosk, and kiosk on every other one (kiosk is one flag whatever the
    // size: the largest, a 16:10 and the smallest of the list); three sessions at a time.
    const combos = SUPPORTED_VIEWPORTS.flatMap((v, i) => [[v, false] as const, ...(i % 2 === 0 ? [[v, true] as const] : [])]);
    for (let i = 0; i < combos.length; i += 3) await Promise.all(combos.slice(i, i + 3).map(([v, kiosk]) => check(v, kiosk)));
  });

  test('PATCH viewport: 409 while a viewer watches, force resizes screen and window, the viewer follows', async () => {
    const s = await create({ viewport: { width: 1024, height: 768 } });
    const view = await openLiveView(viewer, s.browser_live_view_url, { width: 1200, height: 800 });
    const cdp = await chromium.connectOverCDP(s.cdp_ws_url);
    try {
      const refused = await d.api('PATCH', `/browsers/${s.session_id}`, { viewport: { width: 1200, height: 800 } });
      assert.equal(refused.status, 409, refused.text);
      assert.equal(refused.body.code, 'conflict');
      const bad = await d.api('PATCH', `/browsers/${s.session_id}`, { viewport: { width: 1000, height: 800, force: true } });
      assert.equal(bad.status, 400);
      const res = await d.api('PATCH', `/browsers/${s.session_id}`, { viewport: { width: 1200, height: 800, force: true } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.viewport, { width: 1200, height: 800, refresh_rate: 60 });
      const page = cdp.contexts()[0]!.pages()[0]!;
      await waitFor(
        async () => {
          const m = await page.evaluate(() => [screen.width, screen.height, innerWidth, outerHeight]);
          return m.join() === '1200,800,1200,800';
        },
        10_000,
        'the page to see 1200x800',
      );
      // The viewer was dropped by the resize and reconnects by itself to the new size (it may not
      // have seen the drop yet, so "connected" alone does not say it is back).
      await waitFor(
        async () => (await view.evaluate(() => document.body.dataset.state)) === 'connected' && (await canvasSize(view))?.width === 1200,
        25_000,
        'the viewer to reconnect at the new size',
      );
      assert.deepEqual(await canvasSize(view), { width: 1200, height: 800 });
      assert.deepEqual((await d.api('GET', `/browsers/${s.session_id}`)).body.viewport, res.body.viewport);
    } finally {
      await view.close();
      await cdp.close();
      await d.api('DELETE', `/browsers/${s.session_id}`);
    }
  });

  test('a viewer keeps the session alive past its timeout; it ends after the viewer leaves, and the viewer says so', async () => {
    const s = await create({ viewport: { width: 1024, height: 768 }, timeout_seconds: 10 });
    const watcher = await openLiveView(viewer, s.browser_live_view_url);
    const isDeleted = async () => Boolean((await d.api('GET', `/browsers/${s.session_id}?include_deleted=true`)).body.deleted_at);
    await sleep(20_000);
    assert.equal(await isDeleted(), false, 'a watched session does not time out');
    // A second viewer that leaves must not end it either; then the first leaves.
    const blip = await openLiveView(viewer, s.browser_live_view_url);
    await blip.close();
    await watcher.close();
    const left = Date.now();
    await waitFor(isDeleted, 30_000, 'the session to time out');
    const after = (Date.now() - left) / 1000;
    assert.ok(after >= 9 && after <= 25, `ended ${after}s after the viewer left`);
    await processesGone(d.home, s.session_id); // Xvfb, x11vnc, the window manager and Chromium
  });

  test('CLI: create prints the live view URL of a headful session; live prints it (read-only too)', async () => {
    const created = await d.cli(['create', '--viewport', '1024x768']);
    assert.equal(created.exitCode, 0, created.stderr);
    const id = /session_id\s+(\S+)/.exec(created.stdout)![1]!;
    const url = /live_view_url\s+(\S+)/.exec(created.stdout)?.[1];
    assert.match(url ?? '', /\/browser\/live\?jwt=/);
    const live = await d.cli(['live', id, '--no-open']);
    assert.equal(live.exitCode, 0, live.stderr);
    assert.equal(live.stdout.trim(), url);
    const ro = await d.cli(['live', id, '--no-open', '--read-only']);
    // The read-only view runs on a jwt of its own, so a shared read-only link cannot be made a controlling one.
    assert.match(ro.stdout.trim(), /\/browser\/live\?jwt=[^&]+&readOnly=true$/);
    assert.notEqual(new URL(ro.stdout.trim()).searchParams.get('jwt'), new URL(url!).searchParams.get('jwt'));
    assert.equal((await fetch(live.stdout.trim())).status, 200);
    assert.equal((await fetch(ro.stdout.trim())).status, 200);
    // A headless session's view is asked for: its object has no URL, live prints one.
    const headless = await d.cli(['create', '--headless', '--json']);
    const hid = JSON.parse(headless.stdout).session_id;
    assert.equal(JSON.parse(headless.stdout).browser_live_view_url, undefined);
    const screencast = await d.cli(['live', hid, '--no-open']);
    assert.equal(screencast.exitCode, 0, screencast.stderr);
    assert.match(screencast.stdout.trim(), /\/browser\/live\?jwt=/);
    assert.equal((await fetch(screencast.stdout.trim())).status, 200);
    await d.cli(['rm', id, hid]);
  });

  test('if x11vnc dies, it is restarted and the viewer reconnects by itself', async () => {
    const s = await create({ viewport: { width: 1024, height: 768 } });
    const view = await openLiveView(viewer, s.browser_live_view_url);
    try {
      const vncPids = async () => {
        const pids = await findMarkedProcesses(d.home, s.session_id);
        const comms = await Promise.all(pids.map((p) => readFile(`/proc/${p}/comm`, 'utf8').catch(() => '')));
        return pids.filter((_, i) => comms[i]!.trim() === 'x11vnc');
      };
      const [first] = await vncPids();
      assert.ok(first, 'the session has an x11vnc');
      process.kill(first!, 'SIGKILL');
      await waitFor(async () => (await view.evaluate(() => document.body.dataset.state)) === 'reconnecting', 10_000, 'the viewer to notice');
      await waitFor(async () => (await view.evaluate(() => document.body.dataset.state)) === 'connected', 20_000, 'the viewer to reconnect');
      const [second] = await vncPids();
      assert.ok(second && second !== first, 'a new x11vnc serves the session');
      assert.deepEqual(await canvasSize(view), { width: 1024, height: 768 });
    } finally {
      await view.close();
      await d.api('DELETE', `/browsers/${s.session_id}`);
    }
  });

  test('the viewer shows that the session ended', async () => {
    const s = await create({ viewport: { width: 1024, height: 768 } });
    const view = await openLiveView(viewer, s.browser_live_view_url);
    try {
      await d.api('DELETE', `/browsers/${s.session_id}`);
      await waitFor(async () => (await view.evaluate(() => document.body.dataset.state)) === 'ended', 10_000, 'ended state');
      assert.match((await view.textContent('#status')) ?? '', /ended/);
    } finally {
      await view.close();
    }
  });
});

describe('live view of a headless session', () => {
  /** RGBA of the screencast canvas at page coordinates (a string script: no bundler helpers in the page). */
  const screencastPixels = (page: import('playwright').Page, points: [number, number][]) =>
    page.evaluate(
      `(() => { const c = document.getElementById('screen'); const ctx = c.getContext('2d');
        return ${JSON.stringify(points)}.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data)); })()`,
    ) as Promise<number[][]>;

  test('shows the page as screencast frames, takes clicks, the wheel and keys, and read-only takes none', async () => {
    const s = await create({ headless: true, viewport: { width: 1024, height: 768 } });
    assert.equal(s.browser_live_view_url, undefined, "a headless session's object stays as it is");
    const lv = await d.api('GET', `/browsers/${s.session_id}/live_view`);
    assert.equal(lv.status, 200, lv.text);
    assert.equal(lv.body.kind, 'screencast');
    const otherKey = (await d.cli(['auth', 'create-key', '--org', 'screencast-other'])).stdout.trim();
    assert.equal((await d.api('GET', `/browsers/${s.session_id}/live_view`, undefined, otherKey)).status, 404, "another organization's session");
    const cdp = await chromium.connectOverCDP(s.cdp_ws_url);
    const page = cdp.contexts()[0]!.pages()[0]!;
    await page.goto(`${fixtures.url}/liveview.html`);
    // A headless session's page is its viewport, as in Kernel's headless browsers; a viewer window
    // of that size shows it 1:1, so the viewer's points are the page's.
    const [w, h] = (await page.evaluate(() => [innerWidth, innerHeight])) as [number, number];
    assert.deepEqual([w, h], [1024, 768], 'the page fills the viewport');
    const view = await openLiveView(viewer, lv.body.url, { width: w, height: h });
    try {
      const quadrants: [number, number][] = [
        [w / 4, h / 4],
        [(3 * w) / 4, h / 4],
        [w / 4, (3 * h) / 4],
        [(3 * w) / 4, (3 * h) / 4],
      ];
      const colours = [
        [220, 40, 40],
        [40, 180, 60],
        [40, 80, 220],
        [240, 200, 30],
      ];
      await waitFor(
        async () => (await screencastPixels(view, quadrants)).every((px, i) => close(px, colours[i]!, 16)),
        15_000,
        'the four quadrants on the canvas',
      );

      const events = async (type: string) => ((await page.evaluate(() => (window as any).events)) as any[]).filter((e) => e.type === type);
      await view.mouse.click(300, 200);
      const clicks = await waitFor(async () => ((await events('click')).length ? events('click') : null), 5000, 'the click to arrive');
      assert.deepEqual(clicks, [{ type: 'click', x: 300, y: 200, trusted: true, buttons: 0 }]);
      await view.mouse.wheel(0, 120);
      await waitFor(async () => (await events('wheel')).length > 0, 5000, 'the wheel to arrive');
      await view.keyboard.type('hi');
      const keys = await waitFor(async () => ((await events('keydown')).length >= 2 ? events('keydown') : null), 5000, 'the keys to arrive');
      assert.deepEqual(
        keys!.map((k) => [k.key, k.trusted]),
        [
          ['h', true],
          ['i', true],
        ],
      );

      const readOnly = await openLiveView(viewer, lv.body.read_only_url, { width: w, height: h });
      await readOnly.mouse.click(700, 500);
      await readOnly.keyboard.type('x');
      await sleep(1000);
      assert.equal((await events('click')).length, 1, 'a read-only viewer sends no input');
      assert.equal((await events('keydown')).length, 2);
      await readOnly.close();

      // The view follows what the browser shows: a page navigated to another colour shows it.
      // A failure says whether frames stopped coming or came stale.
      const drawnBefore = await view.evaluate(() => (window as any).frames_drawn as number);
      await page.setContent('<body style="margin:0;background:rgb(30,160,170)"></body>');
      let seen: number[] = [];
      await waitFor(
        async () => close((seen = (await screencastPixels(view, [[w / 2, h / 2]]))[0]!), [30, 160, 170], 16),
        10_000,
        'the new page on the canvas',
      ).catch(async (err: Error) => {
        const drawn = await view.evaluate(() => (window as any).frames_drawn as number);
        const state = await view.evaluate(() => document.body.dataset.state);
        throw new Error(`${err.message}: ${drawn - drawnBefore} frames drawn since, the canvas shows ${seen}, the viewer is ${state}`);
      });
    } finally {
      await view.close();
      await cdp.close();
      await d.api('DELETE', `/browsers/${s.session_id}`);
    }
  });

  test('a viewer keeps a headless session alive past its timeout, and is told when it ends', async () => {
    const s = await create({ headless: true, viewport: { width: 1024, height: 768 }, timeout_seconds: 10 });
    const lv = (await d.api('GET', `/browsers/${s.session_id}/live_view`)).body;
    const watcher = await openLiveView(viewer, lv.url);
    try {
      const isDeleted = async () => Boolean((await d.api('GET', `/browsers/${s.session_id}?include_deleted=true`)).body.deleted_at);
      await sleep(15_000);
      assert.equal(await isDeleted(), false, 'a watched session does not time out');
      assert.equal((await d.api('DELETE', `/browsers/${s.session_id}`)).status, 204);
      await waitFor(
        async () => (await watcher.evaluate(() => document.body.dataset.state)) === 'ended',
        15_000,
        'the viewer to say the session ended',
      );
    } finally {
      await watcher.close();
    }
  });
});

test("a headless viewer reconnects by itself when the session's browser restarts in place, and shows the page again", async () => {
  const profile = (await d.api('POST', '/profiles', { name: `screencast-restart-${Date.now()}` })).body;
  const s = await create({ headless: true, viewport: { width: 1024, height: 768 }, timeout_seconds: 120 });
  const lv = (await d.api('GET', `/browsers/${s.session_id}/live_view`)).body;
  const view = await openLiveView(viewer, lv.url);
  try {
    const state = () => view.evaluate(() => document.body.dataset.state);
    // The page leaves "connected" when the browser goes (for at least its half-second retry), then comes back on its own.
    let watching = true;
    const left = (async () => {
      while (watching) {
        if ((await state()) !== 'connected') return true;
        await sleep(20);
      }
      return false;
    })();
    const patched = await d.api('PATCH', `/browsers/${s.session_id}`, { profile: { id: profile.id } });
    assert.equal(patched.status, 200, patched.text);
    const timer = setTimeout(() => (watching = false), 15_000);
    assert.equal(await left, true, 'the viewer noticed the browser restart');
    clearTimeout(timer);
    watching = false;
    await waitFor(async () => (await state()) === 'connected', 20_000, 'the viewer to reconnect to the restarted browser');
    assert.equal(await view.evaluate(() => (window as any).frames_drawn > 0), true);
  } finally {
    await view.close();
    await d.api('DELETE', `/browsers/${s.session_id}`);
  }
});
