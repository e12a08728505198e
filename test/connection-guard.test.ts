/**
 * The front door's connection cap on a real HTTP server and real sockets, in this process: what a
 * newcomer at the cap gets, which waiting connection it replaces, and that a request on a
 * connection already answered 503 never runs.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage, Server } from 'node:http';
import net from 'node:net';
import { afterEach, describe, test } from 'node:test';
import { ConnectionGuard, createFrontDoorServer, type FrontDoorLimits } from '../daemon/http/front-door.js';
import { UpgradeRouter } from '../daemon/http/upgrades.js';
import { sleep, waitFor } from './helpers/daemon.js';

const LIMITS: FrontDoorLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 10_000,
  maxConnections: 2,
  // All of these clients are 127.0.0.1: the cap in all is the one tried.
  maxConnectionsPerClient: 10,
};

let server: Server | undefined;
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

/** A guarded server whose handler records each request it runs and holds a POST until its body ends. */
async function guarded(limits = LIMITS): Promise<{ port: number; ran: string[]; upgraded: string[]; guard: ConnectionGuard }> {
  const ran: string[] = [];
  const upgraded: string[] = [];
  const guard = new ConnectionGuard(limits);
  const handler = (req: IncomingMessage, res: import('node:http').ServerResponse) => {
    ran.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.end('ok'));
  };
  server = createFrontDoorServer(limits, guard.serving(handler));
  guard.attach(server);
  new UpgradeRouter(() => {}, { allows: () => true, refusal: () => new Error('unused') as never })
    .add('/ws', async (req, socket) => {
      upgraded.push(req.url ?? '');
      socket.destroy();
    })
    .attach(server);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, ran, upgraded, guard };
}

/** A connection that sends `data` (if any) as soon as it is open; `reply()` is what came back until it closed. */
function connect(port: number, data?: string): { socket: net.Socket; closed: Promise<string> } {
  const socket = net.connect(port, '127.0.0.1', () => data !== undefined && socket.write(data));
  sockets.push(socket);
  const chunks: Buffer[] = [];
  socket.on('data', (b) => chunks.push(b));
  socket.on('error', () => {});
  const closed = new Promise<string>((r) => socket.on('close', () => r(Buffer.concat(chunks).toString())));
  return { socket, closed };
}

/** A request in progress: its headers sent, its body never finished. */
const HOLD = 'POST /hold HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{';

describe('the connection cap', () => {
  test('at the cap of busy connections, a newcomer is answered 503 with Retry-After and the request it came with never runs', async () => {
    const { port, ran, upgraded } = await guarded();
    connect(port, HOLD);
    connect(port, HOLD);
    await waitFor(() => ran.length === 2, 5000, 'both holders to be in their requests');
    // The request is written as the connection opens: Node parses it even after the refusal went out.
    const newcomer = connect(port, 'POST /create HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}');
    const reply = await newcomer.closed;
    assert.match(reply, /^HTTP\/1\.1 503 /);
    assert.match(reply, /\r\nretry-after: 1\r\n/i);
    assert.match(reply, /"code":"service_unavailable"/);
    await sleep(200);
    assert.deepEqual(ran, ['POST /hold', 'POST /hold'], 'the refused request did not run');
    // Nor does a websocket handshake that came with a refused connection reach its endpoint.
    const ws = connect(port, 'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
    assert.match(await ws.closed, /^HTTP\/1\.1 503 /);
    assert.deepEqual(upgraded, [], 'the websocket endpoint never saw it');
  });

  test('a newcomer takes the place of a stalled half-request before an older unread connection, then of that one; each is answered 503, not cut', async () => {
    const { port, ran, guard } = await guarded({ ...LIMITS, maxConnections: 3 });
    connect(port, HOLD);
    await waitFor(() => ran.length === 1, 5000, 'the holder to be in its request');
    // A connection that sends nothing yet (the daemon may not have read a real client's request).
    const silent = connect(port);
    await new Promise((r) => silent.socket.once('connect', r));
    const stalled = connect(port, 'GET /hea');
    await waitFor(() => guard.stats().open === 3 && stalled.socket.bytesWritten > 0, 5000, 'three connections open');
    await sleep(100);
    // The first newcomer stays in its request: the silent one is then the only one waiting.
    connect(port, HOLD.replace('/hold', '/hold2'));
    assert.match(await stalled.closed, /^HTTP\/1\.1 503 /, 'told to retry, not hung up on');
    assert.match(await stalled.closed, /\r\nretry-after: 1\r\n/i);
    await waitFor(() => ran.length === 2, 5000, 'the newcomer to be in its request');
    assert.equal(silent.socket.destroyed, false, 'the unread connection stayed while a stalled one could go');
    const next = connect(port, 'GET /served HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    assert.match(await next.closed, /^HTTP\/1\.1 200 /);
    assert.match(await silent.closed, /^HTTP\/1\.1 503 /);
    assert.deepEqual(ran, ['POST /hold', 'POST /hold2', 'GET /served']);
    assert.equal(guard.stats().evicted, 2);
  });
});
