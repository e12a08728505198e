import { Command } from 'commander';
import { VERSION } from '../src/version.js';
import { browsersCommand, createCommand, deleteCommand, listCommand, liveCommand } from './commands/browsers.js';
import { computerCommand } from './commands/computer.js';
import { poolsCommand } from './commands/pools.js';
import { authCommand, daemonCommand, doctorCommand, envCommand } from './commands/system.js';
import { fsCommand } from './commands/fs.js';
import { deploymentsCommand } from './commands/deployments.js';
import { extensionsCommand } from './commands/extensions.js';
import { invocationsCommand } from './commands/invocations.js';
import { profilesCommand } from './commands/profiles.js';
import { proxiesCommand } from './commands/proxies.js';
import { printError } from './output.js';

const program = new Command('rbrowse')
  .description('A local, Kernel-compatible remote-browser service')
  .version(VERSION, '-V, --version')
  .option('--base-url <url>', 'talk to this server instead of the local daemon (or KERNEL_BASE_URL)')
  .option('--api-key <key>', 'API key (or KERNEL_API_KEY; the local default key otherwise)')
  .showHelpAfterError()
  .addHelpText('after', '\nExamples:\n  rbrowse create --viewport 1024x768\n  rbrowse ls\n  eval "$(rbrowse env)"');

program.addCommand(createCommand('create'));
program.addCommand(listCommand('ls'));
program.addCommand(deleteCommand('rm'));
program.addCommand(liveCommand());
program.addCommand(browsersCommand());
program.addCommand(poolsCommand());
program.addCommand(computerCommand());
program.addCommand(daemonCommand());
program.addCommand(authCommand());
program.addCommand(envCommand());
program.addCommand(doctorCommand());
program.addCommand(fsCommand());
program.addCommand(profilesCommand());
program.addCommand(extensionsCommand());
program.addCommand(proxiesCommand());
program.addCommand(invocationsCommand());
program.addCommand(deploymentsCommand());

program.parseAsync(process.argv).catch((err) => {
  printError(err);
  process.exit(1);
});
