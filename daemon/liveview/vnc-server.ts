import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { killGroup, within } from '../browser/procs.js';

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
 * its only client. -threads keeps it from spinning a core; -wait/-defer pace it to the refresh
 * rate; -xrandr follows viewport changes.
 */
export async function startVncServer(req: VncRequest, attempts = 3): Promise<VncServer> {
  // Pacing (measured with bench/liveview.ts): libvncserver sleeps -defer before every update it
  // sends, and x11vnc notices changes on its -wait polls, so the two add up. A full interval of
  // each delivered about half the refresh rate; half an interval of each comes close to it.
  const half = String(Math.max(1, Math.round(500 / req.refreshRate)));
  const [wait, defer] = [half, half];
  let lastError = '';
  for (let i = 0; i < attempts; i++) {
    const port = await freePort();
    const child = spawn(
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
      { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: req.env },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
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
        port,
        pid: child.pid!,
        exited,
        stop: async () => {
          killGroup(child.pid!, 'SIGTERM');
          if (!(await within(2000, exited))) killGroup(child.pid!, 'SIGKILL');
        },
      };
    }
    killGroup(child.pid!, 'SIGKILL');
    lastError = output.trim().split('\n').slice(-5).join('\n');
  }
  throw new Error(`x11vnc did not start: ${lastError}`);
}
