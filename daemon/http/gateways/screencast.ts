import WebSocket, { type RawData } from 'ws';
import { CdpClient } from '../../browser/cdp-client.js';
import type { LiveSession } from '../../sessions/live-session.js';

/** A frame Chromium sent is acknowledged (so it sends the next) only while the viewer has less than this still to take. */
const HIGH_WATER = 4 * 1024 * 1024;
const JPEG_QUALITY = 80;

/** What a viewer sends: the page's own input events, in the page's CSS pixels. */
type ViewerInput =
  | {
      t: 'mouse';
      type: 'mousePressed' | 'mouseReleased' | 'mouseMoved';
      x: number;
      y: number;
      button?: string;
      buttons?: number;
      clickCount?: number;
      modifiers?: number;
    }
  | { t: 'wheel'; x: number; y: number; dx: number; dy: number; modifiers?: number }
  | { t: 'key'; type: 'keyDown' | 'keyUp'; key: string; code: string; keyCode?: number; text?: string; modifiers?: number };

const BUTTONS = new Set(['none', 'left', 'middle', 'right', 'back', 'forward']);
const num = (v: unknown, fallback = 0): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
const str = (v: unknown, max = 64): string | undefined => (typeof v === 'string' && v.length <= max ? v : undefined);

/** Input.dispatch*Event parameters for a viewer's message, or undefined for anything else. */
export function inputCommand(raw: unknown): { method: string; params: Record<string, unknown> } | undefined {
  const m = raw as Partial<ViewerInput> & Record<string, unknown>;
  if (!m || typeof m !== 'object') return undefined;
  const modifiers = num(m.modifiers) & 15;
  if (m.t === 'mouse' && (m.type === 'mousePressed' || m.type === 'mouseReleased' || m.type === 'mouseMoved')) {
    const button = str(m.button) ?? 'none';
    if (!BUTTONS.has(button)) return undefined;
    return {
      method: 'Input.dispatchMouseEvent',
      params: { type: m.type, x: num(m.x), y: num(m.y), button, buttons: num(m.buttons) & 31, clickCount: Math.min(num(m.clickCount), 3), modifiers },
    };
  }
  if (m.t === 'wheel') {
    return {
      method: 'Input.dispatchMouseEvent',
      params: { type: 'mouseWheel', x: num(m.x), y: num(m.y), deltaX: num(m.dx), deltaY: num(m.dy), modifiers },
    };
  }
  if (m.t === 'key' && (m.type === 'keyDown' || m.type === 'keyUp')) {
    const key = str(m.key);
    const code = str(m.code) ?? '';
    if (key === undefined) return undefined;
    const text = m.type === 'keyDown' ? str(m.text, 8) : undefined;
    const keyCode = num(m.keyCode);
    return {
      method: 'Input.dispatchKeyEvent',
      // A keyDown with text types it (CDP's "keyDown" is a rawKeyDown plus its char); without, it is a bare press.
      params: {
        type: text ? 'keyDown' : m.type === 'keyDown' ? 'rawKeyDown' : 'keyUp',
        key,
        code,
        windowsVirtualKeyCode: keyCode,
        nativeVirtualKeyCode: keyCode,
        modifiers,
        ...(text ? { text, unmodifiedText: text } : {}),
      },
    };
  }
  return undefined;
}

/** A frame for the viewer: 4 bytes of header length, the header (JSON: the page's size in CSS pixels), then the JPEG. */
function frameMessage(data: string, metadata: { deviceWidth: number; deviceHeight: number }): Buffer {
  const header = Buffer.from(JSON.stringify({ width: metadata.deviceWidth, height: metadata.deviceHeight }));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(header.length);
  return Buffer.concat([length, header, Buffer.from(data, 'base64')]);
}

/**
 * A headless session's live view: the page the session shows, as CDP screencast frames (JPEG),
 * and the viewer's mouse, wheel and keyboard sent back as CDP input. It follows the page a
 * headful browser would show: a tab that opens becomes the one on view, and when the one on view
 * closes, the first left takes its place. A read-only viewer's input is dropped here, on the
 * server. Frames are paced by the viewer: one that falls behind gets no new frame until it catches up.
 */
