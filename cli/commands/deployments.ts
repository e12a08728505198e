import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { App, Deployment } from '../../src/api/deployments.js';
import type { RbrowseClient } from '../../src/client.js';
import { appFiles, zipFiles } from '../app-zip.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { age, printFields, printJson, printList } from '../output.js';
import { listPages } from '../paging.js';
import { followStream } from '../follow-stream.js';
import { animated, formatBytes, withProgress } from '../progress.js';
import { count } from '../arg-parsers.js';
import { deleteEach } from '../delete-each.js';

function envPair(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError('expected KEY=VALUE');
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

function printDeployment(d: Deployment): void {
  printFields([
    ['id', d.id],
    ['status', d.status],
    ['status_reason', d.status_reason],
    ['apps', d.app_names.join(', ')],
    ['version', d.version],
    ['entrypoint', d.entrypoint_rel_path],
    ['env_vars', Object.keys(d.env_vars).join(', ')],
    ['sha256', d.source_checksum],
    ['created_at', d.created_at],
    ['updated_at', d.updated_at],
  ]);
}

const isSettled = (d: Pick<Deployment, 'status'>) => d.status === 'running' || d.status === 'failed' || d.status === 'stopped';
const failed = (d: Deployment) => d.status === 'failed' || d.status === 'stopped';

function outcome(d: Deployment): string {
  if (d.status === 'running') return `deployment ${d.id} running: ${d.app_names.join(', ')} (version ${d.version})`;
  return `deployment ${d.id} ${d.status}${d.status_reason ? `: ${d.status_reason}` : ''}`;
}

/** The events of GET /deployments/{id}/events the CLI shows (heartbeats and others are passed over). */
type DeploymentEvent =
  | { event: 'log'; message: string }
  | { event: 'app_version_summary'; app_name: string; version: string; actions: { name: string }[] }
  | { event: 'error'; error: { message: string } }
  | { event: 'deployment_state'; deployment: Deployment }
  | { event: 'sse_heartbeat' };

/**
 * Follows a deployment's event stream until it settles: its build log and app summaries as lines
 * (on stderr with --json, whose stdout is the object), its state beside a spinner on a terminal.
 * A failed or stopped deployment is an error (exit 1, its reason printed); with --json its object
 * is printed all the same. On anything but a terminal the outcome ends the output as a line.
 */
async function followDeployment(client: RbrowseClient, id: string, o: { json?: boolean; since?: string }): Promise<void> {
  const d = await followStream<DeploymentEvent, Deployment>(
    `deployment ${id}`,
    {
      url: client.url('followDeployment', { params: { id }, query: o.since ? { since: o.since } : {} }),
      auth: client.authHeaders(),
      current: async () => ({ event: 'deployment_state', deployment: await client.call('getDeployment', { params: { id } }) }),
    },
    (event, p) => {
      const log = (line: string) => (o.json ? void process.stderr.write(`${line}\n`) : p.log(line));
      if (event.event === 'log') log(event.message);
      else if (event.event === 'app_version_summary') {
        log(`app ${event.app_name} (version ${event.version}): ${event.actions.map((a) => a.name).join(', ')}`);
      } else if (event.event === 'error') log(`error: ${event.error.message}`);
      else if (event.event === 'deployment_state') {
        p.status(`deployment ${id}: ${event.deployment.status}`);
        if (!isSettled(event.deployment)) return undefined;
        if (failed(event.deployment) && !o.json) throw new Error(outcome(event.deployment));
        return event.deployment;
      }
      return undefined;
    },
    { quiet: o.json, done: outcome },
  );
  if (o.json) printJson(d);
  else if (!animated()) process.stdout.write(`${outcome(d)}\n`);
  if (failed(d)) process.exitCode = 1;
}

export function deployCommand(): Command {
  const cmd = new Command('deploy')
    .description("deploy an app: zips the entrypoint's directory (honouring .gitignore), uploads it and follows the build")
    .argument('<entrypoint>', "the app's entrypoint file, e.g. index.ts; its directory is the app")
    .option('--version <label>', 'version label (default latest); a deploy of the same app and version replaces the old one')
    .option('--env-var <KEY=VALUE>', 'an environment variable of the app (repeatable)', envPair)
    .addOption(new Option('--env <KEY=VALUE>').argParser(envPair).hideHelp())
    .option('--env-file <file>', 'environment variables from a dotenv file (--env-var wins)')
    .option('--no-follow', 'answer once uploaded instead of following the build')
    .option('--json', 'print the deployment object, without the progress display')
    .addHelpText(
      'after',
      '\nExamples:\n  rbrowse deploy ./my-app/index.ts --env-var API_TOKEN=secret\n  rbrowse deploy index.ts --version 1.2.0 --env-file .env',
    );
  cmd.action(async (entrypoint: string, o, command: Command) => {
    const path = resolve(entrypoint);
    if (!existsSync(path) || !statSync(path).isFile()) command.error(`error: ${entrypoint} is not a file`);
    const root = dirname(path);
    const { files, skippedLinks } = await appFiles(root);
    if (!files.includes(basename(path))) command.error(`error: ${entrypoint} is excluded by a .gitignore`);
    for (const link of skippedLinks) process.stderr.write(`skipping symbolic link ${link}\n`);
    const fromFile = o.envFile ? (parseEnv(readFileSync(o.envFile, 'utf8')) as Record<string, string>) : {};
    const env_vars = { ...fromFile, ...o.env, ...o.envVar };
    const zip = await zipFiles(root, files);
    const client = await clientFor(command);
    const created = await withProgress(
      `uploading ${basename(root)} (${files.length} files, ${formatBytes(zip.length)})`,
      async (p) => {
        const d = await client.call('createDeployment', {
          body: {
            file: new File([new Uint8Array(zip)], 'app.zip', { type: 'application/zip' }),
            entrypoint_rel_path: basename(path),
            ...(o.version ? { version: o.version } : {}),
            ...(Object.keys(env_vars).length ? { env_vars } : {}),
          },
        });
        // A terminal shows it as the done line.
        if (!o.json && !animated()) p.log(`deployment ${d.id} ${d.status}`);
        return d;
      },
      { quiet: o.json, done: (d) => `deployment ${d.id} ${d.status}` },
    );
    if (o.follow) await followDeployment(client, created.id, o);
    else if (o.json) printJson(created);
  });
  return covers(cmd, 'createDeployment', 'followDeployment');
}

const limitOption = () => new Option('--limit <n>', 'one page of this size, 1..100').argParser(count);
const offsetOption = () => new Option('--offset <n>', 'one page, skipping this many').argParser(count);

export function deploymentsCommand(): Command {
  const deployments = new Command('deployments').description('deployed app code: list, inspect, follow and stop deployments');
  covers(deployments.command('list'), 'listDeployments')
    .alias('ls')
    .description('list deployments, newest first (every page, unless --limit or --offset)')
    .option('--app-name <name>', 'only deployments of this app')
    .option('--app-version <label>', 'with --app-name: only this version label')
    .option('--query <text>', 'a deployment id, or part of an app name')
    .addOption(limitOption())
    .addOption(offsetOption())
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print deployment ids only')
    .addHelpText(
      'after',
      '\nExamples:\n  rbrowse deployments ls --app-name my-app\n  rbrowse deployments ls -q --app-name my-app | xargs rbrowse deployments rm',
    )
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const filters = { app_name: o.appName, app_version: o.appVersion, query: o.query };
      const items = await listPages(o, (page) => client.request('listDeployments', { query: { ...filters, ...page } }));
      printList(items, o, {
        id: (d) => d.id,
        headers: ['DEPLOYMENT', 'STATUS', 'APPS', 'VERSION', 'ENTRYPOINT', 'AGE', 'REASON'],
        row: (d) => [d.id, d.status, d.app_names.join(','), d.version, d.entrypoint_rel_path, age(d.created_at), d.status_reason ?? ''],
      });
    });
  covers(deployments.command('get'), 'getDeployment')
    .description('show one deployment')
    .argument('<id>', 'deployment id')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse deployments get k0ahd3fvbqzs5lqgtjfnh4ke --json')
    .action(async (id: string, o, cmd: Command) => {
      const d = await (await clientFor(cmd)).call('getDeployment', { params: { id } });
      if (o.json) printJson(d);
      else printDeployment(d);
    });
  covers(deployments.command('events'), 'followDeployment')
    .alias('follow')
    .description("print a deployment's build log and states, following it until it settles")
    .argument('<id>', 'deployment id')
    .option('--since <when>', 'only log lines since this RFC 3339 time or duration ago (5m, 1h)')
    .option('--json', 'print the final deployment object (the log goes to stderr), without the progress display')
    .addHelpText('after', '\nExample:\n  rbrowse deployments events k0ahd3fvbqzs5lqgtjfnh4ke --since 5m')
    .action(async (id: string, o, cmd: Command) => followDeployment(await clientFor(cmd), id, o));
  covers(deployments.command('delete'), 'deleteDeployment')
    .alias('rm')
    .description('stop deployments (a build in progress is cancelled)')
    .argument('<ids...>', 'deployment ids')
    .addHelpText('after', '\nExample:\n  rbrowse deployments rm k0ahd3fvbqzs5lqgtjfnh4ke')
    .action(async (ids: string[], _o, cmd: Command) => {
      const client = await clientFor(cmd);
      await deleteEach(ids, (id) => client.call('deleteDeployment', { params: { id } }));
    });
  return deployments;
}

export function appsCommand(): Command {
  const apps = new Command('apps').description('apps of running deployments');
  covers(apps.command('list'), 'listApps')
    .alias('ls')
    .description('list app versions and their actions (every page, unless --limit or --offset)')
    .option('--app-name <name>', 'only this app')
    .option('--version <label>', 'only this version label')
    .option('--query <text>', 'an app version id, or part of an app name')
    .addOption(limitOption())
    .addOption(offsetOption())
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print app version ids only')
    .addHelpText('after', '\nExample:\n  rbrowse apps list --app-name my-app --version latest')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const filters = { app_name: o.appName, version: o.version, query: o.query };
      const items: App[] = await listPages(o, (page) => client.request('listApps', { query: { ...filters, ...page } }));
      printList(items, o, {
        id: (a) => a.id,
        headers: ['APP', 'VERSION', 'ACTIONS', 'DEPLOYMENT'],
        row: (a) => [a.app_name, a.version, a.actions.map((x) => x.name).join(', '), a.deployment],
      });
    });
  return apps;
}
