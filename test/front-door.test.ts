/**
 * The daemon's front door under attack: slow and half-open clients (also from another local uid),
 * foreign Host names (DNS rebinding) and Origins (a web page's websocket), oversized websocket
 * messages, websocket floods, and a read-only live viewer that tries to type. Each attack has its
 * control: the same client doing it right is served.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright';
import WebSocket from 'ws';
import { callApi, daemonPid, sleep, startTestDaemon, upgradeStatus, waitFor, type TestDaemon } from './helpers/daemon.js';
import { startFlood } from './helpers/flood.js';

const MAX_CONNECTIONS = 48;
let d: TestDaemon;
let admin = '';
let port = 0;
before(async () => {
  d = await startTestDaemon({
    env: {
      RBROWSE_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
      RBROWSE_HEADERS_TIMEOUT_MS: '1500',
      RBROWSE_SESSION_WEBSOCKETS: '3',
    },
  });
  admin = (await import('node:fs')).readFileSync(`${d.home}/credentials/admin-token`, 'utf8').trim();
  port = Number(new URL(d.baseUrl).port);
});
after(async () => d?.stop());

const connections = async () => (await callApi(d.baseUrl, 'GET', '/admin/resources', undefined, admin)).body.connections;

/** One request with a Host header of our choosing (fetch may not set it). */
function withHost(host: string, path = '/health'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A raw socket that sends `data` and resolves with what came back and how long until the daemon closed it. */
function rawExchange(data: string | Buffer, waitMs = 10_000): Promise<{ reply: string; closedAfterMs: number | undefined }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const s = net.connect(port, '127.0.0.1', () => s.write(data));
    const chunks: Buffer[] = [];
    // latin1: one character per byte, so a binary reply (websocket frames) survives.
    const reply = () => Buffer.concat(chunks).toString('latin1');
    s.on('data', (b: Buffer) => chunks.push(b));
    s.on('error', () => {});
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ reply: reply(), closedAfterMs: undefined });
    }, waitMs);
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ reply: reply(), closedAfterMs: Date.now() - started });
    });
  });
}

async function headlessSession(): Promise<{ id: string; cdp: string }> {
  const res = await d.api('POST', '/browsers', { headless: true });
  assert.equal(res.status, 200, res.text);
  return { id: res.body.session_id, cdp: res.body.cdp_ws_url };
}

/** One CDP call over a fresh websocket. */
function cdpVersion(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    ws.once('open', () => ws.send(JSON.stringify({ id: 1, method: 'Browser.getVersion' })));
    ws.once('message', (m) => {
      resolve(JSON.parse(String(m)).result?.product ?? '');
      ws.close();
    });
    ws.once('error', reject);
  });
}

