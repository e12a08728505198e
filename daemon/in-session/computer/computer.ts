import type * as S from '../../../src/api/computer.js';
import { ApiError, BadRequestError } from '../../../src/errors.js';
import { KeyedSerialQueue } from '../../lib/serial-queue.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { LiveSession } from '../../sessions/live-session.js';
import type { OrgRecord } from '../../lib/owned-records.js';
import { actionOps, checkBatchLength, clickOps, dragOps, moveOps, pressKeyOps, screenshotRect, scrollOps, typeOps } from './actions.js';
import type { BoxProcess } from '../../box/box.js';
import type { InputBackend } from './backend.js';
import { readClipboard, writeClipboard } from './clipboard.js';
import { CdpInput } from './cdp-input.js';
import type { Op, Screen } from './plan.js';
import { XdotoolInput } from './xdotool-input.js';
import { processesOf } from '../process/session-processes.js';

/** Computer control of a session: requests in, op plans performed by the session's backend. */
export class ComputerControl {
  /** One input action at a time per session: two drags interleaving their moves on one screen would make both meaningless. */
  private readonly locks = new KeyedSerialQueue();
  private readonly xdotool = new XdotoolInput();
  private readonly cdp = new CdpInput();
  /** The running cursor hider of each headful session that hid its cursor. */
  private readonly cursorHiders = new Map<string, BoxProcess>();

  constructor(private readonly sessions: SessionManager) {}

  private backend(session: LiveSession): InputBackend {
    return session.display ? this.xdotool : this.cdp;
  }

  /** The session's current screen: its viewport, which a resize (PATCH) keeps up to date. */
  private screen(session: LiveSession): Screen {
    return { width: session.record.viewport.width, height: session.record.viewport.height };
  }

  /**
   * Plans against the session's screen and performs the plan under the session's input lock. The
   * plan is made inside the lock, so a resize queued before it is already in effect.
   */
  private input(org: OrgRecord, id: string, plan: (screen: Screen) => Op[]): Promise<void> {
    return this.sessions.withSession(org, id, (session) =>
      this.locks.run(session.id, () => this.backend(session).perform(session, plan(this.screen(session)))),
    );
  }

  dragMouse(org: OrgRecord, id: string, body: S.DragMouseBody): Promise<void> {
    return this.input(org, id, (screen) => dragOps(body, screen));
  }

  scroll(org: OrgRecord, id: string, body: S.ScrollBody): Promise<void> {
    return this.input(org, id, (screen) => scrollOps(body, screen));
  }

  clickMouse(org: OrgRecord, id: string, body: S.ClickMouseBody): Promise<void> {
    return this.input(org, id, (screen) => clickOps(body, screen));
  }

  moveMouse(org: OrgRecord, id: string, body: S.MoveMouseBody): Promise<void> {
    return this.input(org, id, (screen) => moveOps(body, screen));
  }

  typeText(org: OrgRecord, id: string, body: S.TypeTextBody): Promise<void> {
    return this.input(org, id, () => typeOps(body));
  }

  pressKey(org: OrgRecord, id: string, body: S.PressKeyBody): Promise<void> {
    return this.input(org, id, () => pressKeyOps(body));
  }

  /** Actions run in order under one hold of the lock; the first failure stops the batch. */
  batch(org: OrgRecord, id: string, body: S.BatchBody): Promise<void> {
    checkBatchLength(body);
    return this.sessions.withSession(org, id, (session) =>
      this.locks.run(session.id, async () => {
        const backend = this.backend(session);
        for (const [i, action] of body.actions.entries()) {
          try {
            if (action.type === 'set_cursor') {
              if (!action.set_cursor) throw BadRequestError.field('set_cursor', 'is required for a set_cursor action');
              this.cursor(session, action.set_cursor.hidden);
              continue;
            }
            await backend.perform(session, actionOps(action, this.screen(session)));
          } catch (err) {
            if (!(err instanceof ApiError) || err.status !== 400) throw err;
            const prefix = `actions.${i}.`;
            throw new BadRequestError(
              `actions[${i}] (${action.type}): ${err.message}`,
              err.details?.map((d) => ({ ...d, message: prefix + d.message })),
            );
          }
        }
      }),
    );
  }

  /** Waits for input in progress, so the position is where that input left the mouse. */
  mousePosition(org: OrgRecord, id: string): Promise<{ x: number; y: number }> {
    return this.sessions.withSession(org, id, (session) => this.locks.run(session.id, () => this.backend(session).mousePosition(session)));
  }

  setCursor(org: OrgRecord, id: string, hidden: boolean): Promise<{ ok: boolean }> {
    return this.sessions.withSession(org, id, (session) =>
      this.locks.run(session.id, async () => {
        this.cursor(session, hidden);
        return { ok: true };
      }),
    );
  }

  /**
   * Hides a headful session's cursor with unclutter (XFixes; every movement counts as jitter, so
   * it stays hidden), run as a helper of the session's processes, so it ends with the session.
   * A headless session draws no cursor: nothing to do.
   */
  private cursor(session: LiveSession, hidden: boolean): void {
    if (!session.display) return;
    const running = this.cursorHiders.get(session.id);
    if (hidden && !running) {
      const hider = processesOf(session).helper(['unclutter', '--timeout', '0', '--jitter', '9000000', '--start-hidden']);
      this.cursorHiders.set(session.id, hider);
      void hider.exited.then(() => this.cursorHiders.delete(session.id));
    } else if (!hidden && running) {
      running.kill('SIGKILL');
      this.cursorHiders.delete(session.id);
    }
  }

  readClipboard(org: OrgRecord, id: string): Promise<{ text: string }> {
    return this.sessions.withSession(org, id, async (session) => {
      session.requireHiddenPages('the clipboard');
      return { text: await readClipboard(session.chromium) };
    });
  }

  /** Under the input lock: a paste queued after the write pastes what was written. */
  writeClipboard(org: OrgRecord, id: string, text: string): Promise<void> {
    return this.sessions.withSession(org, id, (session) => {
      session.requireHiddenPages('the clipboard');
      return this.locks.run(session.id, () => writeClipboard(session.chromium, text));
    });
  }

  /** Not input, so it does not wait for the lock: a screenshot mid-drag shows the drag. */
  screenshot(org: OrgRecord, id: string, body: S.ScreenshotBody | undefined): Promise<Buffer> {
    return this.sessions.withSession(org, id, (session) => this.backend(session).screenshot(session, screenshotRect(body, this.screen(session))));
  }
}
