import { spawnSync } from 'node:child_process';
import { Command, InvalidArgumentError } from 'commander';
import { baseUrlFor, DEFAULT_HOST, defaultPort } from '../../src/config.js';
import { RbrowseClient } from '../../src/client.js';
import { checkSystemDeps, installCommand } from '../../src/system-deps.js';
import { adminToken, clientFor, localKey } from '../context.js';
import { readDaemonInfo, runningDaemon, startDaemon, stopDaemon } from '../daemon-control.js';
import { printJson } from '../output.js';
import { Sandbox } from '../../daemon/sandbox/sandbox.js';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port number');
  return n;
}

export function daemonCommand(): Command {
  const daemon = new Command('daemon').description('the local rbrowse daemon');
  daemon
    .command('start')
    .description('start the daemon in the background (no error when it already runs)')
    .option('--port <port>', 'port to listen on (default 7331, or RBROWSE_PORT)', port)
    .option('--host <host>', 'address to listen on', DEFAULT_HOST)
    .option('--foreground', 'run in the foreground, logging to stderr')
    .addHelpText('after', '\nExample:\n  rbrowse daemon start --port 7331')
    .action(async (o) => {
      if (o.foreground) {
        const { runDaemon } = await import('../../daemon/main.js');
        await runDaemon({ host: o.host, port: o.port });
        return;
      }
      const info = await startDaemon({ host: o.host, port: o.port });
      process.stdout.write(`${info.base_url}\n`);
    });
  daemon
    .command('stop')
    .description('stop the daemon, closing every session gracefully')
    .action(async () => {
      const { wasRunning, pid } = await stopDaemon();
      process.stderr.write(wasRunning ? `stopped daemon (pid ${pid})\n` : 'daemon was not running\n');
    });
  daemon
    .command('status')
    .description('is the daemon running?')
    .option('--json', 'print {"running", "pid", "base_url"}')
    .action(async (o) => {
      const info = await runningDaemon();
      const status = {
        running: Boolean(info),
        pid: info?.pid ?? readDaemonInfo()?.pid ?? null,
        base_url: info?.base_url ?? baseUrlFor(DEFAULT_HOST, defaultPort()),
      };
      if (o.json) printJson(status);
      else process.stdout.write(status.running ? `running (pid ${status.pid}) at ${status.base_url}\n` : 'not running\n');
      if (!o.json && !status.running) process.exitCode = 3;
    });
  return daemon;
}

export function authCommand(): Command {
  const auth = new Command('auth').description('API keys');
  auth
    .command('token')
    .description("print the default organization's API key")
    .action(async () => {
      await startDaemon();
      process.stdout.write(`${localKey()}\n`);
    });
  auth
    .command('create-key')
    .description('print a new API key for an organization (created when missing)')
    .requiredOption('--org <name>', 'organization name')
    .addHelpText('after', '\nExample:\n  rbrowse auth create-key --org team-a')
    .action(async (o) => {
      const info = await startDaemon();
      const admin = new RbrowseClient(info.base_url, adminToken());
      const created = await admin.call('adminCreateKey', { body: { org: o.org } });
      process.stdout.write(`${created.key}\n`);
    });
  return auth;
}

export function envCommand(): Command {
  return new Command('env')
    .description('print KERNEL_BASE_URL and KERNEL_API_KEY exports for the Kernel SDKs and CLI')
    .addHelpText('after', '\nExample:\n  eval "$(rbrowse env)"')
    .action(async () => {
      const info = await startDaemon();
      process.stdout.write(`export KERNEL_BASE_URL=${info.base_url}\nexport KERNEL_API_KEY=${localKey()}\n`);
    });
}

export function doctorCommand(): Command {
  return new Command('doctor')
    .description('check the system packages the daemon needs')
    .option('--install', 'install what is missing with apt-get')
    .action(async (o) => {
      let statuses = checkSystemDeps();
      let missing = statuses.filter((s) => !s.path).map((s) => s.dep);
      if (missing.length && o.install) {
        const cmd = installCommand(missing);
        process.stderr.write(`$ ${cmd}\n`);
        const r = spawnSync('sh', ['-c', cmd], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
        if (r.status !== 0) process.stderr.write(`install failed (exit ${r.status})\n`);
        statuses = checkSystemDeps();
        missing = statuses.filter((s) => !s.path).map((s) => s.dep);
      }
      for (const { dep, path } of statuses) {
        process.stdout.write(`${path ? 'ok     ' : 'MISSING'}  ${dep.name.padEnd(11)} ${path ?? `needed for ${dep.why}: ${installCommand([dep])}`}\n`);
      }
      // Present is not enough for bubblewrap: it needs root or unprivileged user namespaces.
      if (statuses.some((st) => st.dep.name === 'bwrap' && st.path)) {
        const sandbox = Sandbox.detect({ hide: [], log: () => {} });
        process.stdout.write(
          sandbox.enabled
            ? `ok       ${'sandbox'.padEnd(11)} bubblewrap runs: each session gets its own mount namespace\n`
            : `WARNING  ${'sandbox'.padEnd(11)} bubblewrap cannot run here (no root, no unprivileged user namespaces): sessions fall back to a per-session root without a namespace (see README)\n`,
        );
      }
      const nodeMajor = Number(process.versions.node.split('.')[0]);
      process.stdout.write(`${nodeMajor >= 24 ? 'ok     ' : 'MISSING'}  ${'node'.padEnd(11)} ${process.execPath} (v${process.versions.node})${nodeMajor >= 24 ? '' : ': run `npm ci` so node_modules/.bin/node (Node 24) is used'}\n`);
      if (missing.length) {
        process.stdout.write(`\ninstall everything missing with:\n  ${installCommand(missing)}\n`);
        process.exitCode = 1;
      } else if (nodeMajor < 24) process.exitCode = 1;
    });
}

/** Used by tests and scripts that want a client without the CLI's auto-start. */
export { clientFor };
