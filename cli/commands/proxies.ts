import { Command } from 'commander';

export function proxiesCommand(): Command {
  return new Command('proxies').description('Upstream proxies sessions route through');
}
