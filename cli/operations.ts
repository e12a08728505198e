import type { EventEmitter } from 'node:events';
import { Command } from 'commander';
import type { OperationId } from '../src/api/routes.js';
import { printJson } from './output.js';

const coveredBy = new WeakMap<Command, OperationId[]>();

/**
 * Marks `cmd` as the CLI's way to call these API operations (route-table keys, the OpenAPI
 * operationIds); returns it for chaining. test/cli-coverage.test.ts fails for any operation of
 * /openapi.json that no command covers.
 */
export function covers<C extends Command>(cmd: C, ...ops: OperationId[]): C {
  coveredBy.set(cmd, [...(coveredBy.get(cmd) ?? []), ...ops]);
  return cmd;
}

export interface CommandInfo {
  /** The words after `rbrowse`, e.g. `pools acquire`. */
  path: string;
  aliases: string[];
  operations: OperationId[];
  /** Long option names without dashes (`json`, `timeout-seconds`), global ones excluded. */
  options: string[];
  /** The text `--help` prints after the usage (examples live there). */
  helpAfter: string;
  /** Has subcommands of its own. */
  group: boolean;
}

/** Every command below `root`, depth first; hidden ones (such as `__operations`) included. */
export function commandTree(root: Command): CommandInfo[] {
  const out: CommandInfo[] = [];
  const walk = (cmd: Command, prefix: string[]) => {
    for (const sub of cmd.commands) {
      const path = [...prefix, sub.name()];
      out.push({
        path: path.join(' '),
        aliases: sub.aliases(),
        operations: coveredBy.get(sub) ?? [],
        options: sub.options.filter((o) => !o.hidden && o.long).map((o) => o.long!.replace(/^--/, '')),
        helpAfter: helpAfterText(sub),
        group: sub.commands.length > 0,
      });
      walk(sub, path);
    }
  };
  walk(root, []);
  return out;
}

/** What the 'after' help texts of a command print, collected without printing. */
function helpAfterText(cmd: Command): string {
  let text = '';
  const context = { error: false, command: cmd, write: (s: string) => void (text += s) };
  // Commander keeps addHelpText as listeners of its 'afterHelp' event (Command is an EventEmitter).
  for (const listener of (cmd as unknown as EventEmitter).listeners('afterHelp')) (listener as (c: typeof context) => void)(context);
  return text;
}

/** operationId -> the commands that call it. */
export function operationMap(root: Command): Record<string, string[]> {
  const map: Record<string, string[]> = {};
  for (const info of commandTree(root)) for (const op of info.operations) (map[op] ??= []).push(info.path);
  return map;
}

/** `rbrowse __operations`: the mapping and the command tree as JSON, for tests and tooling. */
export function operationsCommand(root: Command): Command {
  return new Command('__operations')
    .description('print which command covers each API operation, as JSON')
    .action(() => printJson({ operations: operationMap(root), commands: commandTree(root) }));
}
