import { Command, CommanderError } from 'commander';
import { VERSION } from '../src/version.js';
import { browsersCommand, createCommand, deleteCommand, listCommand, liveCommand } from './commands/browsers.js';
import { computerCommand } from './commands/computer.js';
import { poolsCommand } from './commands/pools.js';
import { authCommand, daemonCommand, doctorCommand, envCommand, setupCommand } from './commands/system.js';
import { execCommand, processCommand } from './commands/process.js';
import { executorsCommand, playwrightCommand } from './commands/playwright.js';
import { replCommand } from './commands/repl.js';
import { webmcpCommand } from './commands/webmcp.js';
import { logsCommand } from './commands/logs.js';
import { telemetryCommand } from './commands/telemetry.js';
import { curlCommand } from './commands/curl.js';
import { replaysCommand } from './commands/replays.js';
import { fsCommand } from './commands/fs.js';
import { appsCommand, deployCommand, deploymentsCommand } from './commands/deployments.js';
import { extensionsCommand } from './commands/extensions.js';
import { invocationsCommand, invokeCommand } from './commands/invocations.js';
import { profilesCommand } from './commands/profiles.js';
import { keysCommand } from './commands/keys.js';
import { limitsCommand, projectsCommand } from './commands/projects.js';
import { credentialsCommand } from './commands/credentials.js';
import { auditCommand } from './commands/audit.js';
import { proxiesCommand } from './commands/proxies.js';
import { exitCodeFor, printError } from './output.js';
import { applyConventions } from './conventions.js';
import { completionCommand } from './completion.js';
import { operationsCommand } from './operations.js';
import { watchCommand } from './watch/command.js';
import { mcpCommand } from './commands/mcp.js';

// Commander reads a program option anywhere on the line, so `--version` is the program's only as the
// first argument: after a command it is that command's own (deploy, invoke: an app version label).
const versionFlags = ['-V', '--version'].includes(process.argv[2] ?? '') ? '-V, --version' : '-V';

const program = new Command('rbrowse')
  .description('A local, Kernel-compatible remote-browser service')
  .version(VERSION, versionFlags)
  .option('--base-url <url>', 'talk to this server instead of the local daemon (or KERNEL_BASE_URL)')
  .option('--api-key <key>', 'API key (or KERNEL_API_KEY; the local default key otherwise)')
  .option('--project <id-or-name>', 'act in this project of your organization (or KERNEL_PROJECT; the default project otherwise)')
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
program.addCommand(keysCommand());
program.addCommand(projectsCommand());
program.addCommand(limitsCommand());
program.addCommand(credentialsCommand());
program.addCommand(auditCommand());
program.addCommand(envCommand());
program.addCommand(doctorCommand());
program.addCommand(setupCommand());
program.addCommand(fsCommand());
program.addCommand(processCommand());
program.addCommand(playwrightCommand());
program.addCommand(replCommand());
program.addCommand(executorsCommand());
program.addCommand(webmcpCommand());
program.addCommand(logsCommand());
program.addCommand(telemetryCommand());
program.addCommand(curlCommand());
program.addCommand(replaysCommand());
program.addCommand(execCommand('exec'));
program.addCommand(profilesCommand());
program.addCommand(extensionsCommand());
program.addCommand(proxiesCommand());
program.addCommand(invocationsCommand());
program.addCommand(invokeCommand());
program.addCommand(deploymentsCommand());
program.addCommand(deployCommand());
program.addCommand(appsCommand());

program.addCommand(watchCommand());
program.addCommand(mcpCommand());
program.addCommand(completionCommand(program));
program.addCommand(operationsCommand(program), { hidden: true });
// Last: it applies to every command above, whichever module added it.
applyConventions(program);

// `rbrowse ls -q | head -1`: a reader that stops early is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

program.parseAsync(process.argv).catch((err) => {
  // Commander has printed its own usage errors; anything else is printed here.
  const code = exitCodeFor(err);
  if (!(err instanceof CommanderError)) printError(err);
  process.exit(code);
});
