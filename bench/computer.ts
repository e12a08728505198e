/**
 * Computer control latency (npx tsx bench/computer.ts): a 2-point drag and a scroll through the
 * API, headful and headless, against the same input sent straight to the session (one xdotool
 * chain on its display; CDP Input on one open connection to its cdp_ws_url). The drag uses
 * step_delay_ms 0 so the numbers are overhead, not the requested pauses.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { startTestDaemon, type TestDaemon } from '../test/helpers/daemon.js';
import { CdpClient } from './cdp.js';
import { renderTable, summarize, type Comparison } from './stats.js';

const N = Number(process.env.BENCH_N ?? 30);
const DRAG = {
  path: [
    [100, 100],
    [400, 300],
  ],
  steps_per_segment: 10,
  step_delay_ms: 0,
};
const SCROLL = { x: 300, y: 300, delta_y: 1 };

async function time(n: number, run: () => Promise<unknown>): Promise<number[]> {
  await run(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await run();
    samples.push(performance.now() - t);
  }
  return samples;
}

function api(d: TestDaemon, id: string, action: string, body: object) {
  return async () => {
    const res = await d.api('POST', `/browsers/${id}/computer/${action}`, body);
    if (res.status !== 204) throw new Error(`${action}: ${res.status} ${res.text}`);
  };
}

/** The same ops the daemon plans, as one xdotool chain. */
function rawXdotool(display: number, args: string[]) {
  return () => execa('xdotool', args, { env: { DISPLAY: `:${display}` } });
}
const dragSteps = Array.from({ length: 10 }, () => ['mousemove_relative', '--', '30', '20']).flat();
const XDO_DRAG = ['mousemove', '100', '100', 'mousedown', '1', ...dragSteps, 'mouseup', '1'];
const XDO_SCROLL = ['mousemove', '300', '300', 'click', '--repeat', '1', '--delay', '10', '5'];

async function rawCdp(wsUrl: string) {
  const cdp = await CdpClient.connect(wsUrl);
  const session = await cdp.attachToPage();
  const mouse = (params: object) => cdp.send('Input.dispatchMouseEvent', params, session);
  return {
    cdp,
    drag: async () => {
      await mouse({ type: 'mouseMoved', x: 100, y: 100 });
      await mouse({ type: 'mousePressed', x: 100, y: 100, button: 'left', buttons: 1, clickCount: 1 });
      for (let i = 1; i <= 10; i++) await mouse({ type: 'mouseMoved', x: 100 + 30 * i, y: 100 + 20 * i, button: 'left', buttons: 1 });
      await mouse({ type: 'mouseReleased', x: 400, y: 300, button: 'left', buttons: 0, clickCount: 1 });
    },
    scroll: async () => {
      await mouse({ type: 'mouseMoved', x: 300, y: 300 });
      await mouse({ type: 'mouseWheel', x: 300, y: 300, deltaX: 0, deltaY: 120 });
    },
  };
}

async function main() {
  const d = await startTestDaemon();
  const rows: Comparison[] = [];
  try {
    const create = async (headless: boolean) => {
      const res = await d.api('POST', '/browsers', { headless, kiosk_mode: true, viewport: { width: 1024, height: 768 }, timeout_seconds: 600 });
      if (res.status !== 200) throw new Error(res.text);
      return res.body as { session_id: string; cdp_ws_url: string };
    };
    const headful = (await create(false)).session_id;
    const { session_id: headless, cdp_ws_url: cdpUrl } = await create(true);

    const state = JSON.parse(await readFile(join(d.home, 'state.json'), 'utf8'));
    const display = state.sessions.find((s: { id: string }) => s.id === headful).runtime.display as number;
    rows.push({
      metric: 'headful drag (2 points, 10 steps)',
      unit: 'ms',
      rbrowse: summarize(await time(N, api(d, headful, 'drag_mouse', DRAG))),
      raw: summarize(await time(N, rawXdotool(display, XDO_DRAG))),
    });
    rows.push({
      metric: 'headful scroll (1 notch)',
      unit: 'ms',
      rbrowse: summarize(await time(N, api(d, headful, 'scroll', SCROLL))),
      raw: summarize(await time(N, rawXdotool(display, XDO_SCROLL))),
    });

    const raw = await rawCdp(cdpUrl);
    try {
      rows.push({
        metric: 'headless drag (2 points, 10 steps)',
        unit: 'ms',
        rbrowse: summarize(await time(N, api(d, headless, 'drag_mouse', DRAG))),
        raw: summarize(await time(N, raw.drag)),
      });
      rows.push({
        metric: 'headless scroll (1 notch)',
        unit: 'ms',
        rbrowse: summarize(await time(N, api(d, headless, 'scroll', SCROLL))),
        raw: summarize(await time(N, raw.scroll)),
      });
    } finally {
      raw.cdp.close();
    }
  } finally {
    await d.stop();
  }
  console.log(`computer control, n=${N} per metric; raw = xdotool chain / CDP Input on an open connection\n`);
  console.log(renderTable(rows));
}

await main();
