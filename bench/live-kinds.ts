/**
 * A headless session's live view (CDP screencast frames on a canvas) against a headful one's
 * (noVNC over x11vnc), same page, same viewport, same run:
 *   - frames per second a viewer draws of a page that animates continuously;
 *   - input-to-frame latency: from the viewer's mouse press to the first frame the viewer draws
 *     that shows the page's answer (the page turns its background another colour on mousedown).
 * Both are measured inside the viewer page, on its own clock.
 */
import { performance } from 'node:perf_hooks';
import { chromium, type Browser, type Page } from 'playwright';
import { sleep } from '../daemon/lib/procs.js';
import type { TestDaemon } from '../test/helpers/daemon.js';
import { openLiveView } from '../test/helpers/viewer.js';
import { createSession, deleteSession } from './scenarios.js';
import { percentile } from './stats.js';

export interface KindResult {
  kind: 'headless (screencast)' | 'headful (noVNC)';
  fps: number;
  sourceFps: number;
  latencies: number[];
}

/** Counts the viewer canvas's redraws (a changed pixel in a 16x16 grid, sampled every animation frame). */
const COUNT_FRAMES = `(() => {
  const canvas = document.querySelector('#screen canvas') || document.getElementById('screen');
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  const w = window.__frames = { count: 0, last: '' };
  const tick = () => {
    if (canvas.width > 16) {
      const xs = []; for (let i = 1; i < 16; i++) xs.push(Math.floor(canvas.width * i / 16));
      const y = Math.floor(canvas.height / 2);
      const sig = xs.map((x) => ctx.getImageData(x, y, 1, 1).data.slice(0, 3).join()).join('|');
      if (sig !== w.last) { w.count++; w.last = sig; }
    }
    requestAnimationFrame(tick);
  };
  tick();
})()`;

/** Times one press: from the viewer's mousedown to the first animation frame whose canvas shows `rgb`. */
const PRESS_TO_FRAME = (rgb: number[]) => `new Promise((resolve) => {
  const canvas = document.querySelector('#screen canvas') || document.getElementById('screen');
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  const px = Math.floor(canvas.width / 2), py = Math.floor(canvas.height / 2);
  let start;
  const seen = () => { const d = ctx.getImageData(px, py, 1, 1).data; return ${JSON.stringify(rgb)}.every((v, i) => Math.abs(v - d[i]) < 24); };
  const poll = () => { if (seen()) resolve(performance.now() - start); else if (performance.now() - start > 5000) resolve(-1); else requestAnimationFrame(poll); };
  window.addEventListener('mousedown', () => { start = performance.now(); requestAnimationFrame(poll); }, { once: true, capture: true });
})`;

const TOGGLE_PAGE =
  '<body style="margin:0;height:100vh;background:rgb(20,20,200)"><script>let on=false;addEventListener("mousedown",()=>{on=!on;document.body.style.background=on?"rgb(220,30,30)":"rgb(20,20,200)";})</script></body>';
const COLOURS = [
  [220, 30, 30],
  [20, 20, 200],
];

async function oneKind(
  d: TestDaemon,
  viewer: Browser,
  animatedUrl: string,
  headless: boolean,
  seconds: number,
  presses: number,
): Promise<KindResult> {
  const viewport = { width: 1024, height: 768 };
  const session = await createSession(d, { headless, kiosk_mode: true, viewport, timeout_seconds: 600 });
  const cdp = await chromium.connectOverCDP(session.cdp_ws_url);
  let view: Page | undefined;
  try {
    const page = cdp.contexts()[0]!.pages()[0]!;
    await page.goto(animatedUrl);
    const url = (await d.api('GET', `/browsers/${session.session_id}/live_view`)).body.url as string;
    const [w, h] = (await page.evaluate(() => [innerWidth, innerHeight])) as [number, number];
    view = await openLiveView(viewer, url, { width: w, height: h });
    await sleep(2000);
    await view.evaluate(COUNT_FRAMES);
    const raf0 = (await page.evaluate('window.rafCount')) as number;
    const f0 = (await view.evaluate('window.__frames.count')) as number;
    const t0 = performance.now();
    await sleep(seconds * 1000);
    const elapsed = (performance.now() - t0) / 1000;
    const fps = (((await view.evaluate('window.__frames.count')) as number) - f0) / elapsed;
    const sourceFps = (((await page.evaluate('window.rafCount')) as number) - raf0) / elapsed;

    await page.setContent(TOGGLE_PAGE);
    await sleep(1000);
    const latencies: number[] = [];
    for (let i = 0; i < presses; i++) {
      const timing = view.evaluate(PRESS_TO_FRAME(COLOURS[i % 2]!)) as Promise<number>;
      await view.mouse.move(w / 2, h / 2);
      await view.mouse.down();
      await view.mouse.up();
      const ms = await timing;
      if (ms >= 0) latencies.push(ms);
      await sleep(300);
    }
    return { kind: headless ? 'headless (screencast)' : 'headful (noVNC)', fps, sourceFps, latencies };
  } finally {
    await view?.close();
    await cdp.close();
    await deleteSession(d, session.session_id);
  }
}

export async function compareKinds(
  d: TestDaemon,
  viewer: Browser,
  animatedUrl: string,
  o: { seconds: number; presses: number },
): Promise<KindResult[]> {
  return [await oneKind(d, viewer, animatedUrl, true, o.seconds, o.presses), await oneKind(d, viewer, animatedUrl, false, o.seconds, o.presses)];
}

export function reportKinds(results: KindResult[]): void {
  console.log('\nheadless live view (CDP screencast) against headful (noVNC), 1024x768, same animated page, same run:');
  console.log('kind                    frames/s drawn  page frames/s  input->frame p50 / p90 ms  presses seen');
  for (const r of results) {
    const sorted = [...r.latencies].sort((a, b) => a - b);
    const lat = sorted.length ? `${percentile(sorted, 0.5).toFixed(0)} / ${percentile(sorted, 0.9).toFixed(0)}` : '-';
    console.log(
      `${r.kind.padEnd(22)}  ${r.fps.toFixed(1).padEnd(14)}  ${r.sourceFps.toFixed(1).padEnd(13)}  ${lat.padEnd(25)}  ${r.latencies.length}`,
    );
  }
}
