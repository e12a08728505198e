import { Command } from 'commander';

export function invocationsCommand(): Command {
  return new Command('invocations').description('App action invocations, apps and deployments');
}
