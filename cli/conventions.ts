import { styleText } from 'node:util';
import type { Command } from 'commander';
import { paint } from './output.js';

// Commander strips these when its stream has no colours (pipe, NO_COLOR), so they are applied unconditionally.
const style = (format: Parameters<typeof styleText>[0]) => (s: string) => styleText(format, s, { validateStream: false });

/**
 * What every command of the tree shares, applied once the tree is complete so commands added by
 * any module get it: usage errors throw (main.ts exits with EXIT.usage) instead of exiting with
 * commander's status 1, errors are red on a terminal, help titles bold and examples visible.
 */
export function applyConventions(root: Command): void {
  const visit = (cmd: Command) => {
    cmd
      .exitOverride()
      .showHelpAfterError(`(run "${fullName(cmd)} --help" for usage and examples)`)
      .configureOutput({ outputError: (text, write) => write(paint('red', text, process.stderr)) })
      .configureHelp({ styleTitle: style('bold'), styleCommandText: style('cyan'), styleSubcommandTerm: style('cyan') });
    cmd.commands.forEach(visit);
  };
  visit(root);
}

function fullName(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}
