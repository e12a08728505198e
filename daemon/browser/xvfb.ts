import { spawn, type ChildProcess } from 'node:child_process';
import { killGroup, signal, within } from './procs.js';

export interface Display {
  /** X display number, e.g. 3 for ":3". */
  number: number;
  pid: number;
  width: number;
  height: number;
  exited: Promise<void>;
  stop(): Promise<void>;
}

export interface DisplayRequest {
  width: number;
  height: number;
  env: Record<string, string>;
}

/**
 * Gives each headful session a display of its own. Xvfb's -displayfd picks a free display number
 * itself, under the X server's own lock files, so concurrent sessions and concurrent daemons
 * never race for a number.
 */
export class DisplayAllocator {
  constructor(private readonly xvfbPath = 'Xvfb') {}

  async start(req: DisplayRequest): Promise<Display> {
    const child = spawn(
      this.xvfbPath,
      ['-displayfd', '3', '-screen', '0', `${req.width}x${req.height}x24`, '-nolisten', 'tcp', '+extension', 'RANDR'],
      { stdio: ['ignore', 'ignore', 'pipe', 'pipe'], detached: true, env: req.env },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-2000)));
    try {
      const number = await readDisplayNumber(child, exited);
      return {
        number,
        pid: child.pid!,
        width: req.width,
        height: req.height,
        exited,
        stop: async () => {
          signal(child.pid!, 'SIGTERM');
          if (!(await within(2000, exited))) killGroup(child.pid!, 'SIGKILL');
          await within(2000, exited);
        },
      };
    } catch (err) {
      killGroup(child.pid!, 'SIGKILL');
      throw new Error(`Xvfb did not start: ${(err as Error).message}${stderr ? `\n${stderr.trim()}` : ''}`);
    }
  }
}

function readDisplayNumber(child: ChildProcess, exited: Promise<void>): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error('timed out waiting for a display number')), 10_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    const fd = child.stdio[3] as NodeJS.ReadableStream;
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
