import { writeFile } from 'node:fs/promises';
import { Command, InvalidArgumentError } from 'commander';
import { clientFor } from '../context.js';

const int = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('expected a whole number');
  return n;
};

/** `10,20` -> [10, 20]; repeated values collect into a path. */
function point(value: string, previous: [number, number][] = []): [number, number][] {
  const m = /^(-?\d+),(-?\d+)$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError('expected X,Y, e.g. 10,20');
  return [...previous, [Number(m[1]), Number(m[2])]];
}

function region(value: string) {
  const parts = value.split(',').map(Number);
  if (parts.length !== 4 || !parts.every(Number.isInteger)) throw new InvalidArgumentError('expected X,Y,WIDTH,HEIGHT');
  const [x, y, width, height] = parts as [number, number, number, number];
  return { x, y, width, height };
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function computerCommand(): Command {
  const cmd = new Command('computer').description("control a session's mouse, keyboard and screen");

  cmd
    .command('drag <id>')
    .description('drag the mouse along a path with a button held')
    .requiredOption('--path <x,y...>', 'points to pass through (at least 2)', point)
    .option('--button <button>', 'left, middle or right (default left)')
    .option('--hold-key <key>', 'a key held during the drag, e.g. ctrl (repeatable)', collect)
    .option('--steps <n>', 'relative moves per segment (default 10)', int)
    .option('--step-delay <ms>', 'milliseconds between moves (default 50)', int)
    .option('--delay <ms>', 'milliseconds between button down and the first move (default 0)', int)
    .addHelpText('after', '\nExample:\n  rbrowse computer drag SESSION --path 10,10 200,200 --hold-key shift')
    .action(async (id: string, o, c: Command) => {
      await (await clientFor(c)).call('computerDragMouse', {
        params: { id },
        body: {
          path: o.path,
          ...(o.button ? { button: o.button } : {}),
          ...(o.holdKey ? { hold_keys: o.holdKey } : {}),
          ...(o.steps !== undefined ? { steps_per_segment: o.steps } : {}),
          ...(o.stepDelay !== undefined ? { step_delay_ms: o.stepDelay } : {}),
          ...(o.delay !== undefined ? { delay: o.delay } : {}),
        },
      });
    });

  cmd
    .command('scroll <id>')
    .description('turn the mouse wheel at a point (notches; positive is down / right)')
    .requiredOption('--x <x>', 'where', int)
    .requiredOption('--y <y>', 'where', int)
    .option('--dx <notches>', 'horizontal notches', int)
    .option('--dy <notches>', 'vertical notches', int)
    .option('--hold-key <key>', 'a key held during the scroll (repeatable)', collect)
    .action(async (id: string, o, c: Command) => {
      await (await clientFor(c)).call('computerScroll', {
        params: { id },
        body: { x: o.x, y: o.y, delta_x: o.dx ?? 0, delta_y: o.dy ?? 0, ...(o.holdKey ? { hold_keys: o.holdKey } : {}) },
      });
    });

  cmd
    .command('click <id>')
    .description('click at a point')
    .requiredOption('--x <x>', 'where', int)
    .requiredOption('--y <y>', 'where', int)
    .option('--button <button>', 'left, right, middle, back or forward (default left)')
    .option('--clicks <n>', 'number of clicks (default 1)', int)
    .option('--hold-key <key>', 'a key held during the click (repeatable)', collect)
    .action(async (id: string, o, c: Command) => {
      await (await clientFor(c)).call('computerClickMouse', {
        params: { id },
        body: {
          x: o.x,
          y: o.y,
          ...(o.button ? { button: o.button } : {}),
          ...(o.clicks !== undefined ? { num_clicks: o.clicks } : {}),
          ...(o.holdKey ? { hold_keys: o.holdKey } : {}),
        },
      });
    });

  cmd
    .command('type <id> <text>')
    .description('type text into the focused element')
    .option('--delay <ms>', 'milliseconds between keystrokes (default 12)', int)
    .action(async (id: string, text: string, o, c: Command) => {
      await (await clientFor(c)).call('computerTypeText', {
        params: { id },
        body: { text, ...(o.delay !== undefined ? { delay: o.delay } : {}) },
      });
    });

  cmd
    .command('screenshot <id>')
    .description("save a PNG of the session's screen")
    .requiredOption('-o, --output <file>', 'where to write the PNG')
    .option('--region <x,y,w,h>', 'only this rectangle', region)
    .action(async (id: string, o, c: Command) => {
      const png = await (await clientFor(c)).call('computerScreenshot', {
        params: { id },
        body: o.region ? { region: o.region } : {},
      });
      await writeFile(o.output, png as Buffer);
      console.log(o.output);
    });

  return cmd;
}