describe('the front door', () => {
  test('a client that never finishes its headers is cut off with a 408; one that does is served', async () => {
    const slow = await rawExchange('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    assert.ok(slow.closedAfterMs !== undefined, 'the daemon closed the half-sent request');
    assert.ok(slow.closedAfterMs! >= 1000 && slow.closedAfterMs! < 8000, `cut after ${slow.closedAfterMs} ms (limit 1500)`);
    assert.match(slow.reply, /^HTTP\/1\.1 408 /);
    assert.match(slow.reply, /"code":"request_timeout"/);
    // Control: the same request, finished, is answered at once.
    const whole = await rawExchange('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    assert.match(whole.reply, /^HTTP\/1\.1 200 /);
    // Clients that never read their 408 (nor close) do not keep the daemon's descriptors either.
    // Counted in /proc, not over HTTP: on a loaded machine an API call may take longer than they live.
    const pid = await daemonPid(d);
    const fds = async () => (await readdir(`/proc/${pid}/fd`)).length;
    const idle = await fds();
    const mute = Array.from({ length: 10 }, () => {
      const s = net.connect(port, '127.0.0.1', () => s.write('GET /hea'));
      s.pause();
      s.on('error', () => {});
      return s;
    });
    try {
      // Accepted one by one on a busy machine, the first may be cut (after 1.5 s) before the last
      // is in: the peak, read every 20 ms, shows most of them held at once.
      let peak = 0;
      const until = Date.now() + 10_000;
      while (peak < idle + 8 && Date.now() < until) {
        peak = Math.max(peak, await fds());
        await sleep(20);
      }
      assert.ok(peak >= idle + 8, `the mute clients were accepted: at most ${peak - idle} descriptors more than idle`);
      await waitFor(async () => (await fds()) <= idle + 2, 15_000, 'the mute clients to be cut');
    } finally {
      for (const s of mute) s.destroy();
    }
  });

  test('a flood of half-open connections from another local user leaves room for API clients and their websockets', async () => {
    const s = await headlessSession();
    // Three times the cap, each with half a request line, reopened as soon as the daemon closes it.
    const attacker = await startFlood(port, MAX_CONNECTIONS * 3, 5);
    try {
      // The attack works where it should: the daemon's connections fill to its cap and newcomers
      // push the flood's out.
      await waitFor(async () => (await connections()).open >= MAX_CONNECTIONS - 2, 20_000, 'the flood to fill the connections');
      // A failing step says which it was (a cut connection's error does not). A client told 503
      // with Retry-After (its connection was taken for a newer one before the daemon read its
      // request) tries again after it, as the SDKs do; a hang-up or any other answer fails.
      let retried = 0;
      const step = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
        for (let attempt = 1; ; attempt++) {
          try {
            const result = await run();
            if (attempt < 5 && (result as { status?: number })?.status === 503) {
              retried++;
              await sleep(1000);
              continue;
            }
            return result;
          } catch (err) {
            if (attempt < 5 && /Unexpected server response: 503/.test((err as Error).message)) {
              retried++;
              await sleep(1000);
              continue;
            }
            throw new Error(`${name}: ${(err as Error).message}`, { cause: err });
          }
        }
      };
      const cdp = await step('connectOverCDP', () => chromium.connectOverCDP(s.cdp));
      try {
        for (let i = 0; i < 20; i++) {
          const health = await step(`GET /health, round ${i}`, () => d.api('GET', '/health', undefined, null));
          assert.equal(health.status, 200);
          const list = await step(`GET /browsers, round ${i}`, () => d.api('GET', '/browsers'));
          assert.equal(list.status, 200);
        }
        // An open CDP connection is busy, never evicted: it still answers.
        const page = cdp.contexts()[0]!.pages()[0] ?? (await cdp.contexts()[0]!.newPage());
        assert.equal(await step('evaluate on the open connection', () => page.evaluate(() => 6 * 7)), 42);
        assert.match(await step('a new CDP websocket', () => cdpVersion(s.cdp)), /Chrome/);
      } finally {
        await cdp.close();
      }
      const stats = await connections();
      assert.ok(stats.evicted > 0, JSON.stringify(stats));
      assert.ok(retried <= 10, `${retried} of the client's steps were told to retry`);
      assert.ok(stats.open <= MAX_CONNECTIONS, JSON.stringify(stats));
    } finally {
      const opened = await attacker.stop();
      assert.ok(opened > MAX_CONNECTIONS * 3, `the flood reconnected (${opened} opened)`);
      // Its places are free again: a burst of new connections from the same address is served.
      await waitFor(async () => (await connections()).open < 10, 10_000, 'the flood to be gone');
      const burst = await Promise.all(
        Array.from({ length: MAX_CONNECTIONS - 8 }, () => rawExchange('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')),
      );
      assert.ok(
        burst.every((r) => r.reply.startsWith('HTTP/1.1 200 ')),
        burst.map((r) => r.reply.slice(0, 12)).join(),
      );
      await d.api('DELETE', `/browsers/${s.id}`);
    }
  });

  test('a foreign Host name (DNS rebinding) is refused with 403 on HTTP and on websockets; loopback names are served', async () => {
    const evil = await withHost(`rebind.example:${port}`);
    assert.equal(evil.status, 403);
    assert.equal(JSON.parse(evil.body).code, 'forbidden');
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `app.localhost:${port}`]) {
      assert.equal((await withHost(host)).status, 200, host);
    }
    const s = await headlessSession();
    try {
      const refused = await new Promise<number>((resolve) => {
        const ws = new WebSocket(s.cdp, { headers: { host: `rebind.example:${port}` } });
        ws.once('unexpected-response', (_req, res) => (resolve(res.statusCode ?? 0), ws.terminate()));
        ws.once('open', () => (resolve(101), ws.close()));
        ws.once('error', () => resolve(-1));
      });
      assert.equal(refused, 403);
      assert.equal(await upgradeStatus(s.cdp), 101, 'the same websocket with its own Host opens');
    } finally {
      await d.api('DELETE', `/browsers/${s.id}`);
    }
  });

  test("a web page's websocket (an Origin) is refused as Chromium refuses it; clients outside a browser are served", async () => {
    const s = await headlessSession();
    try {
      const fromPage = await new Promise<{ status: number; body: string }>((resolve) => {
        const ws = new WebSocket(s.cdp, { origin: 'http://evil.example' });
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        ws.once('open', () => (resolve({ status: 101, body: '' }), ws.close()));
        ws.once('error', () => {});
      });
      assert.equal(fromPage.status, 403);
      assert.match(fromPage.body, /RBROWSE_REMOTE_ALLOW_ORIGINS/);
      // The attack from a real page: its websocket to the session's CDP URL never opens.
      const browser = await chromium.connectOverCDP(s.cdp);
      try {
        const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
        await page.goto('data:text/html,<title>evil</title>');
        const outcome = await page.evaluate(
          (url) =>
            new Promise<string>((resolve) => {
              const ws = new WebSocket(url);
              ws.onopen = () => resolve('open');
              ws.onerror = () => resolve('refused');
              setTimeout(() => resolve('timeout'), 5000);
            }),
          s.cdp.replace('127.0.0.1', 'localhost'),
        );
        // A page inside the box cannot reach the daemon's port at all, or is refused by origin.
        assert.notEqual(outcome, 'open');
      } finally {
        await browser.close();
      }
      assert.match(await cdpVersion(s.cdp), /Chrome/, 'the same websocket without an Origin opens');
    } finally {
      await d.api('DELETE', `/browsers/${s.id}`);
    }
  });

  test('a CDP message past 100 MB closes that connection with 1009; the session and the daemon go on', async () => {
    const s = await headlessSession();
    try {
      // Control: a large message under the limit is passed on and answered.
      const big = await new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(s.cdp, { perMessageDeflate: false, maxPayload: 0 });
        // Chromium ignores a parameter it does not know: the message's size is all that matters.
        ws.once('open', () => ws.send(JSON.stringify({ id: 1, method: 'Browser.getVersion', params: { pad: 'a'.repeat(8 * 1024 * 1024) } })));
        ws.on('message', (m) => {
          const msg = JSON.parse(String(m));
          if (msg.id === 1) {
            resolve(msg.result?.product ? 8 * 1024 * 1024 : JSON.stringify(msg).length);
            ws.close();
          }
        });
        ws.once('error', reject);
      });
      assert.equal(big, 8 * 1024 * 1024);
      const closed = await new Promise<number>((resolve) => {
        const ws = new WebSocket(s.cdp, { perMessageDeflate: false });
        ws.once('open', () => ws.send(Buffer.alloc(101 * 1024 * 1024, 0x20)));
        ws.once('close', (code) => resolve(code));
        ws.once('error', () => {});
      });
      assert.equal(closed, 1009);
      assert.match(await cdpVersion(s.cdp), /Chrome/);
      await waitFor(async () => (await connections()).held_bytes === 0, 5000, 'the held bytes to be let go');
    } finally {
      await d.api('DELETE', `/browsers/${s.id}`);
    }
  });

  test('a CDP frame the protocol forbids (unmasked) closes that connection with 1002 and says why; the session goes on', async () => {
    const s = await headlessSession();
    /** Opens the gateway's websocket by hand with `frames` right behind the handshake; the close frame that ends it. */
    const closeAfter = async (frames: Buffer) => {
      const url = new URL(s.cdp);
      const handshake =
        `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';
      const { reply } = await rawExchange(Buffer.concat([Buffer.from(handshake), frames]));
      assert.match(reply, /^HTTP\/1.1 101/);
      const bytes = Buffer.from(reply.slice(reply.indexOf('\r\n\r\n') + 4), 'latin1');
      // The connection ends with the close frame (opcode 8, unmasked).
      const at = bytes.lastIndexOf(0x88);
      assert.ok(at >= 0, `no close frame in ${bytes.toString('hex')}`);
      const body = bytes.subarray(at + 2, at + 2 + bytes[at + 1]!);
      return { code: body.readUInt16BE(0), reason: body.subarray(2).toString() };
    };
    try {
      // Control: a masked close frame with code 4000 comes back as Chromium's own answer (1000).
      const masked = Buffer.from([0x88, 0x82, 1, 2, 3, 4, 0x0f ^ 1, 0xa0 ^ 2]);
      assert.equal((await closeAfter(masked)).code, 1000);
      const unmasked = Buffer.concat([Buffer.from([0x81, 0x02]), Buffer.from('hi')]);
      const refused = await closeAfter(unmasked);
      assert.equal(refused.code, 1002);
      assert.match(refused.reason, /masked/);
      assert.match(await cdpVersion(s.cdp), /Chrome/);
    } finally {
      await d.api('DELETE', `/browsers/${s.id}`);
    }
  });

  test('a BiDi message past 100 MB and a live viewer message past 1 MB close with 1009; smaller ones pass', async () => {
    const res = await d.api('POST', '/browsers', { viewport: { width: 1024, height: 768 } });
    assert.equal(res.status, 200, res.text);
    const s = res.body;
    const closeCode = (url: string, message: Buffer | string) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(url, { perMessageDeflate: false });
        ws.once('open', () => ws.send(message));
        ws.once('close', (code) => resolve(code));
        ws.once('error', () => {});
        // A refused upgrade closes with 1006: its status says why instead.
        ws.once('unexpected-response', (_req, res) => {
          resolve(-(res.statusCode ?? 0));
          ws.terminate();
        });
      });
    try {
      assert.equal(await closeCode(s.webdriver_ws_url, Buffer.alloc(101 * 1024 * 1024, 0x20)), 1009);
      // Control: the BiDi connection answers a command of its own.
      const answer = await new Promise<any>((resolve, reject) => {
        const ws = new WebSocket(s.webdriver_ws_url, { perMessageDeflate: false });
        ws.once('open', () => ws.send(JSON.stringify({ id: 1, method: 'session.status', params: {} })));
        ws.on('message', (m) => {
          const msg = JSON.parse(String(m));
          if (msg.id === 1) resolve(msg), ws.close();
        });
        ws.once('error', reject);
      });
      assert.equal(answer.type, 'success', JSON.stringify(answer));
      const live = `ws://127.0.0.1:${port}/browser/live/ws?jwt=${encodeURIComponent(new URL(s.browser_live_view_url).searchParams.get('jwt')!)}`;
      assert.equal(await closeCode(live, Buffer.alloc(2 * 1024 * 1024, 0)), 1009);
      await waitFor(async () => (await connections()).held_bytes === 0, 5000, 'the held bytes to be let go');
    } finally {
      await d.api('DELETE', `/browsers/${s.session_id}`);
    }
  });

  test("a session's websockets are capped (RBROWSE_SESSION_WEBSOCKETS): the next is a 429 until one closes", async () => {
    const s = await headlessSession();
    const open: WebSocket[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const ws = new WebSocket(s.cdp, { perMessageDeflate: false });
        await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
        open.push(ws);
      }
      assert.equal(await upgradeStatus(s.cdp), 429);
      // Another session is not affected by this one's websockets.
      const other = await headlessSession();
      assert.equal(await upgradeStatus(other.cdp), 101);
      await d.api('DELETE', `/browsers/${other.id}`);
      const gone = open.pop()!;
      await new Promise((resolve) => (gone.once('close', resolve), gone.close()));
      await waitFor(async () => (await upgradeStatus(s.cdp)) === 101, 5000, 'a place to free up');
    } finally {
      for (const ws of open) ws.terminate();
      await d.api('DELETE', `/browsers/${s.id}`);
    }
  });
});

