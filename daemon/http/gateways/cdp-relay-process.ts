/**
 * The CDP relay's process (see cdp-relay.ts): the daemon hands it both sockets of a websocket it
 * has admitted, Chromium's side first, and it answers the client's handshake and relays from then
 * on (cdp-connection.ts), until the client leaves, the browser's side breaks or the daemon cuts
 * the connection. Each end goes back to the daemon with the client's message count.
 *
 * With the daemon gone (its IPC channel closed), every connection ends and so does this process.
 */
import type { Socket } from 'node:net';
import { holdBudget } from '../../lib/websocket-client-frames.js';
import { websocketLimitsFromEnv } from '../websocket-limits.js';
import { type CdpConnection, type CdpConnectionEnd, relayCdp } from './cdp-connection.js';
import type { RelayMessage, RelayReport } from './cdp-relay.js';

/** What the relay holds of its clients' unfinished long commands, all connections together (RBROWSE_WEBSOCKET_BUFFER_BYTES). */
const hold = holdBudget(websocketLimitsFromEnv(0).bufferBytes);

/** Chromium's side of a connection whose client has not arrived yet. */
const upstreams = new Map<number, { socket: Socket; head: Uint8Array }>();
const open = new Map<number, CdpConnection>();
/** Connections cut before both their sockets arrived. */
const cutEarly = new Set<number>();

const report = (m: RelayReport) => {
  if (process.connected) process.send!(m);
};
const ended = (id: number, end: CdpConnectionEnd, messages: number) => {
  open.delete(id);
  report({ op: 'closed', id, end, messages });
};

process.on('message', (m: RelayMessage, handle?: Socket) => {
  switch (m.op) {
    case 'upstream':
      if (!handle) return ended(m.id, 'upstream_error', 0);
      upstreams.set(m.id, { socket: handle, head: m.head });
      return;
    case 'client': {
      const upstream = upstreams.get(m.id);
      upstreams.delete(m.id);
      if (!handle || !upstream || cutEarly.delete(m.id)) {
        handle?.destroy();
        upstream?.socket.destroy();
        return ended(m.id, upstream ? 'cut' : 'upstream_error', 0);
      }
      handle.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${m.accept}\r\n\r\n`);
      if (upstream.head.length) handle.write(upstream.head);
      open.set(
        m.id,
        relayCdp(
          handle,
          upstream.socket,
          Buffer.from(m.head.buffer, m.head.byteOffset, m.head.byteLength),
          hold,
          (end, messages) => ended(m.id, end, messages),
          m.commands ? (data) => report({ op: 'command', id: m.id, data }) : undefined,
        ),
      );
      return;
    }
    case 'cut': {
      const connection = open.get(m.id);
      if (connection) return connection.cut();
      const upstream = upstreams.get(m.id);
      if (upstream) cutEarly.add(m.id);
      return;
    }
  }
});

process.on('disconnect', () => {
  for (const connection of open.values()) connection.cut();
  for (const { socket } of upstreams.values()) socket.destroy();
  process.exit(0);
});
