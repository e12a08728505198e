import { gpuRefusal, gpuRenderNodes } from '../../src/gpu.js';
import { authConnectionsCommand } from './auth-connections.js';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { count } from '../arg-parsers.js';
import { baseUrlFor, DEFAULT_HOST, defaultPort } from '../../src/config.js';
import { DEFAULT_STANDBY, parseStandby } from '../../src/standby.js';
import { RbrowseClient } from '../../src/client.js';
import { checkSystemDeps, HEADLESS_SHELL_DEP, installCommand, resolveHeadlessShell } from '../../src/system-deps.js';
import { adminToken, clientFor, localKey } from '../context.js';
import { paths, readDaemonInfo, runningDaemon, stopDaemon } from '../daemon-control.js';
import { printDaemonLog } from '../daemon-logs.js';
import { covers } from '../operations.js';
import { printCheck, printFields, printJson } from '../output.js';
import { animated, startDaemonWithProgress, withProgress } from '../progress.js';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port number');
  return n;
}

function standbySpec(value: string): string {
  try {
    parseStandby(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return value;
}

export function daemonCommand(): Command {
  const daemon = new Command('daemon').description('the local rbrowse daemon');
  daemon
    .command('start')
    .description('start the daemon in the background (no error when it already runs)')
    .option('--port <port>', 'port to listen on (default 7331, or RBROWSE_PORT)', port)
    .option('--host <host>', 'address to listen on', DEFAULT_HOST)
    .option('--foreground', 'run in the foreground, logging to stderr')
    .option(
      '--standby <spec>',
      `browsers kept launched for instant creates: 0 (off), N of each default, or headless|headful[@WxH[@R]][=N],...[,learn=K] (K more kinds learned from creates; default ${DEFAULT_STANDBY}, or RBROWSE_STANDBY)`,
      standbySpec,
    )
    .addHelpText('after', '\nExamples:\n  rbrowse daemon start --port 7331\n  rbrowse daemon start --standby headless=2,headful@1024x768,learn=1')
    .action(async (o) => {
      if (o.foreground) {
        const { runDaemon } = await import('../../daemon/entry.js');
        await runDaemon({ host: o.host, port: o.port, standby: o.standby });
        return;
      }
      const info = await startDaemonWithProgress({ host: o.host, port: o.port, standby: o.standby });
      for (const notice of info.notices ?? []) process.stderr.write(`WARNING: ${notice}\n`);
      process.stdout.write(`${info.base_url}\n`);
    });
  daemon
    .command('stop')
    .description('stop the daemon, closing every session gracefully')
    .addHelpText('after', '\nExample:\n  rbrowse daemon stop')
    .action(async () => {
      const said = (r: { wasRunning: boolean; pid?: number }) => (r.wasRunning ? `stopped daemon (pid ${r.pid})` : 'daemon was not running');
      const result = await withProgress('stopping the daemon (closing every session)', () => stopDaemon(), { done: said });
      // On a terminal the progress line already said it.
      if (!animated()) process.stderr.write(`${said(result)}\n`);
    });
  daemon
    .command('logs')
    .description("print the daemon's log (logs/daemon.log of RBROWSE_HOME)")
    .option('-n, --lines <n>', 'the last n lines (0: all)', count, 50)
    .option('-f, --follow', 'keep printing lines as the daemon writes them')
    .option('--json', 'the JSON lines as written')
    .addHelpText('after', '\nExamples:\n  rbrowse daemon logs -n 200\n  rbrowse daemon logs -f')
    .action(async (o) => {
      const file = paths().daemonLog;
      if (!existsSync(file)) return void process.stderr.write(`no daemon log yet (${file})\n`);
      await printDaemonLog(file, { lines: o.lines, follow: Boolean(o.follow), json: Boolean(o.json) });
    });
  covers(daemon.command('status'), 'health')
    .description('is the daemon running? (asks its /health)')
    .option('--json', 'print {"running", "pid", "base_url"}')
    .addHelpText('after', '\nExit status 3 when it is not running.\n\nExample:\n  rbrowse daemon status --json')
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
  covers(daemon.command('resources'), 'adminResources')
    .description("the daemon's memory, file descriptors, active handles and child processes")
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse daemon resources --json')
    .action(async (o) => {
      const info = await startDaemonWithProgress();
      const r = await new RbrowseClient(info.base_url, adminToken()).call('adminResources', {});
      if (o.json) return printJson(r);
      const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
      const handles = Object.entries(r.resources)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      process.stdout.write(
        `pid ${r.pid}: rss ${mib(r.rss_bytes)}, heap ${mib(r.heap_used_bytes)}, ${r.open_fds} fds, ${r.children} children, ${r.sessions} sessions\nhandles: ${handles}\n`,
      );
    });
  return daemon;
}

export function authCommand(): Command {
  const auth = new Command('auth').description('API keys, and managed auth connections (auth connections)');
  auth.addCommand(authConnectionsCommand());
  auth
    .command('token')
    .description("print the default organization's API key")
    .addHelpText('after', '\nExample:\n  curl -H "Authorization: Bearer $(rbrowse auth token)" http://127.0.0.1:7331/browsers')
    .action(async () => {
      await startDaemonWithProgress();
      process.stdout.write(`${localKey()}\n`);
    });
  covers(auth.command('create-key'), 'createApiKey', 'adminCreateKey')
    .description(
      "print a new API key of your organization (POST /org/api_keys), or with --org of another (made when missing; the local admin token's)",
    )
    .option('--name <name>', 'a label for the key', 'cli')
    .option('--org <name>', 'an organization by name: made when missing (admin)')
    .option('--json', 'print the API object')
    .addHelpText(
      'after',
      '\nSee rbrowse keys for listing, rotating and deleting keys.\n\nExample:\n  rbrowse auth create-key --name ci\n  rbrowse auth create-key --org team-a',
    )
    .action(async (o, cmd: Command) => {
      if (!o.org) {
        const created = await (await clientFor(cmd)).call('createApiKey', { body: { name: o.name } });
        if (o.json) printJson(created);
        else process.stdout.write(`${created.key}\n`);
        return;
      }
      const info = await startDaemonWithProgress();
      const admin = new RbrowseClient(info.base_url, adminToken());
      const created = await admin.call('adminCreateKey', { body: { org: o.org } });
      if (o.json) printJson(created);
      else process.stdout.write(`${created.key}\n`);
    });
  covers(auth.command('context'), 'getAuthContext')
    .description('who the key is: its id, its organization, its project and the project requests act in (--project)')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse auth context --project staging')
    .action(async (o, cmd: Command) => {
      const c = await (await clientFor(cmd)).call('getAuthContext', {});
      if (o.json) return printJson(c);
      printFields([
        ['key', c.principal.id],
        ['organization', c.organization.id],
        ['key project', c.authorization.credential_scope.project_id ?? '(organization-wide)'],
        ['acting in project', c.authorization.effective_scope.project_id ?? '(organization-wide)'],
      ]);
    });
  return auth;
}

export function envCommand(): Command {
  return new Command('env')
    .description('print KERNEL_BASE_URL and KERNEL_API_KEY exports for the Kernel SDKs and CLI')
    .addHelpText('after', '\nExample:\n  eval "$(rbrowse env)"')
    .action(async () => {
      const info = await startDaemonWithProgress();
      process.stdout.write(`export KERNEL_BASE_URL=${info.base_url}\nexport KERNEL_API_KEY=${localKey()}\n`);
    });
}

interface Check {
  name: string;
  state: 'ok' | 'missing' | 'warning';
  /** Where it was found, or what it is needed for. */
  detail: string;
  /** The command or step that fixes it. */
  fix?: string;
}

/**
 * The state file of this RBROWSE_HOME: it parses, or the daemon starts from its last good copy (a
 * warning), or from nothing (missing: the daemon refuses to start). A recovery leaves the
 * unreadable file beside it, and this keeps saying so until it is looked at and removed.
 */
function stateCheck(): Check {
  const { stateFile, home } = paths();
  const parses = (file: string) => {
    try {
      return typeof JSON.parse(readFileSync(file, 'utf8')) === 'object';
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : false;
    }
  };
  const main = parses(stateFile);
  const backup = parses(`${stateFile}.last-good`);
  let kept: string[] = [];
  try {
    kept = readdirSync(home)
      .filter((name) => name.startsWith('state.json.unreadable-'))
      .map((name) => join(home, name));
  } catch {
    // No home yet.
  }
  if (main === false && backup !== true) {
    return {
      name: 'state',
      state: 'missing',
      detail: `${stateFile} does not parse and no last good copy is left: the daemon will not start`,
      fix: `repair it, or move it aside to start with no state: mv ${stateFile} ${stateFile}.broken`,
    };
  }
  if (main === false)
    return {
      name: 'state',
      state: 'warning',
      detail: `${stateFile} does not parse: the next start recovers from its last good copy, as current as the file was`,
    };
  if (kept.length) {
    return {
      name: 'state',
      state: 'warning',
      detail: `recovered from its last good copy once; the unreadable file is kept as ${kept.join(', ')}`,
      fix: `look at it, then remove it: rm ${kept.join(' ')}`,
    };
  }
  return { name: 'state', state: 'ok', detail: main === 'missing' ? `${home} (no state yet)` : stateFile };
}

/** Size as an operator reads it. */
const size = (bytes: number) => (bytes >= 1024 ** 3 ? `${+(bytes / 1024 ** 3).toFixed(1)} GiB` : `${Math.round(bytes / 1024 ** 2)} MiB`);

/**
 * What sessions' boxes can have on this machine: their namespaces (needed), per-session users
 * (a root daemon), a network beyond the host's loopback, Chromium's own sandbox inside, and which
 * of the per-session limits the host lets the daemon enforce.
 */
async function boxChecks(): Promise<Check[]> {
  const { hostSupport } = await import('../../daemon/entry.js');
  const { support, machineBytes: machine, grants } = await hostSupport(paths().home);
  const checks: Check[] = [];
  checks.push(
    support.namespaces.ok
      ? { name: 'namespaces', state: 'ok', detail: 'each session and app runs in namespaces of its own (user, network, IPC, PID, mount)' }
      : { name: 'namespaces', state: 'missing', detail: `sessions cannot start: ${support.namespaces.why}` },
  );
  checks.push(
    support.uids === 'per-box'
      ? { name: 'users', state: 'ok', detail: 'each session and app runs as host users of its own' }
      : {
          name: 'users',
          state: 'warning',
          detail: 'the daemon is not root: sessions run as its uid (in namespaces of their own)',
          fix: 'run the daemon as root (sudo) for a user per session and size-capped disks',
        },
  );
  checks.push(
    support.network.pasta
      ? { name: 'network', state: 'ok', detail: "pasta gives each session its own network, with the host's loopback services as localhost" }
      : { name: 'network', state: 'warning', detail: `sessions reach only the host's loopback: ${support.network.why}` },
  );
  const chromiumOn = process.env.RBROWSE_CHROMIUM_SANDBOX !== 'off';
  checks.push(
    chromiumOn && support.namespaces.ok
      ? { name: 'chromium-sandbox', state: 'ok', detail: "Chromium runs with its own sandbox inside each session's box" }
      : {
          name: 'chromium-sandbox',
          state: 'warning',
          detail: chromiumOn
            ? 'Chromium cannot run with its own sandbox here (no user namespaces)'
            : 'RBROWSE_CHROMIUM_SANDBOX=off: Chromium runs with --no-sandbox',
          ...(chromiumOn ? {} : { fix: 'unset RBROWSE_CHROMIUM_SANDBOX' }),
        },
  );
  // What all boxes together may be granted, and what they are held to.
  checks.push({
    name: 'limits total',
    state: 'ok',
    detail: `boxes may be granted ${size(grants.maxBytes)} of memory limits in all (${Math.floor(grants.maxBytes / support.sessionLimits.memoryBytes)} sessions of ${size(support.sessionLimits.memoryBytes)}; RBROWSE_MEMORY_OVERCOMMIT ${grants.overcommit}), and ${support.limits.memory.enforced ? `are held to ${size(machine)} together` : 'are not held together (no memory controller)'}; more is refused with 429`,
  });
  const limit = support.sessionLimits;
  const values = { memory: size(limit.memoryBytes), pids: `${limit.pids} tasks`, shm: size(limit.shmBytes), disk: size(limit.diskBytes) };
  for (const [name, s] of Object.entries(support.limits) as [keyof typeof values, { enforced: boolean; why?: string }][]) {
    checks.push(
      s.enforced
        ? { name: `limit ${name}`, state: 'ok', detail: `${values[name]} per session (RBROWSE_SESSION_${name.toUpperCase()})` }
        : { name: `limit ${name}`, state: 'warning', detail: `not enforced: ${s.why}` },
    );
  }
  return checks;
}

/** Which build headless sessions run (RBROWSE_HEADLESS_SHELL), and what that build lacks. */
function headlessCheck(): Check {
  try {
    const shell = resolveHeadlessShell();
    return shell
      ? { name: 'headless', state: 'ok', detail: `headless sessions run ${shell} (RBROWSE_HEADLESS_SHELL): no extensions, curl or clipboard there` }
      : {
          name: 'headless',
          state: 'ok',
          detail: 'headless sessions run full Chromium (RBROWSE_HEADLESS_SHELL=on: the headless shell, a third of the CPU a start)',
        };
  } catch (err) {
    return {
      name: 'headless',
      state: 'missing',
      detail: `${(err as Error).message}: the daemon will not start`,
      fix: installCommand([HEADLESS_SHELL_DEP]),
    };
  }
}

/** Whether sessions can have GPU acceleration (`gpu: true`): never needed, so never missing. */
function gpuCheck(): Check {
  const nodes = gpuRenderNodes();
  return {
    name: 'gpu',
    state: 'ok',
    detail: `${nodes.length ? `render nodes ${nodes.join(', ')}` : 'none'}: gpu: true is refused (${gpuRefusal(nodes)})`,
  };
}

/** Everything the daemon needs from this machine, as ✓ / ✗ / ! checks. */
async function doctorChecks(): Promise<Check[]> {
  const checks: Check[] = checkSystemDeps().map(({ dep, path }) =>
    path
      ? { name: dep.name, state: 'ok', detail: path }
      : { name: dep.name, state: 'missing', detail: `needed for ${dep.why}`, fix: installCommand([dep]) },
  );
  checks.push(headlessCheck(), gpuCheck());
  if (checks.some((c) => c.name === 'bwrap' && c.state === 'ok')) checks.push(...(await boxChecks()));
  checks.push(stateCheck());
  const nodeOk = Number(process.versions.node.split('.')[0]) >= 24;
  checks.push({
    name: 'node',
    state: nodeOk ? 'ok' : 'missing',
    detail: `${process.execPath} (v${process.versions.node})`,
    ...(nodeOk ? {} : { fix: 'run rbrowse through its bin/rbrowse, which starts it on its own Node 24' }),
  });
  return checks;
}

const missingDeps = () =>
  checkSystemDeps()
    .filter((st) => !st.path)
    .map((st) => st.dep);

/** apt-get for whatever is missing (through sudo when not root); whether it ran and succeeded, or there was nothing to do. */
function installMissing(): boolean {
  const missing = missingDeps();
  if (!missing.length) return true;
  const cmd = installCommand(missing);
  process.stderr.write(`$ ${cmd}\n`);
  const r = spawnSync('sh', ['-c', cmd], {
    // A terminal stays the input, so that sudo can ask for a password.
    stdio: [process.stdin.isTTY ? 'inherit' : 'ignore', 'inherit', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (r.status !== 0) process.stderr.write(`install failed (exit ${r.status ?? r.signal})\n`);
  return r.status === 0;
}

async function printDoctor(o: { json?: boolean }): Promise<void> {
  const checks = await doctorChecks();
  if (checks.some((c) => c.state === 'missing')) process.exitCode = 1;
  if (o.json) return printJson(checks);
  const width = Math.max(...checks.map((c) => c.name.length));
  for (const c of checks) printCheck(c.state, c.name, c.fix ? `${c.detail}\n${' '.repeat(width + 3)}fix: ${c.fix}` : c.detail, width);
  const missing = missingDeps();
  if (missing.length) process.stdout.write(`\ninstall everything missing with:\n  ${installCommand(missing)}\n  (or: rbrowse setup)\n`);
}

export function doctorCommand(): Command {
  return new Command('doctor')
    .description('check the system packages the daemon needs: a ✓ / ✗ checklist with the fix for each problem')
    .option('--install', 'install what is missing with apt-get (as rbrowse setup does)')
    .option('--json', 'print the checks as [{name, state, detail, fix?}]')
    .addHelpText('after', '\nExit status 1 when something is missing.\n\nExamples:\n  rbrowse doctor\n  rbrowse doctor --json')
    .action(async (o) => {
      if (o.install) installMissing();
      await printDoctor(o);
    });
}

export function setupCommand(): Command {
  return new Command('setup')
    .description(
      'install the system packages the daemon needs (Chromium, Xvfb, bubblewrap, ...) with apt-get, through sudo when not root; then rbrowse doctor',
    )
    .addHelpText('after', '\nExit status 1 when something is still missing.\n\nExample:\n  rbrowse setup')
    .action(async () => {
      if (!installMissing()) process.exitCode = 1;
      await printDoctor({});
      if (!process.exitCode) process.stdout.write('\nready: rbrowse create\n');
    });
}

/** Used by tests and scripts that want a client without the CLI's auto-start. */
export { clientFor };
