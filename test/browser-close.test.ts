// A client's Browser.close (or Browser.crash) ends only its own connection, however the command is
// framed, padded, escaped or wrapped. Each form is first sent to a raw Chromium, which it closes
// (the control: the attack works there), then through the daemon's gateway to a session that
// lives on.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { closingCommand } from '../daemon/http/gateways/browser-close.js';
import { resolveChromium } from '../src/system-deps.js';
import { startTestDaemon, type TestDaemon, waitFor } from './helpers/daemon.js';

const found = (json: string) => closingCommand(Buffer.from(json));

describe('which commands close the browser (pure logic)', () => {
  test('Browser.close and Browser.crash, however spelled, are found with their id and session', () => {
    const flat: [string, string][] = [
      ['plain', '{"id":1,"method":"Browser.close"}'],
      ['crash', '{"id":1,"method":"Browser.crash"}'],
      ['an escaped method', '{"id":1,"method":"\\u0042rowser\\u002eclose"}'],
      ['an escaped key', '{"id":1,"\\u006dethod":"Browser.close"}'],
      ['padded', `{"id":1,${' '.repeat(9000)}"method":"Browser.close"}`],
      ['with params', `{"id":1,"method":"Browser.close","params":{"x":"${'a'.repeat(9000)}"}}`],
      // Chromium takes control characters raw inside strings; JSON.parse does not.
      ['a raw tab in a string', '{"id":1,"method":"Browser.close","params":{"x":"a\tb"}}'],
      ['an id as 1e0', '{"id":1e0,"method":"Browser.close"}'],
    ];
    for (const [what, json] of flat) assert.deepEqual(found(json), { kind: 'flat', id: 1 }, what);
    assert.deepEqual(found('{"id":4,"sessionId":"S1","method":"Browser.close"}'), { kind: 'flat', id: 4, sessionId: 'S1' });
  });

  test('one carried inside Target.sendMessageToTarget, or one that cannot be read, is hidden', () => {
    const wrap = (message: string) => JSON.stringify({ id: 2, method: 'Target.sendMessageToTarget', params: { sessionId: 'S', message } });
    assert.deepEqual(found(wrap('{"id":5,"method":"Browser.close"}')), { kind: 'hidden' });
    assert.deepEqual(found(wrap('{"id":5,"method":"Browser\\u002ecrash"}')), { kind: 'hidden' });
    assert.deepEqual(found(wrap(wrap('{"id":5,"method":"Browser.close"}'))), { kind: 'hidden' }, 'twice wrapped');
    assert.deepEqual(found('{"id":1,"method":"Browser.close"'), { kind: 'hidden' }, 'unreadable');
  });

  test('other commands pass, also ones that mention Browser.close or hold escapes', () => {
    const passing = [
      '{"id":1,"method":"Browser.getVersion"}',
      '{"id":1,"method":"Runtime.evaluate","params":{"expression":"\'Browser.close\'"}}',
      '{"id":1,"method":"Runtime.evaluate","params":{"expression":"\\"\\u00e9\\""}}',
      JSON.stringify({ id: 2, method: 'Target.sendMessageToTarget', params: { sessionId: 'S', message: '{"id":5,"method":"Page.enable"}' } }),
      // Chromium refuses a command without a number id.
      '{"method":"Browser.close"}',
      '{"id":"1","method":"Browser.close"}',
      '[1,"Browser.close"]',
      '"Browser.close"',
    ];
    for (const json of passing) assert.equal(found(json), undefined, json);
  });
});

/** Each way of sending a closing command; `attach` asks for a page session first (flat or not). */
interface Attack {
  name: string;
  attach?: 'flat' | 'wrapped';
  send(ws: WebSocket, session?: string): void;
  /** Through the gateway: answered under its id (flat), or closed with 1008. */
  answered: boolean;
}

const padded = `{"id":1,${' '.repeat(6000)}"method":"Browser.close"}`;
const ATTACKS: Attack[] = [
  {
    name: 'in two fragments',
    answered: true,
    send: (ws) => {
      ws.send('{"id":1,"method":"Brow', { fin: false });
      ws.send('ser.close"}', { fin: true });
    },
  },
  {
    name: 'padded past 6 kB, in fragments with a ping between',
    answered: true,
    send: (ws) => {
      ws.send(padded.slice(0, 4000), { fin: false });
      ws.ping();
      ws.send(padded.slice(4000), { fin: true });
    },
  },
  { name: 'escaped', answered: true, send: (ws) => ws.send('{"id":1,"method":"Browser\\u002eclose"}') },
  { name: 'with a raw control character', answered: true, send: (ws) => ws.send('{"id":1,"method":"Browser.close","params":{"x":"a\u0001b"}}') },
  { name: 'Browser.crash', answered: true, send: (ws) => ws.send('{"id":1,"method":"Browser.crash"}') },
  {
    name: "to a page's flat session",
    attach: 'flat',
    answered: true,
    send: (ws, session) => ws.send(JSON.stringify({ id: 1, sessionId: session, method: 'Browser.close' })),
  },
  {
    name: 'inside Target.sendMessageToTarget',
    attach: 'wrapped',
    answered: false,
    send: (ws, session) =>
      ws.send(
        JSON.stringify({ id: 1, method: 'Target.sendMessageToTarget', params: { sessionId: session, message: '{"id":5,"method":"Browser.close"}' } }),
      ),
  },
];

