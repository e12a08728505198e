import { readFile, writeFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { BatchBody } from '../../src/api/computer.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printJson } from '../output.js';

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

/** An option under its API field's name, plus its earlier short name, still accepted but not shown. */
function renamedOption(cmd: Command, flags: string, description: string, oldFlags: string, parse: (v: string) => number): Command {
  return cmd.option(flags, description, parse).addOption(new Option(oldFlags).argParser(parse).hideHelp());
}

export function computerCommand(): Command {
  const cmd = new Command('computer').description("control a session's mouse, keyboard and screen");

  const drag = covers(cmd.command('drag <id>'), 'computerDragMouse')
    .description('drag the mouse along a path with a button held')
    .requiredOption('--path <x,y...>', 'points to pass through (at least 2)', point)
    .option('--button <button>', 'left, middle or right (default left)')
    .option('--hold-key <key>', 'a key held during the drag, e.g. ctrl (repeatable)', collect);
  renamedOption(drag, '--steps-per-segment <n>', 'relative moves per segment (default 10)', '--steps <n>', int);
  renamedOption(drag, '--step-delay-ms <ms>', 'milliseconds between moves (default 50)', '--step-delay <ms>', int)
    .option('--delay <ms>', 'milliseconds between button down and the first move (default 0)', int)
    .addHelpText('after', '\nExample:\n  rbrowse computer drag SESSION --path 10,10 200,200 --hold-key shift')
    .action(async (id: string, o, c: Command) => {
      await (await clientFor(c)).call('computerDragMouse', {
        params: { id },
        body: {
          path: o.path,
          ...(o.button ? { button: o.button } : {}),
          ...(o.holdKey ? { hold_keys: o.holdKey } : {}),
          ...((o.stepsPerSegment ?? o.steps) !== undefined ? { steps_per_segment: o.stepsPerSegment ?? o.steps } : {}),
          ...((o.stepDelayMs ?? o.stepDelay) !== undefined ? { step_delay_ms: o.stepDelayMs ?? o.stepDelay } : {}),
          ...(o.delay !== undefined ? { delay: o.delay } : {}),
        },
      });
    });

  const scroll = covers(cmd.command('scroll <id>'), 'computerScroll')
    .description('turn the mouse wheel at a point (notches; positive is down / right)')
    .requiredOption('--x <x>', 'where', int)
    .requiredOption('--y <y>', 'where', int);
  renamedOption(scroll, '--delta-x <notches>', 'horizontal notches, positive right', '--dx <notches>', int);
  renamedOption(scroll, '--delta-y <notches>', 'vertical notches, positive down', '--dy <notches>', int)
    .option('--hold-key <key>', 'a key held during the scroll (repeatable)', collect)
    .addHelpText('after', '\nExample:\n  rbrowse computer scroll SESSION --x 400 --y 300 --delta-y 3')
    .action(async (id: string, o, c: Command) => {
      await (await clientFor(c)).call('computerScroll', {
        params: { id },
        body: {
          x: o.x,
          y: o.y,
          delta_x: o.deltaX ?? o.dx ?? 0,
          delta_y: o.deltaY ?? o.dy ?? 0,
          ...(o.holdKey ? { hold_keys: o.holdKey } : {}),
        },
      });
    });

  const click = covers(cmd.command('click <id>'), 'computerClickMouse')
    .description('click at a point (or only press or release a button)')
    .requiredOption('--x <x>', 'where', int)
    .requiredOption('--y <y>', 'where', int)
    .option('--button <button>', 'left, right, middle, back or forward (default left)')
    .addOption(new Option('--click-type <type>', 'press and release, or only one (default click)').choices(['click', 'down', 'up']));
  renamedOption(click, '--num-clicks <n>', 'number of clicks (default 1)', '--clicks <n>', int)
    .option('--hold-key <key>', 'a key held during the click (repeatable)', collect)
    .addHelpText('after', '\nExample:\n  rbrowse computer click SESSION --x 700 --y 35 --num-clicks 2')
    .action(async (id: string, o, c: Command) => {
      await (await clientFor(c)).call('computerClickMouse', {
        params: { id },
        body: {
          x: o.x,
          y: o.y,
          ...(o.button ? { button: o.button } : {}),
          ...(o.clickType ? { click_type: o.clickType } : {}),
          ...((o.numClicks ?? o.clicks) !== undefined ? { num_clicks: o.numClicks ?? o.clicks } : {}),
          ...(o.holdKey ? { hold_keys: o.holdKey } : {}),
        },
      });
    });

  covers(cmd.command('move <id>'), 'computerMoveMouse')
    .description('move the mouse to a point')
    .requiredOption('--x <x>', 'where', int)
    .requiredOption('--y <y>', 'where', int)
    .option('--hold-key <key>', 'a key held during the move (repeatable)', collect)
    .addHelpText('after', '\nExample:\n  rbrowse computer move SESSION --x 100 --y 200')
    .action(async (id: string, o, c: Command) => {
      await (await clientFor(c)).call('computerMoveMouse', {
        params: { id },
        body: { x: o.x, y: o.y, ...(o.holdKey ? { hold_keys: o.holdKey } : {}) },
      });
    });

  covers(cmd.command('position <id>'), 'computerGetMousePosition')
    .description('where the mouse is: prints X Y')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse computer position SESSION --json')
    .action(async (id: string, o, c: Command) => {
      const pos = await (await clientFor(c)).call('computerGetMousePosition', { params: { id } });
      if (o.json) printJson(pos);
      else process.stdout.write(`${pos.x} ${pos.y}\n`);
    });

  covers(cmd.command('press <id> <keys...>'), 'computerPressKey')
    .description('press keys or combinations, in order')
    .option('--duration <ms>', 'milliseconds to hold each (default 0: a tap)', int)
    .option('--hold-key <key>', 'a key held while these are pressed (repeatable)', collect)
    .addHelpText('after', '\nExample:\n  rbrowse computer press SESSION ctrl+t Return')
    .action(async (id: string, keys: string[], o, c: Command) => {
      await (await clientFor(c)).call('computerPressKey', {
        params: { id },
        body: { keys, ...(o.duration !== undefined ? { duration: o.duration } : {}), ...(o.holdKey ? { hold_keys: o.holdKey } : {}) },
      });
    });

  covers(cmd.command('batch <id> [file]'), 'computerBatch')
    .description('run actions in order from a JSON file (or stdin): {"actions": [...]} or the array itself')
    .addHelpText(
      'after',
      '\nExample:\n  echo \'[{"type":"move_mouse","move_mouse":{"x":10,"y":10}},{"type":"press_key","press_key":{"keys":["Return"]}}]\' | rbrowse computer batch SESSION',
    )
    .action(async (id: string, file: string | undefined, _o, c: Command) => {
      const raw = file && file !== '-' ? await readFile(file, 'utf8') : await text(process.stdin);
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch (err) {
        c.error(`error: the actions are not JSON: ${(err as Error).message}`);
      }
      const body = (Array.isArray(parsed) ? { actions: parsed } : parsed) as BatchBody;
      await (await clientFor(c)).call('computerBatch', { params: { id }, body });
    });

  covers(cmd.command('type <id> <text>'), 'computerTypeText')
    .description('type text into the focused element')
    .option('--delay <ms>', 'milliseconds between keystrokes (default 12)', int)
    .addHelpText('after', "\nExample:\n  rbrowse computer type SESSION 'héllo ✓'")
    .action(async (id: string, text: string, o, c: Command) => {
      await (await clientFor(c)).call('computerTypeText', {
        params: { id },
        body: { text, ...(o.delay !== undefined ? { delay: o.delay } : {}) },
      });
    });

  covers(cmd.command('screenshot <id>'), 'computerScreenshot')
    .description("save a PNG of the session's screen")
    .requiredOption('-o, --output <file>', 'where to write the PNG (- for stdout)')
    .option('--region <x,y,w,h>', 'only this rectangle', region)
    .addHelpText(
      'after',
      '\nExamples:\n  rbrowse computer screenshot SESSION -o shot.png --region 0,0,640,480\n  rbrowse computer screenshot SESSION -o - > shot.png',
    )
    .action(async (id: string, o, c: Command) => {
      const png = await (await clientFor(c)).call('computerScreenshot', {
        params: { id },
        body: o.region ? { region: o.region } : {},
      });
      if (o.output === '-') {
        if (process.stdout.isTTY) c.error('error: not writing a PNG to a terminal: redirect stdout or give -o <file>', { exitCode: 2 });
        await new Promise<void>((resolve, reject) => process.stdout.write(png as Buffer, (err) => (err ? reject(err) : resolve())));
        return;
      }
      await writeFile(o.output, png as Buffer);
      console.log(o.output);
    });

  const clipboard = cmd.command('clipboard').description("the session's clipboard (its browser's)");
  covers(clipboard.command('get <id>'), 'computerReadClipboard')
    .description("print the clipboard's text")
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse computer clipboard get SESSION')
    .action(async (id: string, o, c: Command) => {
      const r = await (await clientFor(c)).call('computerReadClipboard', { params: { id } });
      if (o.json) printJson(r);
      else process.stdout.write(r.text);
    });
  covers(clipboard.command('set <id> [text]'), 'computerWriteClipboard')
    .description("put text on the clipboard (the argument, or this command's input)")
    .addHelpText('after', '\nExamples:\n  rbrowse computer clipboard set SESSION "hello"\n  cat notes.txt | rbrowse computer clipboard set SESSION')
    .action(async (id: string, value: string | undefined, _o, c: Command) => {
      await (await clientFor(c)).call('computerWriteClipboard', { params: { id }, body: { text: value ?? (await text(process.stdin)) } });
    });

  covers(cmd.command('cursor <id>'), 'computerSetCursor')
    .description("hide or show the mouse cursor of a headful session's screen")
    .option('--hidden', 'hide it')
    .option('--no-hidden', 'show it again')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse computer cursor SESSION --hidden')
    .action(async (id: string, o, c: Command) => {
      if (o.hidden === undefined) throw new InvalidArgumentError('say --hidden or --no-hidden');
      const r = await (await clientFor(c)).call('computerSetCursor', { params: { id }, body: { hidden: o.hidden } });
      if (o.json) printJson(r);
    });

  return cmd;
}
