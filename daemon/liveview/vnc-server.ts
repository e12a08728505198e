import { createServer } from 'node:net';
import { spawnHere, type Spawner } from '../browser/launcher.js';
import { killGroup, within } from '../browser/procs.js';
import { removeSegmentsOf } from '../browser/sysv-shm.js';

export interface VncServer {
  port: number;
  pid: number;
  exited: Promise<void>;
  stop(): Promise<void>;
}

export interface VncRequest {
  display: number;
  /** Updates per second the live view may send at most (the viewport's refresh rate). */
  refreshRate: number;
  env: Record<string, string>;
  /** How x11vnc is started: the daemon's launcher, off its event loop. */
  spawn?: Spawner;
}

/** A port free right now on loopback; x11vnc cannot take port 0, so one is picked for it. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/**
 * One x11vnc per headful session, listening on 127.0.0.1 only; the daemon's websocket bridge is
 * its only client. -threads keeps it from spinning a core; -wait/-defer keep it answering within
 * a refresh interval, while the bridge's pacer caps the rate; -xrandr follows viewport changes.
 */
export async function startVncServer(req: VncRequest, attempts = 3): Promise<VncServer> {
  // Pacing: the bridge holds each viewer to one update request per refresh interval
  // (rfb-pacer.ts), so x11vnc must only answer within one: it polls the screen every half interval
  // (-wait; shorter costs CPU for nothing) and sends at once (-defer 0; libvncserver otherwise
  // sleeps before every update, and the two delays together halved the delivered rate).
  const wait = String(Math.max(1, Math.round(500 / req.refreshRate)));
  const defer = '0';
  let lastError = '';
  for (let i = 0; i < attempts; i++) {
    const port = await freePort();
    const child = await (req.spawn ?? spawnHere)(
      'x11vnc',
      [
        '-display', `:${req.display}`,
        '-rfbport', String(port),
        '-listen', '127.0.0.1',
        // libvncserver also opens [::]:5900 on its own; -rfbportv6 -1 is what switches that off.
        '-no6',
        '-noipv6',
        '-rfbportv6', '-1',
        '-nopw',
        '-shared',
        '-forever',
        '-threads',
        '-xrandr',
        '-nonc',
        '-nowireframe',
        '-wait', wait,
        '-defer', defer,
      ],
      req.env,
      { pipes: [1] },
    ).catch((err: Error) => {
      lastError = err.message;
      return undefined;
    });
    if (!child) continue;
    const stdout = child.fds[1]!;
    // However it ends (a kill -9 included), the shared memory it made goes with it.
    const exited = child.exited.then(async () => void (await removeSegmentsOf([child.pid])));
    let output = '';
    const ready = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 10_000);
      const onData = (d: Buffer) => {
        output = (output + d).slice(-4000);
        // x11vnc announces the port it listens on once the socket is bound.
        if (new RegExp(`PORT=${port}\\b`).test(output)) {
          clearTimeout(timer);
          resolve(true);
        }
      };
      stdout.on('data', onData);
      child.stderr.on('data', onData);
      void exited.then(() => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    if (ready) {
      // Keep draining its output so a full pipe never blocks it.
      stdout.resume();
      child.stderr.resume();
      return {
        port,
        pid: child.pid,
        exited,
        stop: async () => {
          killGroup(child.pid, 'SIGTERM');
          if (!(await within(2000, exited))) killGroup(child.pid, 'SIGKILL');
        },
      };
    }
    killGroup(child.pid, 'SIGKILL');
    lastError = output.trim().split('\n').slice(-5).join('\n');
  }
  throw new Error(`x11vnc did not start: ${lastError}`);
}
