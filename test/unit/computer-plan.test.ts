import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { dragOps, scrollOps, screenshotRect } from '../../daemon/in-session/computer/actions.js';
import { keyByName, resolveCombo, resolveKeys } from '../../daemon/in-session/computer/keys.js';
import { dragPlan, releaseOps, segmentSteps, type Op } from '../../daemon/in-session/computer/plan.js';
import { ApiError } from '../../src/errors.js';

const screen = { width: 1024, height: 768 };
const CTRL = keyByName('ctrl')!;

/** Asserts fn throws a 400 whose detail names `field`. */
function assertField(fn: () => unknown, field: string) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ApiError && err.status === 400, String(err));
    assert.ok(
      err.details?.some((d) => d.message.startsWith(`${field}:`)),
      `${field} named in ${JSON.stringify(err.details)}`,
    );
    return true;
  });
}

/** A plan without its keys, sleeps as `sleep N` and everything else compact. */
const describeOps = (ops: Op[]) =>
  ops.map((o) =>
    o.op === 'moveBy'
      ? `by ${o.dx},${o.dy}`
      : o.op === 'moveTo'
        ? `to ${o.x},${o.y}`
        : o.op === 'sleep'
          ? `sleep ${o.ms}`
          : o.op === 'keyDown' || o.op === 'keyUp'
            ? `${o.op} ${o.key.keysym}`
            : o.op === 'buttonDown' || o.op === 'buttonUp'
              ? `${o.op} ${o.button}`
              : o.op,
  );

describe('drag step plan', () => {
  test('relative steps sum exactly to each segment, whatever the rounding', () => {
    for (const [from, to, steps] of [
      [[0, 0], [10, 7], 3],
      [[5, 5], [4, 100], 7],
      [[100, 100], [0, 1], 10],
      [[3, 3], [3, 3], 4],
    ] as const) {
      const moves = segmentSteps(from, to, steps);
      assert.equal(moves.length, steps);
      const sum = moves.reduce((a, m) => ({ dx: a.dx + m.dx, dy: a.dy + m.dy }), { dx: 0, dy: 0 });
      assert.deepEqual(sum, { dx: to[0] - from[0], dy: to[1] - from[1] });
      for (const m of moves) assert.ok(Number.isInteger(m.dx) && Number.isInteger(m.dy));
    }
  });

  test('keys down, move to the start, press, delay, steps apart, release, keys up', () => {
    const ops = dragPlan({
      path: [
        [10, 10],
        [20, 10],
        [20, 13],
      ],
      button: 'right',
      delay: 100,
      stepsPerSegment: 2,
      stepDelayMs: 5,
      keys: [CTRL],
    });
    assert.deepEqual(describeOps(ops), [
      'keyDown Control_L',
      'to 10,10',
      'buttonDown right',
      'sleep 100',
      'by 5,0',
      'sleep 5',
      'by 5,0',
      'sleep 5',
      'by 0,2',
      'sleep 5',
      'by 0,1',
      'buttonUp right',
      'keyUp Control_L',
    ]);
  });

  test('no sleeps when the delays are 0', () => {
    const ops = dragPlan({
      path: [
        [0, 0],
        [4, 4],
      ],
      button: 'left',
      delay: 0,
      stepsPerSegment: 1,
      stepDelayMs: 0,
      keys: [],
    });
    assert.deepEqual(describeOps(ops), ['to 0,0', 'buttonDown left', 'by 4,4', 'buttonUp left']);
  });

  test('a failure releases every button and key the plan presses, keys last', () => {
    const ops = dragPlan({
      path: [
        [0, 0],
        [4, 4],
      ],
      button: 'middle',
      delay: 0,
      stepsPerSegment: 1,
      stepDelayMs: 0,
      keys: resolveKeys(['shift', 'ctrl'], 'k'),
    });
    assert.deepEqual(describeOps(releaseOps(ops)), ['buttonUp middle', 'keyUp Control_L', 'keyUp Shift_L']);
  });

  test('defaults: left button, 10 steps per segment, 50 ms apart', () => {
    const ops = dragOps(
      {
        path: [
          [0, 0],
          [100, 0],
        ],
      },
      screen,
    );
    assert.equal(ops.filter((o) => o.op === 'moveBy').length, 10);
    assert.deepEqual(
      ops.filter((o) => o.op === 'sleep').map((o) => (o as { ms: number }).ms),
      Array(9).fill(50),
    );
    assert.ok(ops.some((o) => o.op === 'buttonDown' && o.button === 'left'));
  });

  test('points outside the screen or negative are 400s naming the point', () => {
    assertField(
      () =>
        dragOps(
          {
            path: [
              [0, 0],
              [1024, 5],
            ],
          },
          screen,
        ),
      'path.1',
    );
    assertField(
      () =>
        dragOps(
          {
            path: [
              [-1, 0],
              [5, 5],
            ],
          },
          screen,
        ),
      'path.0',
    );
    assertField(
      () =>
        dragOps(
          {
            path: [
              [0, 0],
              [5, 768],
            ],
          },
          screen,
        ),
      'path.1',
    );
    assertField(
      () =>
        dragOps(
          {
            path: [
              [0, 0],
              [5, 5, 5],
            ],
          },
          screen,
        ),
      'path.1',
    );
    assertField(() => dragOps({ path: [[0, 0]] }, screen), 'path');
  });
});