/** Calls a CDP method over `ws` and waits for its answer. */
function call(ws: WebSocket, id: number, method: string, params: object = {}, sessionId?: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: WebSocket.RawData) => {
      const msg = JSON.parse(String(m));
      if (msg.id !== id) return;
      ws.off('message', onMessage);
      if (msg.error) reject(new Error(`${method}: ${msg.error.message}`));
      else resolve(msg.result);
    };
    ws.on('message', onMessage);
    ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
  });
}

async function open(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise((r, j) => ws.once('open', r).once('error', j));
  return ws;
}

/** Opens a connection and makes the attack on it (attaching to a page first when it needs to). */
async function attack(url: string, a: Attack): Promise<{ ws: WebSocket; closed: Promise<number>; answers: any[] }> {
  const ws = await open(url);
  const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
  let session: string | undefined;
  if (a.attach) {
    const { targetInfos } = await call(ws, 90, 'Target.getTargets');
    const page = targetInfos.find((t: { type: string }) => t.type === 'page');
    session = (await call(ws, 91, 'Target.attachToTarget', { targetId: page.targetId, flatten: a.attach === 'flat' })).sessionId;
  }
  const answers: any[] = [];
  ws.on('message', (m) => {
    const msg = JSON.parse(String(m));
    if (msg.id === 1) answers.push(msg);
  });
  a.send(ws, session);
  return { ws, closed, answers };
}

/** A Chromium with nothing in front of it: the control. */
async function rawChromium(dir: string): Promise<{ url: string; exited: Promise<void>; kill(): void }> {
  const child = spawn(
    resolveChromium(),
    ['--headless', '--no-sandbox', '--remote-debugging-port=0', `--user-data-dir=${dir}`, '--no-first-run', 'about:blank'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b));
  const url = (await waitFor(() => /DevTools listening on (ws:\/\/\S+)/.exec(err)?.[1], 30_000, 'the raw Chromium'))!;
  return { url, exited, kill: () => child.kill('SIGKILL') };
}

describe('a closing command through the gateway', { timeout: 300_000 }, () => {
  let d: TestDaemon;
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rbrowse-browser-close-'));
    d = await startTestDaemon({ env: { RBROWSE_STANDBY: 'headless=1' } });
  });
  after(async () => {
    await d?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('control: every form closes a raw Chromium', async () => {
    for (const [i, a] of ATTACKS.entries()) {
      const raw = await rawChromium(join(dir, `raw-${i}`));
      try {
        const { ws } = await attack(raw.url, a);
        const gone = await Promise.race([raw.exited.then(() => true), new Promise((r) => setTimeout(() => r(false), 10_000))]);
        ws.terminate();
        assert.equal(gone, true, `${a.name}: the raw Chromium exits`);
      } finally {
        raw.kill();
      }
    }
  });

  test('each form ends only its connection: the session and its pages live on', async () => {
    const s = (await d.api('POST', '/browsers', { headless: true })).body;
    const keeper = await open(s.cdp_ws_url);
    const { targetId } = await call(keeper, 1, 'Target.createTarget', { url: 'about:blank#kept' });
    keeper.close();
    for (const a of ATTACKS) {
      const { closed, answers } = await attack(s.cdp_ws_url, a);
      const code = await closed;
      if (a.answered) {
        assert.equal(answers.length, 1, `${a.name}: answered under its own id`);
        assert.ok(answers[0].result, `${a.name}: answered as a command that worked`);
      } else {
        assert.equal(code, 1008, `${a.name}: closed as a policy refusal`);
      }
      assert.equal((await d.api('GET', `/browsers/${s.session_id}`)).body.deleted_at, undefined, `${a.name}: the session lives`);
      const again = await open(s.cdp_ws_url);
      const { targetInfos } = await call(again, 2, 'Target.getTargets');
      again.close();
      assert.ok(
        targetInfos.some((t: { targetId: string }) => t.targetId === targetId),
        `${a.name}: the same browser, with the page made before`,
      );
    }
    // A long command that closes nothing still passes whole (it is held, not dropped).
    const ws = await open(s.cdp_ws_url);
    const { sessionId } = await call(ws, 3, 'Target.attachToTarget', { targetId, flatten: true });
    const long = await call(ws, 4, 'Runtime.evaluate', { expression: `'${'x'.repeat(200_000)}'.length` }, sessionId);
    assert.deepEqual(long.result, { type: 'number', value: 200_000, description: '200000' });
    ws.close();
    await d.api('DELETE', `/browsers/${s.session_id}`);
  });
});
