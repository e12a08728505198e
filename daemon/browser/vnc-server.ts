import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Box } from '../box/box.js';
import { within } from '../lib/procs.js';

export interface VncServer {
  pid: number;
  exited: Promise<void>;
  /** A connection to the server (through the box's agent). */
  connect(): Promise<Socket>;
  stop(): Promise<void>;
}

export interface VncRequest {
  display: number;
  /** Updates per second the live view may send at most (the viewport's refresh rate). */
  refreshRate: number;
  env: Record<string, string>;
  /** The session's box: x11vnc runs there, on a Unix socket of the box's /tmp. */
  box: Box;
}

/**
 * One x11vnc per headful session, inside its box, listening on a Unix socket there and on no TCP
 * port; the daemon's websocket bridge reaches it only through the box's agent. -safer turns off
 * its remote control (the X11VNC_REMOTE property any X client could set). -wait/-defer keep it
 * answering within a refresh interval, while the bridge's pacer caps the rate; -xrandr follows
 * viewport changes.
 */
export async function startVncServer(req: VncRequest, attempts = 3): Promise<VncServer> {
  // Pacing: the bridge holds each viewer to one update request per refresh interval
  // (rfb-pacer.ts), so x11vnc must only answer within one: it polls the screen every half interval
  // (-wait; shorter costs CPU for nothing) and sends at once (-defer 0; libvncserver otherwise
  // sleeps before every update, and the two delays together halved the delivered rate).
  const wait = String(Math.max(1, Math.round(500 / req.refreshRate)));
  let lastError = '';
  for (let i = 0; i < attempts; i++) {
    const socketPath = `/tmp/.vnc-${randomBytes(6).toString('hex')}.sock`;
    // umask 0: the socket is the box's user's, and the agent (another uid) connects to it.
    const child = req.box.spawn(
      [
        'sh',
        '-c',
        'umask 0; exec "$@"',
        'x11vnc',
        'x11vnc',
        '-display',
        `:${req.display}`,
        '-unixsock',
        socketPath,
        // No TCP listener at all (libvncserver opens [::]:5900 by itself otherwise).
        '-rfbport',
        '0',
        '-rfbportv6',
        '-1',
        '-no6',
        '-noipv6',
        '-safer',
        '-nopw',
        '-shared',
        '-forever',
        // No -threads: with it, x11vnc's client thread never answers on a Unix socket.
        '-xrandr',
        '-nonc',
        '-nowireframe',
        '-wait',
        wait,
        '-defer',
        '0',
      ],
      { env: req.env },
    );
    const started = await child.started.then(
      () => true,
      (err: Error) => ((lastError = err.message), false),
    );
    if (!started) continue;
    const exited = child.exited.then(() => {});
    let output = '';
    const ready = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 10_000);
      const onData = (d: Buffer) => {
        output = (output + d).slice(-4000);
        // x11vnc says so once the socket is bound.
        if (output.includes(`listening on unix socket: ${socketPath}`)) {
          clearTimeout(timer);
          resolve(true);
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      void exited.then(() => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    if (ready) {
      // Keep draining its output so a full pipe never blocks it.
      child.stdout!.resume();
      child.stderr!.resume();
      return {
        pid: child.pid!,
        exited,
        connect: () => req.box.connect({ unix: socketPath }),
        stop: async () => {
          child.kill('SIGTERM');
          if (!(await within(2000, exited))) child.kill('SIGKILL');
        },
      };
    }
    child.kill('SIGKILL');
    lastError = output.trim().split('\n').slice(-5).join('\n');
  }
  throw new Error(`x11vnc did not start: ${lastError}`);
}
