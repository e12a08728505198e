import { Command } from 'commander';

export function invocationsCommand(): Command {
  return new Command('invocations').description('Invocations of app actions');
}