/** A bare RFB client over the live view's websocket: the handshake, then pointer moves. */
async function rfbMoves(wsUrl: string, points: [number, number][]): Promise<void> {
  const ws = new WebSocket(wsUrl, { perMessageDeflate: false });
  const incoming: Buffer[] = [];
  let waiter: (() => void) | undefined;
  ws.on('message', (m: Buffer) => {
    incoming.push(m);
    waiter?.();
  });
  const bytes = async (n: number): Promise<Buffer> => {
    for (;;) {
      const all = Buffer.concat(incoming);
      if (all.length >= n) {
        incoming.length = 0;
        if (all.length > n) incoming.push(all.subarray(n));
        return all.subarray(0, n);
      }
      await new Promise<void>((r) => (waiter = r));
    }
  };
  await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
  try {
    const version = await bytes(12);
    ws.send(version);
    const count = (await bytes(1))[0]!;
    const types = await bytes(count);
    assert.ok(types.includes(1), 'security None offered');
    ws.send(Buffer.from([1]));
    assert.equal((await bytes(4)).readUInt32BE(0), 0);
    ws.send(Buffer.from([1])); // ClientInit: shared
    const init = await bytes(24);
    await bytes(init.readUInt32BE(20));
    for (const [x, y] of points) {
      const ev = Buffer.alloc(6);
      ev[0] = 5;
      ev.writeUInt16BE(x, 2);
      ev.writeUInt16BE(y, 4);
      ws.send(ev);
      await sleep(50);
    }
    await sleep(500);
  } finally {
    ws.close();
  }
}

