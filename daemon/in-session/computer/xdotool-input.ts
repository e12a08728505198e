import { outputOf } from '../../box/box-process.js';
import { boxEnv } from '../../box/box-env.js';
import type { LiveSession } from '../../sessions/live-session.js';
import { textRuns, type InputBackend } from './backend.js';
import { CdpInput } from './cdp-input.js';
import { withActivePage } from '../../browser/cdp-page.js';
import { releaseOps, type Button, type Op } from './plan.js';
import type { Rect } from './backend.js';

const X_BUTTONS: Record<Button, number> = { left: 1, middle: 2, right: 3, back: 8, forward: 9 };
/** X's wheel buttons: 4 up, 5 down, 6 left, 7 right. */
const wheelButton = (axis: 'x' | 'y', notches: number) => (axis === 'y' ? (notches > 0 ? 5 : 4) : notches > 0 ? 7 : 6);

function xdoArgs(op: Exclude<Op, { op: 'type' }>): string[] {
  switch (op.op) {
    case 'keyDown':
      return ['keydown', op.key.keysym];
    case 'keyUp':
      return ['keyup', op.key.keysym];
    case 'moveTo':
      return ['mousemove', String(op.x), String(op.y)];
    case 'moveBy':
      return ['mousemove_relative', '--', String(op.dx), String(op.dy)];
    case 'buttonDown':
      return ['mousedown', String(X_BUTTONS[op.button])];
    case 'buttonUp':
      return ['mouseup', String(X_BUTTONS[op.button])];
    case 'wheel':
      // xdotool waits 100 ms between repeated clicks by default; a wheel spun by hand is faster.
      return ['click', '--repeat', String(Math.abs(op.notches)), '--delay', '10', String(wheelButton(op.axis, op.notches))];
    case 'sleep':
      return ['sleep', String(op.ms / 1000)];
  }
}

/**
 * Headful sessions: real X input with xdotool on the session's own display, so events are trusted
 * and pass through the window manager and the browser window as a person's would. Consecutive ops
 * become one xdotool command chain (one process). Non-ASCII text goes in with CDP insertText:
 * xdotool types it by remapping a spare keycode per character, which races with Chromium reading
 * the keymap.
 */
export class XdotoolInput implements InputBackend {
  private readonly cdp = new CdpInput();

  /** xdotool inside the session's box, on its display; a failure (or timeoutMs) is thrown. */
  private async xdotool(session: LiveSession, args: string[], timeoutMs = 10_000): Promise<{ stdout: string }> {
    const child = session.box.spawn(['xdotool', ...args], { env: boxEnv(session.display!.number) });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    try {
      const r = await outputOf(child);
      if (r.code !== 0) throw new Error(`xdotool ${args[0]} failed (${r.signal ?? r.code}): ${r.stderr.toString().trim()}`);
      return { stdout: r.stdout.toString() };
    } finally {
      clearTimeout(timer);
    }
  }

  async perform(session: LiveSession, ops: readonly Op[]): Promise<void> {
    try {
      let chain: string[] = [];
      let chainMs = 0;
      const flush = async () => {
        if (chain.length) await this.xdotool(session, chain, chainMs + 10_000);
        chain = [];
        chainMs = 0;
      };
      for (const op of ops) {
        if (op.op !== 'type') {
          chain.push(...xdoArgs(op));
          if (op.op === 'sleep') chainMs += op.ms;
          continue;
        }
        await flush();
        await this.type(session, op.text, op.delayMs);
      }
      await flush();
    } catch (err) {
      const release = releaseOps(ops);
      if (release.length)
        await this.xdotool(
          session,
          release.flatMap((o) => xdoArgs(o as Exclude<Op, { op: 'type' }>)),
        ).catch(() => {});
      throw err;
    }
  }

  private async type(session: LiveSession, text: string, delayMs: number): Promise<void> {
    for (const run of textRuns(text)) {
      if (run.ascii) {
        await this.xdotool(session, ['type', '--delay', String(delayMs), '--', run.text], run.text.length * delayMs + 10_000);
      } else {
        await withActivePage(session.chromium, (send) => this.cdp.typeText(send, run.text, delayMs));
      }
    }
  }

  async mousePosition(session: LiveSession): Promise<{ x: number; y: number }> {
    const { stdout } = await this.xdotool(session, ['getmouselocation', '--shell']);
    const x = /^X=(\d+)/m.exec(String(stdout));
    const y = /^Y=(\d+)/m.exec(String(stdout));
    if (!x || !y) throw new Error(`unexpected xdotool output: ${String(stdout).slice(0, 200)}`);
    return { x: Number(x[1]), y: Number(y[1]) };
  }

  /** The X screen itself (not the page): what a live-view viewer sees, as maim captures it. */
  async screenshot(session: LiveSession, rect: Rect): Promise<Buffer> {
    const r = await outputOf(
      session.box.spawn(['maim', '--hidecursor', '--format', 'png', '--geometry', `${rect.width}x${rect.height}+${rect.x}+${rect.y}`], {
        env: boxEnv(session.display!.number),
      }),
      64 * 1024 * 1024,
    );
    if (r.code !== 0) throw new Error(`maim failed (${r.signal ?? r.code}): ${r.stderr.toString().trim()}`);
    return r.stdout;
  }
}
