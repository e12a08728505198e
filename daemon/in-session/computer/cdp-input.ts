import type { LiveSession } from '../../sessions/live-session.js';
import { NOTCH_PIXELS, sleep, textRuns, type InputBackend } from './backend.js';
import { withActivePage, type PageSend } from '../../browser/cdp-page.js';
import { keyByName, modifierBits, type Key } from './keys.js';
import { releaseOps, type Button, type Op } from './plan.js';
import type { Rect } from './backend.js';

/** CDP's `buttons` bitmask, as MouseEvent.buttons reports it. */
const BUTTON_BITS: Record<Button, number> = { left: 1, right: 2, middle: 4, back: 8, forward: 16 };

/** A headless browser has no pointer of its own: what it last saw is kept per session. */
interface PointerState {
  x: number;
  y: number;
  buttons: Set<Button>;
  keys: Map<string, Key>;
  lastPress?: { button: Button; x: number; y: number; at: number; count: number };
}

/** Presses within this time at one spot count as a double (triple...) click, as in X's default. */
const MULTI_CLICK_MS = 500;

/** Headless sessions: Input.dispatchMouseEvent / dispatchKeyEvent / insertText on the active page. */
export class CdpInput implements InputBackend {
  private readonly states = new WeakMap<LiveSession, PointerState>();

  private state(session: LiveSession): PointerState {
    let s = this.states.get(session);
    if (!s) this.states.set(session, (s = { x: 0, y: 0, buttons: new Set(), keys: new Map() }));
    return s;
  }

  async perform(session: LiveSession, ops: readonly Op[]): Promise<void> {
    const state = this.state(session);
    await withActivePage(session.chromium, async (send) => {
      try {
        for (const op of ops) await this.step(send, state, op);
      } catch (err) {
        // Only what is still held is released, so the page sees no stray mouseup or keyup.
        const held = releaseOps(ops).filter((o) =>
          o.op === 'buttonUp' ? state.buttons.has(o.button) : o.op === 'keyUp' && state.keys.has(o.key.keysym),
        );
        for (const op of held) await this.step(send, state, op).catch(() => {});
        throw err;
      }
    });
  }

  /** Types text on the active page: ASCII key by key (keydown/keyup fire), the rest inserted as text. */
  async typeText(send: PageSend, text: string, delayMs: number, modifiers = 0): Promise<void> {
    let first = true;
    for (const run of textRuns(text)) {
      if (!run.ascii) {
        if (!first) await sleep(delayMs);
        await send('Input.insertText', { text: run.text });
        first = false;
        continue;
      }
      for (const ch of run.text) {
        if (!first) await sleep(delayMs);
        first = false;
        const key = ch === '\n' ? keyByName('Return')! : ch === '\t' ? keyByName('Tab')! : (keyByName(ch) ?? charKey(ch));
        await this.key(send, 'down', key, modifiers);
        await this.key(send, 'up', key, modifiers);
      }
    }
  }

  private key(send: PageSend, dir: 'down' | 'up', key: Key, modifiers: number): Promise<unknown> {
    return send('Input.dispatchKeyEvent', {
      type: dir === 'up' ? 'keyUp' : key.text ? 'keyDown' : 'rawKeyDown',
      key: key.key,
      code: key.code,
      windowsVirtualKeyCode: key.keyCode,
      modifiers,
      ...(dir === 'down' && key.text ? { text: key.text, unmodifiedText: key.text } : {}),
      ...(key.code.endsWith('Right') && key.modifier ? { location: 2 } : key.modifier ? { location: 1 } : {}),
    });
  }

  private mouse(send: PageSend, s: PointerState, type: string, extra: object = {}): Promise<unknown> {
    let buttons = 0;
    for (const b of s.buttons) buttons |= BUTTON_BITS[b];
    const held = [...s.buttons][0];
    return send('Input.dispatchMouseEvent', {
      type,
      x: s.x,
      y: s.y,
      modifiers: modifierBits(s.keys.values()),
      buttons,
      ...(type === 'mouseMoved' ? { button: held ?? 'none' } : {}),
      ...extra,
    });
  }

  private async step(send: PageSend, s: PointerState, op: Op): Promise<void> {
    switch (op.op) {
      case 'keyDown':
        s.keys.set(op.key.keysym, op.key);
        await this.key(send, 'down', op.key, modifierBits(s.keys.values()));
        return;
      case 'keyUp':
        s.keys.delete(op.key.keysym);
        await this.key(send, 'up', op.key, modifierBits(s.keys.values()));
        return;
      case 'moveTo':
      case 'moveBy':
        if (op.op === 'moveTo') [s.x, s.y] = [op.x, op.y];
        else [s.x, s.y] = [s.x + op.dx, s.y + op.dy];
        await this.mouse(send, s, 'mouseMoved');
        return;
      case 'buttonDown': {
        const now = Date.now();
        const last = s.lastPress;
        const again = last && last.button === op.button && last.x === s.x && last.y === s.y && now - last.at < MULTI_CLICK_MS;
        s.lastPress = { button: op.button, x: s.x, y: s.y, at: now, count: again ? last.count + 1 : 1 };
        s.buttons.add(op.button);
        await this.mouse(send, s, 'mousePressed', { button: op.button, clickCount: s.lastPress.count });
        return;
      }
      case 'buttonUp':
        s.buttons.delete(op.button);
        await this.mouse(send, s, 'mouseReleased', { button: op.button, clickCount: s.lastPress?.count ?? 1 });
        return;
      case 'wheel':
        // One event per notch, as X delivers one button press per notch.
        for (let i = 0; i < Math.abs(op.notches); i++) {
          const delta = Math.sign(op.notches) * NOTCH_PIXELS;
          await this.mouse(send, s, 'mouseWheel', op.axis === 'y' ? { deltaX: 0, deltaY: delta } : { deltaX: delta, deltaY: 0 });
        }
        return;
      case 'sleep':
        await sleep(op.ms);
        return;
      case 'type':
        await this.typeText(send, op.text, op.delayMs, modifierBits(s.keys.values()));
        return;
    }
  }

  async mousePosition(session: LiveSession): Promise<{ x: number; y: number }> {
    const { x, y } = this.state(session);
    return { x, y };
  }

  async screenshot(session: LiveSession, rect: Rect): Promise<Buffer> {
    const { data } = await withActivePage(session.chromium, (send) => send('Page.captureScreenshot', { format: 'png', clip: { ...rect, scale: 1 } }));
    return Buffer.from(data as string, 'base64');
  }
}

/** A printable ASCII character without a named key (punctuation): its text is what matters. */
function charKey(ch: string): Key {
  return { keysym: ch, key: ch, code: '', keyCode: 0, text: ch };
}