export class Screencast {
  private pageSession?: string;
  private closed = false;
  private switching = Promise.resolve();

  private constructor(
    private readonly cdp: CdpClient,
    private readonly viewer: WebSocket,
    private readonly session: LiveSession,
    private readonly readOnly: boolean,
  ) {}

  static async start(session: LiveSession, viewer: WebSocket, readOnly: boolean): Promise<Screencast> {
    const cdp = await CdpClient.connect(session.chromium);
    const cast = new Screencast(cdp, viewer, session, readOnly);
    try {
      await cast.begin();
    } catch (err) {
      cast.close();
      throw err;
    }
    return cast;
  }

  private async begin(): Promise<void> {
    this.cdp.on('Page.screencastFrame', (p: { data: string; metadata: { deviceWidth: number; deviceHeight: number }; sessionId: number }, from) => {
      if (from !== this.pageSession || this.closed) return;
      const ack = () => void this.cdp.send('Page.screencastFrameAck', { sessionId: p.sessionId }, from).catch(() => {});
      if (this.viewer.readyState !== WebSocket.OPEN) return;
      this.viewer.send(frameMessage(p.data, p.metadata), { binary: true });
      // Acknowledged at once while the viewer keeps up, so Chromium draws the next frame while this
      // one travels; a viewer behind by HIGH_WATER gets no new frame until it has caught up.
      if (this.viewer.bufferedAmount < HIGH_WATER) ack();
      else this.whenDrained(ack);
    });
    this.cdp.on('Target.targetCreated', (p: { targetInfo: { targetId: string; type: string; url: string } }) => {
      if (p.targetInfo.type === 'page' && !p.targetInfo.url.startsWith('devtools://')) this.show(p.targetInfo.targetId);
    });
    this.cdp.on('Target.detachedFromTarget', (p: { sessionId: string }) => {
      if (p.sessionId === this.pageSession) {
        this.pageSession = undefined;
        this.show();
      }
    });
    // The browser went (restarted in place, or the session ends): the viewer reconnects, to the browser there is then.
    this.cdp.onClose(() => {
      if (!this.closed && this.viewer.readyState === WebSocket.OPEN) this.viewer.close(1012, 'the browser restarted');
    });
    await this.cdp.send('Target.setDiscoverTargets', { discover: true });
    await this.show().then(() => this.switching);
    if (!this.readOnly) this.viewer.on('message', (data: RawData, binary: boolean) => this.input(data, binary));
  }

  /** Puts a page on view (a given one, else the first the browser lists): one switch at a time. */
  private show(targetId?: string): Promise<void> {
    this.switching = this.switching.then(async () => {
      if (this.closed) return;
      const target = targetId ?? (await this.firstPage());
      if (!target) return;
      const old = this.pageSession;
      const { sessionId } = await this.cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId: target, flatten: true });
      this.pageSession = sessionId;
      if (old) void this.cdp.send('Target.detachFromTarget', { sessionId: old }).catch(() => {});
      const { width, height } = this.session.record.viewport;
      await this.cdp.send('Page.startScreencast', { format: 'jpeg', quality: JPEG_QUALITY, maxWidth: width, maxHeight: height }, sessionId);
    });
    this.switching = this.switching.catch(() => {});
    return this.switching;
  }

  private async firstPage(): Promise<string | undefined> {
    const { targetInfos } = await this.cdp.send<{ targetInfos: { targetId: string; type: string; url: string }[] }>('Target.getTargets');
    return targetInfos.find((t) => t.type === 'page' && !t.url.startsWith('devtools://'))?.targetId;
  }

  private input(data: RawData, binary: boolean): void {
    if (binary || !this.pageSession) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(String(data));
    } catch {
      return;
    }
    const command = inputCommand(parsed);
    if (command) void this.cdp.send(command.method, command.params, this.pageSession).catch(() => {});
  }

  private whenDrained(then: () => void): void {
    const check = () => {
      if (this.closed) return;
      if (this.viewer.bufferedAmount < HIGH_WATER / 2) then();
      else setTimeout(check, 20);
    };
    setTimeout(check, 20);
  }

  close(): void {
    this.closed = true;
    this.cdp.close();
  }
}
