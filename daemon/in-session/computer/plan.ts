import { BadRequestError } from '../../../src/errors.js';
import type { Key } from './keys.js';

export type Button = 'left' | 'middle' | 'right' | 'back' | 'forward';

/**
 * The primitive input steps every action is made of. Actions are planned as pure lists of these,
 * so their semantics (order, step sums, delays) are tested without a browser, and each backend
 * only has to perform primitives.
 */
export type Op =
  | { op: 'keyDown'; key: Key }
  | { op: 'keyUp'; key: Key }
  | { op: 'moveTo'; x: number; y: number }
  | { op: 'moveBy'; dx: number; dy: number }
  | { op: 'buttonDown'; button: Button }
  | { op: 'buttonUp'; button: Button }
  /** Wheel notches on one axis: positive is down (y) or right (x). */
  | { op: 'wheel'; axis: 'x' | 'y'; notches: number }
  | { op: 'sleep'; ms: number }
  | { op: 'type'; text: string; delayMs: number };

export interface Screen {
  width: number;
  height: number;
}

/** Coordinates are non-negative and inside the screen (kernel-images' rule), else 400 naming the field. */
export function checkPoint(x: number, y: number, screen: Screen, field: string): void {
  if (x < 0 || y < 0) throw BadRequestError.field(field, `coordinates must be non-negative (got ${x},${y})`);
  if (x >= screen.width || y >= screen.height) {
    throw BadRequestError.field(field, `(${x},${y}) is outside the ${screen.width}x${screen.height} screen`);
  }
}

/**
 * Splits a segment into `steps` relative moves whose sum is exactly the segment: step k ends at
 * round(k/steps) of the way, so rounding errors never accumulate.
 */
export function segmentSteps(from: readonly [number, number], to: readonly [number, number], steps: number) {
  const moves: { dx: number; dy: number }[] = [];
  const dx = to[0] - from[0];
  const dy = to[1] - from[1];
  for (let k = 1; k <= steps; k++) {
    moves.push({
      dx: Math.round((dx * k) / steps) - Math.round((dx * (k - 1)) / steps),
      dy: Math.round((dy * k) / steps) - Math.round((dy * (k - 1)) / steps),
    });
  }
  return moves;
}

const sleep = (ms: number): Op[] => (ms > 0 ? [{ op: 'sleep', ms }] : []);

/** Keys down before the body, up after it in reverse order. */
function holding(keys: readonly Key[], body: Op[]): Op[] {
  return [...keys.map((key): Op => ({ op: 'keyDown', key })), ...body, ...[...keys].reverse().map((key): Op => ({ op: 'keyUp', key }))];
}

export interface DragInput {
  path: readonly (readonly [number, number])[];
  button: Button;
  delay: number;
  stepsPerSegment: number;
  stepDelayMs: number;
  keys: readonly Key[];
}

/**
 * drag_mouse: keys down, move to path[0], press, wait `delay`, then per segment
 * `stepsPerSegment` relative moves `stepDelayMs` apart, release, keys up.
 */
export function dragPlan(d: DragInput): Op[] {
  const moves: Op[] = [];
  for (let i = 1; i < d.path.length; i++) {
    for (const step of segmentSteps(d.path[i - 1]!, d.path[i]!, d.stepsPerSegment)) {
      if (moves.length) moves.push(...sleep(d.stepDelayMs));
      moves.push({ op: 'moveBy', ...step });
    }
  }
  const [x, y] = d.path[0]!;
  return holding(d.keys, [
    { op: 'moveTo', x, y },
    { op: 'buttonDown', button: d.button },
    ...sleep(d.delay),
    ...moves,
    { op: 'buttonUp', button: d.button },
  ]);
}

/** scroll: move there, then vertical notches, then horizontal ones. */
export function scrollPlan(s: { x: number; y: number; deltaX: number; deltaY: number; keys: readonly Key[] }): Op[] {
  return holding(s.keys, [
    { op: 'moveTo', x: s.x, y: s.y },
    ...(s.deltaY ? [{ op: 'wheel', axis: 'y', notches: s.deltaY } as const] : []),
    ...(s.deltaX ? [{ op: 'wheel', axis: 'x', notches: s.deltaX } as const] : []),
  ]);
}

export function clickPlan(c: {
  x: number;
  y: number;
  button: Button;
  clickType: 'down' | 'up' | 'click';
  numClicks: number;
  keys: readonly Key[];
}): Op[] {
  const press: Op[] =
    c.clickType === 'down'
      ? [{ op: 'buttonDown', button: c.button }]
      : c.clickType === 'up'
        ? [{ op: 'buttonUp', button: c.button }]
        : Array.from({ length: c.numClicks }, (): Op[] => [
            { op: 'buttonDown', button: c.button },
            { op: 'buttonUp', button: c.button },
          ]).flat();
  return holding(c.keys, [{ op: 'moveTo', x: c.x, y: c.y }, ...press]);
}

export function movePlan(m: { x: number; y: number; keys: readonly Key[] }): Op[] {
  return holding(m.keys, [{ op: 'moveTo', x: m.x, y: m.y }]);
}

/** press_key: each combination pressed in order and released in reverse, held `durationMs` when set. */
export function pressKeyPlan(p: { combos: readonly (readonly Key[])[]; durationMs: number; keys: readonly Key[] }): Op[] {
  return holding(
    p.keys,
    p.combos.flatMap((combo) => holding(combo, sleep(p.durationMs))),
  );
}

/**
 * What to release when a plan fails part-way: every button and key it presses, keys last, as
 * a person letting go of everything would. Releasing one that is already up is harmless.
 */
export function releaseOps(ops: readonly Op[]): Op[] {
  const buttons = new Set<Button>();
  const keys = new Map<string, Key>();
  for (const o of ops) {
    if (o.op === 'buttonDown') buttons.add(o.button);
    if (o.op === 'keyDown') keys.set(o.key.keysym, o.key);
  }
  return [
    ...[...buttons].map((button): Op => ({ op: 'buttonUp', button })),
    ...[...keys.values()].reverse().map((key): Op => ({ op: 'keyUp', key })),
  ];
}
