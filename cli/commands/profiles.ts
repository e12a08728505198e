import { Command } from 'commander';

export function profilesCommand(): Command {
  return new Command('profiles').description('Saved browser profiles (user data a session loads and may save back)');
}
