import { Command, InvalidArgumentError } from 'commander';
import type { ManagedAuth, TimelineEvent } from '../../src/api/auth-connections.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { age, printFields, printJson, printList } from '../output.js';
import { listPages } from '../paging.js';
import { count } from '../arg-parsers.js';
import { deleteEach } from '../delete-each.js';
import { followStream } from '../follow-stream.js';

type StateEvent =
  | { event: 'managed_auth_state'; flow_status: string; flow_step: string; [k: string]: unknown }
  | { event: 'error' | 'sse_heartbeat' };

function show(o: { json?: boolean }, c: ManagedAuth): void {
  if (o.json) return printJson(c);
  printFields([
    ['id', c.id],
    ['domain', c.domain],
    ['profile_name', c.profile_name],
    ['status', c.status],
    ['login_url', c.login_url],
    ['credential', c.credential?.name],
    ['can_reauth', `${c.can_reauth} (${c.can_reauth_reason})`],
    ['health_checks', c.health_checks ? `every ${c.health_check_interval}s` : 'off'],
    ['last_auth_check_at', c.last_auth_check_at],
    ['flow', c.flow_status ? `${c.flow_type} ${c.flow_status} ${c.flow_step}` : undefined],
    ['hosted_url', c.hosted_url],
    ['fields', c.discovered_fields?.map((f) => `${f.name} (${f.type})`).join(', ')],
    ['website_error', c.website_error],
    ['error', c.error_code ? `${c.error_code}: ${c.error_message}` : undefined],
  ]);
}

/** `--field NAME=VALUE`, repeatable. */
function field(raw: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = raw.indexOf('=');
  if (eq < 1) throw new InvalidArgumentError('expected NAME=VALUE');
  return { ...previous, [raw.slice(0, eq)]: raw.slice(eq + 1) };
}

/** The commander options of create and update. */
interface SettingsOptions {
  loginUrl?: string;
  allowedDomain?: string[];
  credential?: string;
  proxy?: string;
  healthChecks?: boolean;
  healthCheckInterval?: number;
  autoReauth?: boolean;
  saveCredentials?: boolean;
  recordSession?: boolean;
}

const settings = (o: SettingsOptions) => ({
  ...(o.loginUrl !== undefined ? { login_url: o.loginUrl } : {}),
  ...(o.allowedDomain ? { allowed_domains: o.allowedDomain } : {}),
  ...(o.credential ? { credential: { name: o.credential } } : {}),
  ...(o.proxy ? { proxy: { name: o.proxy } } : {}),
  ...(o.healthChecks !== undefined ? { health_checks: o.healthChecks } : {}),
  ...(o.healthCheckInterval !== undefined ? { health_check_interval: o.healthCheckInterval } : {}),
  ...(o.autoReauth !== undefined ? { auto_reauth: o.autoReauth } : {}),
  ...(o.saveCredentials !== undefined ? { save_credentials: o.saveCredentials } : {}),
  ...(o.recordSession !== undefined ? { record_session: o.recordSession } : {}),
});

function withSettings(cmd: Command): Command {
  return cmd
    .option('--login-url <url>', 'the login page (default https://DOMAIN/)')
    .option('--allowed-domain <domain>', 'another domain the login passes through (repeat)', (v: string, prev: string[] = []) => [...prev, v])
    .option('--credential <name>', 'a stored credential to fill the form from')
    .option('--proxy <name>', 'a proxy of yours, by name')
    .option('--health-check-interval <seconds>', 'seconds between health checks', count)
    .option('--no-health-checks', 'no periodic health checks')
    .option('--no-auto-reauth', 'a failed health check does not log in again')
    .option('--no-save-credentials', 'do not store what a login submits')
    .option('--record-session', 'record a replay of each login')
    .option('--json', 'print the API object');
}

