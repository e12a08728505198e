/**
 * clientGone, on a real HTTP server and socket: a client that hangs up before its answer aborts
 * what its request started, also when it left before the handler asked.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import net from 'node:net';
import { test } from 'node:test';
import { clientGone } from '../../daemon/http/client-gone.js';

/** One request whose handler asks clientGone after `askAfterMs`; the client closes after `leaveAfterMs`. Resolves whether the signal aborted. */
async function tryOnce(askAfterMs: number, leaveAfterMs: number | undefined): Promise<boolean> {
  let settle!: (aborted: boolean) => void;
  const result = new Promise<boolean>((r) => (settle = r));
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
    setTimeout(() => {
      const signal = clientGone({ raw: res } as never);
      const answer = setTimeout(() => res.end('done'), 300);
      const aborted = () => {
        clearTimeout(answer);
        settle(true);
      };
      // As its users do: an abort that came before the listener is seen on the signal.
      if (signal.aborted) aborted();
      else signal.addEventListener('abort', aborted);
      res.once('finish', () => settle(false));
      // A client gone with no abort would leave the request hanging: that is a false.
      setTimeout(() => settle(false), 2000);
    }, askAfterMs);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1', () => {
    socket.write('POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}');
    if (leaveAfterMs !== undefined) setTimeout(() => socket.destroy(), leaveAfterMs);
  });
  socket.on('error', () => {});
  socket.resume();
  try {
    return await result;
  } finally {
    socket.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

test('clientGone aborts for a client that leaves before the answer, whether the handler asked before or after it left', async () => {
  assert.equal(await tryOnce(0, 50), true, 'left while it ran');
  assert.equal(await tryOnce(100, 10), true, 'left before the handler asked');
  // Control: a client that stays gets its answer, and nothing aborts.
  assert.equal(await tryOnce(0, undefined), false);
  assert.equal(await tryOnce(100, undefined), false);
});