describe('the live view', () => {
  test('read-only is enforced by the daemon: a view jwt or readOnly=true moves nothing; the live jwt does; the page may only be framed by local pages', async () => {
    const res = await d.api('POST', '/browsers', { viewport: { width: 1024, height: 768 } });
    assert.equal(res.status, 200, res.text);
    const s = res.body;
    const liveUrl = new URL(s.browser_live_view_url);
    const liveJwt = liveUrl.searchParams.get('jwt')!;
    const browser = await chromium.connectOverCDP(s.cdp_ws_url);
    try {
      const page = browser.contexts()[0]!.pages()[0]!;
      await page.setContent('<body style="margin:0;height:100vh" onmousemove="window.moves=(window.moves||0)+1"></body>');
      const moves = () => page.evaluate(() => (window as unknown as { moves?: number }).moves ?? 0);

      // The page asked read-only with the full jwt moves to the read-only jwt.
      const redirect = await fetch(`${d.baseUrl}/browser/live?jwt=${encodeURIComponent(liveJwt)}&readOnly=true`, { redirect: 'manual' });
      assert.equal(redirect.status, 303);
      const viewJwt = new URL(redirect.headers.get('location')!, d.baseUrl).searchParams.get('jwt')!;
      assert.ok(viewJwt && viewJwt !== liveJwt);
      const pageRes = await fetch(`${d.baseUrl}/browser/live?jwt=${encodeURIComponent(viewJwt)}`);
      assert.equal(pageRes.status, 200);
      assert.match(pageRes.headers.get('content-security-policy') ?? '', /frame-ancestors 'self' http:\/\/localhost:\*/);

      const ws = (jwt: string, extra = '') => `ws://127.0.0.1:${port}/browser/live/ws?jwt=${encodeURIComponent(jwt)}${extra}`;
      const path: [number, number][] = [
        [300, 300],
        [320, 330],
        [340, 360],
        [360, 390],
      ];
      await rfbMoves(ws(viewJwt), path);
      await rfbMoves(ws(liveJwt, '&readOnly=true'), path);
      assert.equal(await moves(), 0, 'a read-only viewer moved the pointer');
      // Control: the same client with the live jwt moves it.
      await rfbMoves(ws(liveJwt), path);
      await waitFor(async () => (await moves()) > 0, 5000, 'the pointer moves of a writable viewer');
    } finally {
      await browser.close();
      await d.api('DELETE', `/browsers/${s.session_id}`);
    }
  });
});
