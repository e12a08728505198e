import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import Kernel from '@onkernel/sdk';
import { execa } from 'execa';
import { chromium } from 'playwright';
import { sleep, startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

let d: TestDaemon;
let kernel: Kernel;
let scratch: string;
before(async () => {
  d = await startTestDaemon();
  kernel = new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0, timeout: 120_000 });
  scratch = await mkdtemp(join(tmpdir(), 'rbrowse-replays-'));
});
after(async () => {
  await d?.stop();
  await rm(scratch, { recursive: true, force: true });
});

/** What ffprobe reads of an mp4: its container, video codec, size and duration. */
async function probe(bytes: Buffer): Promise<{ format: string; codec: string; width: number; height: number; seconds: number }> {
  const file = join(scratch, `${Date.now()}-${Math.random()}.mp4`);
  await writeFile(file, bytes);
  const r = await execa('ffprobe', [
    '-v',
    'error',
    '-show_entries',
    'format=format_name,duration:stream=codec_name,width,height',
    '-of',
    'json',
    file,
  ]);
  const info = JSON.parse(r.stdout) as {
    format: { format_name: string; duration: string };
    streams: { codec_name: string; width: number; height: number }[];
  };
  const video = info.streams[0]!;
  return {
    format: info.format.format_name,
    codec: video.codec_name,
    width: video.width,
    height: video.height,
    seconds: Number(info.format.duration),
  };
}

/** Red pixels in the video's last frame (the fixture's box is pure red). */
async function redPixelsAtTheEnd(bytes: Buffer): Promise<number> {
  const file = join(scratch, `${Date.now()}-last.mp4`);
  await writeFile(file, bytes);
  const r = await execa('ffmpeg', ['-v', 'error', '-sseof', '-0.3', '-i', file, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'], {
    encoding: 'buffer',
  });
  const px = Buffer.from(r.stdout as Uint8Array);
  let red = 0;
  for (let i = 0; i + 2 < px.length; i += 3) if (px[i]! > 200 && px[i + 1]! < 60 && px[i + 2]! < 60) red++;
  return red;
}

async function download(id: string, replayId: string): Promise<Buffer> {
  const res = await kernel.browsers.replays.download(replayId, { id });
  return Buffer.from(await res.arrayBuffer());
}

