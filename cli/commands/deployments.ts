import { Command } from 'commander';

export function deploymentsCommand(): Command {
  return new Command('deployments').description('Deployed app code');
}
