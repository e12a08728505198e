import type { Readable } from 'node:stream';
import type { Box, BoxProcess } from '../box/box.js';
import { outputOf } from '../box/box-process.js';
import { sleep, within } from '../lib/procs.js';

/** The framebuffer every display gets: the largest supported viewport, so RANDR can resize within it. */
export const MAX_SCREEN = { width: 2560, height: 1440 };

export interface Display {
  /** X display number inside its box, e.g. 0 for ":0". */
  number: number;
  /** Xvfb's pid in the box. */
  pid: number;
  width: number;
  height: number;
  exited: Promise<void>;
  /** Changes the screen size (RANDR); the window manager refits the browser window to it. */
  resize(width: number, height: number): Promise<void>;
  stop(): Promise<void>;
}

export interface DisplayRequest {
  width: number;
  height: number;
  env: Record<string, string>;
  /** The session's box: the display is its own, reachable by nothing outside it. */
  box: Box;
}

const BINS = { xvfb: 'Xvfb', xrandr: 'xrandr', xprop: 'xprop', wm: 'matchbox-window-manager' };

/**
 * A headful session's display, inside its box: Xvfb plus a window manager. In its own network
 * and mount namespaces the X server's sockets (the abstract one included) are the box's alone, so
 * it needs no cookie: only the session's own programs can connect. The window manager (matchbox,
 * no title bar) makes the browser window fill the screen exactly: without one, Chromium shrinks a
 * window that matches the screen by a pixel, and --kiosk cannot go fullscreen.
 */
export class DisplayAllocator {
  constructor(private readonly bins = BINS) {}

  async start(req: DisplayRequest): Promise<Display> {
    const { box } = req;
    const xvfb = box.spawn(
      [
        this.bins.xvfb,
        '-displayfd',
        '3',
        '-screen',
        '0',
        `${MAX_SCREEN.width}x${MAX_SCREEN.height}x24`,
        '-nolisten',
        'tcp',
        '+extension',
        'RANDR',
        // Without it Xvfb resets (dropping our RANDR modes) whenever its last client leaves.
        '-noreset',
      ],
      { env: req.env, stdout: false, extraFds: [3] },
    );
    await xvfb.started.catch((err: Error) => {
      throw new Error(`display did not start: ${err.message}`);
    });
    const exited = xvfb.exited.then(() => {});
    let stderr = '';
    xvfb.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-2000)));
    let wm: BoxProcess | undefined;
    const stopAll = async () => {
      wm?.kill('SIGKILL');
      xvfb.kill('SIGTERM', false);
      if (!(await within(2000, exited))) xvfb.kill('SIGKILL');
      await within(2000, exited);
    };
    try {
      const number = await readDisplayNumber(xvfb.fds[3]!, exited);
      const env = { ...req.env, DISPLAY: `:${number}` };
      const display: Display = {
        number,
        pid: xvfb.pid!,
        width: req.width,
        height: req.height,
        exited,
        resize: async (width, height) => {
          await this.setMode(box, env, width, height);
          display.width = width;
          display.height = height;
        },
        stop: stopAll,
      };
      // The screen has its size before the window manager starts: matchbox reads it once, and a
      // kiosk window made fullscreen by a manager that read the framebuffer's size was 2560 wide.
      await display.resize(req.width, req.height);
      wm = box.spawn([this.bins.wm, '-use_titlebar', 'no'], { env, stdout: false, stderr: false });
      await wm.started;
      await this.windowManagerReady(box, env);
      return display;
    } catch (err) {
      await stopAll();
      throw new Error(`display did not start: ${(err as Error).message}${stderr ? `\n${stderr.trim()}` : ''}`);
    }
  }

  /**
   * A browser window mapped before the window manager runs stays unmanaged (and a pixel short),
   * so the display is ready only once the manager has announced itself on the root window.
   */
  private async windowManagerReady(box: Box, env: Record<string, string>): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const r = await outputOf(box.spawn([this.bins.xprop, '-root', '_NET_SUPPORTING_WM_CHECK'], { env }));
      if (/window id/.test(String(r.stdout))) return;
      await sleep(10);
    }
    throw new Error('the window manager did not start');
  }

  /** RANDR: define the mode once (re-defining fails harmlessly), add it to the output, switch to it. */
  private async setMode(box: Box, env: Record<string, string>, width: number, height: number): Promise<void> {
    const name = `${width}x${height}`;
    const xrandr = async (args: string[]) => {
      const r = await outputOf(box.spawn([this.bins.xrandr, ...args], { env }));
      return { exitCode: r.code, stderr: r.stderr.toString() };
    };
    await xrandr(['--newmode', name, '60', `${width}`, `${width}`, `${width}`, `${width}`, `${height}`, `${height}`, `${height}`, `${height}`]);
    await xrandr(['--addmode', 'screen', name]);
    const r = await xrandr(['--output', 'screen', '--mode', name]);
    if (r.exitCode !== 0) throw new Error(`xrandr could not set ${name}: ${r.stderr.trim()}`);
  }
}

/** The number Xvfb writes to its -displayfd once it listens. */
function readDisplayNumber(fd: Readable, exited: Promise<void>): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error('timed out waiting for a display number')), 10_000);
    fd.on('data', (d) => {
      text += d;
      if (text.includes('\n')) {
        clearTimeout(timer);
        resolve(Number(text.trim()));
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error('Xvfb exited'));
    });
  });
}
