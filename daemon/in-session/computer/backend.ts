import type { LiveSession } from '../../sessions/live-session.js';
import type { Op } from './plan.js';

/** A rectangle of the screen, in screen pixels. */
export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** How one kind of session performs input: real X input (headful) or CDP Input (headless). */
export interface InputBackend {
  /** Performs the ops in order; on failure it releases what the plan pressed, then rethrows. */
  perform(session: LiveSession, ops: readonly Op[]): Promise<void>;
  mousePosition(session: LiveSession): Promise<{ x: number; y: number }>;
  /** A PNG of the rectangle of the session's screen. */
  screenshot(session: LiveSession, rect: Rect): Promise<Buffer>;
}

/**
 * Pixels one wheel notch scrolls in both backends. Chromium on X11 turns a wheel button press
 * (4-7) into a 120-unit tick, the same as a notch on Windows, so headless sessions dispatch that
 * delta per notch and a page sees the same deltaY either way.
 */
export const NOTCH_PIXELS = 120;

/** Text as runs: plain ASCII (typed key by key) and anything else (inserted as text). */
export function textRuns(text: string): { ascii: boolean; text: string }[] {
  return (text.match(/[\x20-\x7e\n\t]+|[^\x20-\x7e\n\t]+/g) ?? []).map((run) => ({
    ascii: /^[\x20-\x7e\n\t]/.test(run),
    text: run,
  }));
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
