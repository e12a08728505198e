import { Command } from 'commander';

export function extensionsCommand(): Command {
  return new Command('extensions').description('Chromium extensions sessions can load');
}
