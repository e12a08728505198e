import type {
  BatchBody,
  ClickMouseBody,
  ComputerAction,
  DragMouseBody,
  MoveMouseBody,
  PressKeyBody,
  ScreenshotBody,
  ScrollBody,
  TypeTextBody,
} from '../../../src/api/computer.js';
import { BadRequestError } from '../../../src/errors.js';
import { resolveCombo, resolveKeys } from './keys.js';
import { checkPoint, clickPlan, dragPlan, movePlan, pressKeyPlan, scrollPlan, type Op, type Screen } from './plan.js';
import type { Rect } from './backend.js';

/**
 * The longest one action may take (typing, a drag, keys held), as a batch's sleep: a request that
 * types for twenty minutes is a hang to its client.
 */
const MAX_ACTION_MS = 60_000;
/** Relative moves of one drag. */
const MAX_MOVES = 10_000;

/*
 * Request bodies to op plans: the checks the schema cannot make (screen bounds, key names, a
 * scroll of nothing) answer 400 naming the field; defaults are the schema's, repeated here so a
 * body that skipped validation (a batch built in code) means the same.
 */

export function dragOps(b: DragMouseBody, screen: Screen): Op[] {
  const path = b.path.map((p, i) => {
    if (p.length !== 2) throw BadRequestError.field(`path.${i}`, 'must be exactly [x, y]');
    checkPoint(p[0]!, p[1]!, screen, `path.${i}`);
    return [p[0]!, p[1]!] as const;
  });
  if (path.length < 2) throw BadRequestError.field('path', 'needs at least 2 points');
  const moves = (path.length - 1) * (b.steps_per_segment ?? 10);
  if (moves > MAX_MOVES) throw BadRequestError.field('steps_per_segment', `${moves} moves in all; at most ${MAX_MOVES} per drag`);
  const takes = (b.delay ?? 0) + moves * (b.step_delay_ms ?? 50);
  if (takes > MAX_ACTION_MS) throw BadRequestError.field('step_delay_ms', `the drag would take ${Math.ceil(takes / 1000)} s; at most 60 s`);
  return dragPlan({
    path,
    button: b.button ?? 'left',
    delay: b.delay ?? 0,
    stepsPerSegment: b.steps_per_segment ?? 10,
    stepDelayMs: b.step_delay_ms ?? 50,
    keys: resolveKeys(b.hold_keys, 'hold_keys'),
  });
}

export function scrollOps(b: ScrollBody, screen: Screen): Op[] {
  checkPoint(b.x, b.y, screen, 'x');
  const deltaX = b.delta_x ?? 0;
  const deltaY = b.delta_y ?? 0;
  // Kernel's SDK sends only x and y when no delta is set: the pointer goes there, nothing scrolls.
  if (!deltaX && !deltaY) return movePlan({ x: b.x, y: b.y, keys: resolveKeys(b.hold_keys, 'hold_keys') });
  return scrollPlan({ x: b.x, y: b.y, deltaX, deltaY, keys: resolveKeys(b.hold_keys, 'hold_keys') });
}

export function clickOps(b: ClickMouseBody, screen: Screen): Op[] {
  checkPoint(b.x, b.y, screen, 'x');
  return clickPlan({
    x: b.x,
    y: b.y,
    button: b.button ?? 'left',
    clickType: b.click_type ?? 'click',
    // 0 is what a client that sends Go's zero value means by no number: the default.
    numClicks: b.num_clicks || 1,
    keys: resolveKeys(b.hold_keys, 'hold_keys'),
  });
}

export function moveOps(b: MoveMouseBody, screen: Screen): Op[] {
  checkPoint(b.x, b.y, screen, 'x');
  return movePlan({ x: b.x, y: b.y, keys: resolveKeys(b.hold_keys, 'hold_keys') });
}

export function typeOps(b: TypeTextBody): Op[] {
  const delayMs = b.delay ?? 12;
  const takes = [...b.text].length * delayMs;
  if (takes > MAX_ACTION_MS) {
    throw BadRequestError.field(
      'text',
      `${[...b.text].length} characters ${delayMs} ms apart would take ${Math.ceil(takes / 1000)} s to type; at most 60 s per action (send less at a time, or a smaller delay)`,
    );
  }
  return [{ op: 'type', text: b.text, delayMs }];
}

/** The longest a batch may wait and type in all (its sleeps and typing), so no batch holds a session's input for hours. */
const MAX_BATCH_MS = 300_000;

/** Refuses a batch whose sleeps and typing alone would take longer than MAX_BATCH_MS, before any of it runs. */
export function checkBatchLength(body: BatchBody): void {
  let ms = 0;
  for (const a of body.actions) {
    if (a.type === 'sleep') ms += a.sleep?.duration_ms ?? 0;
    if (a.type === 'type_text' && a.type_text) ms += [...a.type_text.text].length * (a.type_text.delay ?? 12);
  }
  if (ms > MAX_BATCH_MS) {
    throw BadRequestError.field('actions', `its sleeps and typing would take ${Math.ceil(ms / 1000)} s; at most ${MAX_BATCH_MS / 1000} s per batch`);
  }
}

export function pressKeyOps(b: PressKeyBody): Op[] {
  const takes = b.keys.length * (b.duration ?? 0);
  if (takes > MAX_ACTION_MS)
    throw BadRequestError.field('duration', `${b.keys.length} keys held ${b.duration} ms each would take ${Math.ceil(takes / 1000)} s; at most 60 s`);
  return pressKeyPlan({
    combos: b.keys.map((combo, i) => resolveCombo(combo, `keys.${i}`)),
    durationMs: b.duration ?? 0,
    keys: resolveKeys(b.hold_keys, 'hold_keys'),
  });
}

/** The screenshot rectangle: the whole screen, or a region wholly inside it. */
export function screenshotRect(b: ScreenshotBody | undefined, screen: Screen): Rect {
  const r = b?.region;
  // An empty region (0x0, a client's zero value) is no region: the whole screen.
  if (!r || (r.width === 0 && r.height === 0)) return { x: 0, y: 0, width: screen.width, height: screen.height };
  if (r.width === 0 || r.height === 0)
    throw BadRequestError.field('region', 'width and height must both be at least 1 (or both 0: the whole screen)');
  if (r.x + r.width > screen.width || r.y + r.height > screen.height) {
    throw BadRequestError.field('region', `exceeds the ${screen.width}x${screen.height} screen`);
  }
  return { x: r.x, y: r.y, width: r.width, height: r.height };
}

/** One batch action as ops; its own parameters live in the field named by its type. */
export function actionOps(a: ComputerAction, screen: Screen): Op[] {
  const params = (a as Record<string, unknown>)[a.type];
  if (params === undefined) throw BadRequestError.field(a.type, 'is required for this action type');
  switch (a.type) {
    case 'drag_mouse':
      return dragOps(a.drag_mouse!, screen);
    case 'scroll':
      return scrollOps(a.scroll!, screen);
    case 'click_mouse':
      return clickOps(a.click_mouse!, screen);
    case 'move_mouse':
      return moveOps(a.move_mouse!, screen);
    case 'type_text':
      return typeOps(a.type_text!);
    case 'press_key':
      return pressKeyOps(a.press_key!);
    case 'sleep':
      return a.sleep!.duration_ms > 0 ? [{ op: 'sleep', ms: a.sleep!.duration_ms }] : [];
    case 'set_cursor':
      // Not input: the batch applies it itself (ComputerControl.cursor).
      return [];
  }
}