describe('replays', () => {
  for (const headless of [false, true]) {
    test(`a ${headless ? 'headless' : 'headful'} session's screen recorded to a valid mp4 of its viewport's size`, async () => {
      const session = await kernel.browsers.create({ headless, viewport: { width: 1024, height: 768 } });
      const id = session.session_id;
      const browser = await chromium.connectOverCDP(session.cdp_ws_url);
      try {
        const page = browser.contexts()[0]!.pages()[0]!;
        await page.setContent('<body style="margin:0"><div id="box" style="width:100px;height:100px;background:red"></div></body>');
        const started = await kernel.browsers.replays.start(id, { framerate: 10 });
        assert.match(started.replay_id, /^[a-z0-9]{24}$/);
        assert.equal(started.finished_at, null);
        // Something moves, so a screencast has frames to send.
        for (let i = 0; i < 15; i++) {
          await page.evaluate(`document.getElementById('box').style.marginLeft = '${i * 40}px'`);
          await sleep(150);
        }
        await assert.rejects(kernel.browsers.replays.start(id), (e: any) => e.status === 409, 'one recording at a time');
        await assert.rejects(kernel.browsers.replays.download(started.replay_id, { id }), (e: any) => e.status === 409, 'not while it records');
        await kernel.browsers.replays.stop(started.replay_id, { id });
        const [listed] = await kernel.browsers.replays.list(id);
        assert.equal(listed!.replay_id, started.replay_id);
        assert.ok(listed!.finished_at);
        const bytes = await download(id, started.replay_id);
        const video = await probe(bytes);
        assert.ok((await redPixelsAtTheEnd(bytes)) > 5000, 'the page is in the picture');
        assert.match(video.format, /mp4/);
        assert.equal(video.codec, 'h264');
        assert.deepEqual([video.width, video.height], [1024, 768]);
        assert.ok(video.seconds > 0.5 && video.seconds < 15, `duration ${video.seconds} s`);
      } finally {
        await browser.close();
        await kernel.browsers.deleteByID(id);
      }
    });
  }

  test('max_duration_in_seconds stops it by itself; replays outlive the session; replay_view_url plays without a key; other orgs see none', async () => {
    const session = await kernel.browsers.create({ headless: false, viewport: { width: 1024, height: 768 } });
    const id = session.session_id;
    const short = await kernel.browsers.replays.start(id, { max_duration_in_seconds: 2, framerate: 5 });
    await waitFor(async () => (await kernel.browsers.replays.list(id)).every((r) => r.finished_at), 20_000, 'the recording to stop by itself');
    // A second replay, still recording when the session ends: the end finishes it.
    const open = await kernel.browsers.replays.start(id, { framerate: 5 });
    await sleep(1500);
    await kernel.browsers.deleteByID(id);
    // The session's end (which goes on after DELETE answers) finishes the open one.
    const after = await waitFor(
      async () => {
        const list = await kernel.browsers.replays.list(id);
        return list.every((r) => r.finished_at) ? list : null;
      },
      30_000,
      'the session end to finish the open recording',
    );
    assert.deepEqual(
      after!.map((r) => r.replay_id),
      [short.replay_id, open.replay_id],
    );
    const seconds = (await probe(await download(id, short.replay_id))).seconds;
    assert.ok(seconds >= 1 && seconds <= 3, `capped at 2 s: ${seconds}`);

    const viewed = await fetch(after![1]!.replay_view_url!);
    assert.equal(viewed.status, 200);
    assert.equal(viewed.headers.get('content-type'), 'video/mp4');
    assert.equal((await probe(Buffer.from(await viewed.arrayBuffer()))).codec, 'h264');
    const forged = after![1]!.replay_view_url!.replace(/jwt=.*/, 'jwt=forged');
    assert.equal((await fetch(forged)).status, 404);

    const key = (await d.cli(['auth', 'create-key', '--org', 'replays-other'])).stdout.trim();
    assert.equal((await d.api('GET', `/browsers/${id}/replays`, undefined, key)).status, 404);
    assert.equal((await d.api('GET', `/browsers/${id}/replays/${short.replay_id}`, undefined, key)).status, 404);
    assert.equal((await d.api('POST', `/browsers/${id}/replays/${short.replay_id}/stop`)).status, 409, 'stopping a finished one');
    assert.equal((await d.api('GET', `/browsers/${id}/replays/nosuchreplay`)).status, 404);
  });

  test('CLI: replays start, stop, list, download; bad bodies are 400s', async () => {
    const { session_id: id } = await kernel.browsers.create({ headless: true, viewport: { width: 1024, height: 768 } });
    assert.equal((await d.api('POST', `/browsers/${id}/replays`, { framerate: 0 })).status, 400);
    assert.equal((await d.api('POST', `/browsers/${id}/replays`, { record_audio: true })).status, 400);
    // Two starts at once: one records, the other is refused.
    const both = await Promise.all([0, 1].map(() => d.api('POST', `/browsers/${id}/replays`, { framerate: 5 })));
    assert.deepEqual(both.map((r) => r.status).sort(), [200, 409]);
    const first = both.find((r) => r.status === 200)!.body.replay_id as string;
    assert.equal((await d.api('POST', `/browsers/${id}/replays/${first}/stop`)).status, 204);
    const start = await d.cli(['replays', 'start', id, '--framerate', '5']);
    assert.equal(start.exitCode, 0, start.stderr);
    const rid = start.stdout.trim();
    await sleep(1000);
    assert.equal((await d.cli(['replays', 'stop', id, rid])).exitCode, 0);
    assert.deepEqual((await d.cli(['replays', 'list', id, '-q'])).stdout.trim().split('\n'), [first, rid]);
    const out = join(scratch, 'cli.mp4');
    const dl = await d.cli(['replays', 'download', id, rid, '-o', out]);
    assert.equal(dl.exitCode, 0, dl.stderr);
    const r = await execa('ffprobe', ['-v', 'error', '-show_entries', 'stream=codec_name', '-of', 'csv=p=0', out]);
    assert.equal(r.stdout.trim(), 'h264');
    await kernel.browsers.deleteByID(id);
  });
});

describe('the replay size cap', () => {
  test('a recording stops by itself at RBROWSE_REPLAY_MAX_MB, leaving a valid mp4 within it', async () => {
    const capped = await startTestDaemon({ env: { RBROWSE_REPLAY_MAX_MB: '1' } });
    try {
      const k = new Kernel({ apiKey: capped.apiKey, baseURL: capped.baseUrl, maxRetries: 0, timeout: 120_000 });
      const session = await k.browsers.create({ headless: false, viewport: { width: 1024, height: 768 } });
      const browser = await chromium.connectOverCDP(session.cdp_ws_url);
      try {
        // Noise on every frame (what encodes worst, so the cap is reached within seconds), in a
        // corner: a frame is then far smaller than the cap, which ffmpeg checks between frames.
        await browser
          .contexts()[0]!
          .pages()[0]!
          .setContent(`<body style="margin:0"><canvas id="c" width="256" height="256"></canvas><script>
          const c = document.getElementById('c').getContext('2d');
          const img = c.createImageData(256, 256);
          (function draw() { for (let i = 0; i < img.data.length; i++) img.data[i] = Math.random() * 256; c.putImageData(img, 0, 0); requestAnimationFrame(draw); })();
        </script></body>`);
        const started = await k.browsers.replays.start(session.session_id, { framerate: 20 });
        const finished = (await waitFor(
          async () => {
            const [r] = await k.browsers.replays.list(session.session_id);
            return r?.finished_at ? r : undefined;
          },
          60_000,
          'the capped recording to finish by itself',
        ))!;
        assert.equal(finished.replay_id, started.replay_id);
        const res = await k.browsers.replays.download(started.replay_id, { id: session.session_id });
        const bytes = Buffer.from(await res.arrayBuffer());
        // Stopped near the cap (1 MiB), never past it.
        assert.ok(bytes.length > 256 * 1024 && bytes.length <= 1024 * 1024, `${bytes.length} bytes`);
        const info = await probe(bytes);
        assert.equal(info.codec, 'h264');
        assert.equal(info.width, 1024);
      } finally {
        await browser.close();
      }
      await k.browsers.deleteByID(session.session_id);
    } finally {
      await capped.stop();
    }
  });
});