describe('scroll and screenshot checks', () => {
  test('vertical notches first, then horizontal; both 0 only moves the pointer', () => {
    const ops = scrollOps({ x: 5, y: 6, delta_x: -2, delta_y: 3 }, screen);
    assert.deepEqual(
      ops.filter((o) => o.op === 'wheel'),
      [
        { op: 'wheel', axis: 'y', notches: 3 },
        { op: 'wheel', axis: 'x', notches: -2 },
      ],
    );
    // Kernel's SDK sends only x and y when no delta is set: a move there, no wheel.
    const still = scrollOps({ x: 5, y: 6 }, screen);
    assert.deepEqual(
      still.filter((o) => o.op === 'wheel'),
      [],
    );
    assert.ok(
      still.some((o) => o.op === 'moveTo' && (o as { x?: number }).x === 5 && (o as { y?: number }).y === 6),
      JSON.stringify(still),
    );
    assertField(() => scrollOps({ x: 5, y: 900, delta_y: 1 }, screen), 'x');
  });

  test('a region must lie inside the screen', () => {
    assert.deepEqual(screenshotRect({}, screen), { x: 0, y: 0, width: 1024, height: 768 });
    assert.deepEqual(screenshotRect({ region: { x: 24, y: 8, width: 1000, height: 760 } }, screen), { x: 24, y: 8, width: 1000, height: 760 });
    assertField(() => screenshotRect({ region: { x: 25, y: 8, width: 1000, height: 760 } }, screen), 'region');
  });
});

describe('key names', () => {
  test('xdotool aliases and keysyms, any case', () => {
    const syms = resolveKeys(['ctrl', 'Control', 'CONTROL_L', 'Control_R', 'alt', 'Shift', 'shift_r', 'super', 'meta'], 'hold_keys').map(
      (k) => k.keysym,
    );
    assert.deepEqual(syms, ['Control_L', 'Control_L', 'Control_L', 'Control_R', 'Alt_L', 'Shift_L', 'Shift_R', 'Super_L', 'Meta_L']);
    assert.deepEqual(
      resolveKeys(['ctrl', 'shift', 'alt', 'meta'], 'k').map((k) => k.modifier),
      [2, 8, 1, 4],
    );
  });

  test('unknown names are 400s naming the field', () => {
    assertField(() => resolveKeys(['ctrl', 'hyperctrl'], 'hold_keys'), 'hold_keys.1');
    assertField(() => resolveCombo('ctrl+nope', 'keys.0'), 'keys.0');
  });

  test('combinations', () => {
    assert.deepEqual(
      resolveCombo('Ctrl+Shift+Tab', 'k').map((k) => k.key),
      ['Control', 'Shift', 'Tab'],
    );
    assert.deepEqual(
      resolveCombo('ctrl+t', 'k').map((k) => k.code),
      ['ControlLeft', 'KeyT'],
    );
  });
});