export function authConnectionsCommand(): Command {
  const connections = new Command('connections').description('managed auth: profiles kept logged into a site');
  withSettings(covers(connections.command('create'), 'createAuthConnection'))
    .description('keep a profile logged into a domain (the profile is made if missing)')
    .requiredOption('--domain <domain>', 'the site, e.g. github.com')
    .requiredOption('--profile-name <name>', 'the profile to keep logged in')
    .addHelpText('after', '\nExample:\n  rbrowse auth connections create --domain github.com --profile-name gh --credential gh')
    .action(async (o, cmd: Command) => {
      show(o, await (await clientFor(cmd)).call('createAuthConnection', { body: { domain: o.domain, profile_name: o.profileName, ...settings(o) } }));
    });
  covers(connections.command('list'), 'listAuthConnections')
    .alias('ls')
    .description('list auth connections (every page, unless --limit or --offset)')
    .option('--domain <domain>', 'only this domain')
    .option('--profile-name <name>', 'only this profile')
    .option('--limit <n>', 'one page of this size, 1..100', count)
    .option('--offset <n>', 'one page, skipping this many', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print connection ids only')
    .addHelpText('after', '\nExample:\n  rbrowse auth connections list --domain github.com')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const items = await listPages(o, (page) =>
        client.request('listAuthConnections', {
          query: { ...(o.domain ? { domain: o.domain } : {}), ...(o.profileName ? { profile_name: o.profileName } : {}), ...page },
        }),
      );
      printList(items, o, {
        id: (c) => c.id,
        headers: ['CONNECTION', 'DOMAIN', 'PROFILE', 'STATUS', 'FLOW'],
        row: (c) => [c.id, c.domain, c.profile_name, c.status, c.flow_status ? `${c.flow_status} ${c.flow_step}` : ''],
      });
    });
  covers(connections.command('get'), 'getAuthConnection')
    .description('show a connection and the state of its login flow')
    .argument('<id>')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse auth connections get ID --json')
    .action(async (id: string, o, cmd: Command) => show(o, await (await clientFor(cmd)).call('getAuthConnection', { params: { id } })));
  withSettings(covers(connections.command('update'), 'updateAuthConnection'))
    .description("change a connection's settings")
    .argument('<id>')
    .addHelpText('after', '\nExample:\n  rbrowse auth connections update ID --health-check-interval 1800')
    .action(async (id: string, o, cmd: Command) => {
      // commander sets the --no-* defaults (true) whether given or not: only what was typed changes.
      const given = Object.fromEntries(Object.entries(o).filter(([k]) => cmd.getOptionValueSource(k) === 'cli'));
      show(o, await (await clientFor(cmd)).call('updateAuthConnection', { params: { id }, body: settings(given) }));
    });
  covers(connections.command('delete'), 'deleteAuthConnection')
    .alias('rm')
    .description('delete connections (a login in progress is canceled; the profile stays)')
    .argument('<ids...>')
    .addHelpText('after', '\nExample:\n  rbrowse auth connections delete ID')
    .action(async (ids: string[], _o, cmd: Command) => {
      const client = await clientFor(cmd);
      await deleteEach(ids, (id) => client.call('deleteAuthConnection', { params: { id } }));
    });
  covers(connections.command('login'), 'loginAuthConnection')
    .description('start a login: prints the live view where a person completes it (a stored credential fills the form itself)')
    .argument('<id>')
    .option('--record-session', 'record a replay of this login')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse auth connections login ID && rbrowse auth connections follow ID')
    .action(async (id: string, o, cmd: Command) => {
      const r = await (await clientFor(cmd)).call('loginAuthConnection', { params: { id }, body: o.recordSession ? { record_session: true } : {} });
      if (o.json) printJson(r);
      else process.stdout.write(`${r.hosted_url}\n`);
    });
  covers(connections.command('handoff'), 'redeemAuthHandoff')
    .description("spend a login's handoff code: prints the hosted URL it leads to (once)")
    .argument('<code>', 'the handoff_code a login answered')
    .addHelpText('after', '\nExample:\n  rbrowse auth connections handoff CODE')
    .action(async (code: string, _o, cmd: Command) => {
      const r = await (await clientFor(cmd)).request('redeemAuthHandoff', { params: { code } });
      process.stdout.write(`${r.headers.location}\n`);
    });
  covers(connections.command('submit'), 'submitAuthConnection')
    .description('fill the login form with these values and submit it')
    .argument('<id>')
    .requiredOption('--field <name=value>', 'a field of the form (repeat)', field)
    .option('--json', 'print the API object ({accepted})')
    .addHelpText('after', '\nExample:\n  rbrowse auth connections submit ID --field username=alice --field password=s3cret')
    .action(async (id: string, o, cmd: Command) => {
      const r = await (await clientFor(cmd)).call('submitAuthConnection', { params: { id }, body: { fields: o.field } });
      if (o.json) printJson(r);
    });
  covers(connections.command('follow'), 'authConnectionEvents')
    .description("follow the login flow's state until it ends")
    .argument('<id>')
    .option('--json', 'print each event as JSON')
    .addHelpText('after', '\nExample:\n  rbrowse auth connections follow ID')
    .action(async (id: string, o, cmd: Command) => {
      const client = await clientFor(cmd);
      const final = await followStream<StateEvent, string>(
        `login of ${id}`,
        {
          url: client.url('authConnectionEvents', { params: { id } }),
          auth: client.authHeaders(),
          // The stream ended early (a daemon stop): the connection says how the flow stands.
          current: async () => {
            const c = await client.call('getAuthConnection', { params: { id } });
            return { event: 'managed_auth_state', flow_status: c.flow_status ?? 'FAILED', flow_step: c.flow_step ?? 'COMPLETED' };
          },
        },
        (e, p) => {
          if (e.event === 'error') throw new Error(`login of ${id}: ${(e as { error?: { message?: string } }).error?.message ?? 'error'}`);
          if (e.event !== 'managed_auth_state') return undefined;
          if (o.json) process.stdout.write(`${JSON.stringify(e)}\n`);
          else p.status(`${e.flow_status} ${e.flow_step}`);
          return e.flow_status === 'IN_PROGRESS' ? undefined : e.flow_status;
        },
        { quiet: o.json, done: (status) => `login ${status}` },
      );
      if (final !== 'SUCCESS') process.exitCode = 1;
    });
  covers(connections.command('timeline'), 'authConnectionTimeline')
    .description('logins, re-auths and health checks, newest first')
    .argument('<id>')
    .option('--limit <n>', 'one page of this size, 1..100', count)
    .option('--offset <n>', 'one page, skipping this many', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print event ids only')
    .addHelpText('after', '\nExample:\n  rbrowse auth connections timeline ID')
    .action(async (id: string, o, cmd: Command) => {
      const client = await clientFor(cmd);
      const items = await listPages(o, (page) => client.request('authConnectionTimeline', { params: { id }, query: page }));
      printList(items as TimelineEvent[], o, {
        id: (e) => e.id,
        headers: ['EVENT', 'TYPE', 'STATUS', 'ERROR', 'AGE'],
        row: (e) => [e.id, e.type, e.status, e.error_code ?? e.website_error ?? '', age(e.timestamp)],
      });
    });
  return connections;
}
