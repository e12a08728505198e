import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { INVOCATION_STATUSES, type Invocation } from '../../src/api/invocations.js';
import type { RbrowseClient } from '../../src/client.js';
import { clientFor } from '../context.js';
import { followStream } from '../follow-stream.js';
import { covers } from '../operations.js';
import { age, printFields, printJson, printList } from '../output.js';
import { listPages } from '../paging.js';
import { animated, withProgress, type Progress } from '../progress.js';
import { printSession } from './browsers.js';
import { count, seconds } from '../arg-parsers.js';

const EXIT_CANCELLED = 130;

function json(value: string): string {
  try {
    JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('expected JSON, e.g. \'{"a":1}\'');
  }
  return value;
}

/** -p JSON or -f FILE (`-` reads stdin); the payload travels as a JSON string. */
function payloadOf(o: { payload?: string; payloadFile?: string }): string | undefined {
  if (o.payloadFile === undefined) return o.payload;
  const text = readFileSync(o.payloadFile === '-' ? 0 : o.payloadFile, 'utf8');
  try {
    return json(text.trim());
  } catch {
    throw new Error(`${o.payloadFile} does not hold JSON`);
  }
}

function printInvocation(i: Invocation): void {
  printFields([
    ['id', i.id],
    ['app', `${i.app_name}@${i.version}`],
    ['action', i.action_name],
    ['status', i.status],
    ['status_reason', i.status_reason],
    ['payload', i.payload],
    ['output', i.output],
    ['started_at', i.started_at],
    ['finished_at', i.finished_at],
  ]);
}

const show = (o: { json?: boolean }, i: Invocation) => (o.json ? printJson(i) : printInvocation(i));
const isFinal = (i: Pick<Invocation, 'status'>) => i.status === 'succeeded' || i.status === 'failed';

/** The events of GET /invocations/{id}/events (heartbeats and others are passed over). */
type InvocationEvent =
  | { event: 'log'; message: string }
  | { event: 'invocation_state'; invocation: Invocation }
  | { event: 'error'; error: { message: string } }
  | { event: 'sse_heartbeat' };

const outcome = (i: Invocation) => `invocation ${i.id} ${i.status}${i.status_reason ? `: ${i.status_reason}` : ''}`;

/**
 * Follows an invocation's events until it ends, with a spinner on a terminal unless `quiet`;
 * `onEvent` shows each event. Answers the final invocation; a failed one throws its outcome
 * unless `keepFailed` (the caller prints the object and exits 1 itself).
 */
async function follow(
  client: RbrowseClient,
  id: string,
  opts: { since?: string; quiet?: boolean; keepFailed?: boolean },
  onEvent: (e: InvocationEvent, p: Progress) => void,
): Promise<Invocation> {
  return followStream<InvocationEvent, Invocation>(
    `invocation ${id}`,
    {
      url: client.url('invocationEvents', { params: { id }, query: opts.since ? { since: opts.since } : {} }),
      auth: client.authHeaders(),
      current: async () => ({ event: 'invocation_state', invocation: await client.call('getInvocation', { params: { id } }) }),
    },
    (event, p) => {
      onEvent(event, p);
      if (event.event !== 'invocation_state' || !isFinal(event.invocation)) return undefined;
      if (event.invocation.status === 'failed' && !opts.keepFailed) throw new Error(outcome(event.invocation));
      return event.invocation;
    },
    { quiet: opts.quiet, done: outcome },
  );
}

/**
 * Ctrl-C cancels the invocation: PATCH failed stops its action and ends its browsers. Before the
 * id is known (a sync call still waiting), the invocation is found among the running ones of that
 * action started since the call, when exactly one matches.
 */
function cancelOnInterrupt(client: RbrowseClient, target: { id?: string; app: string; action: string; since: string }): () => void {
  let cancelling = false;
  const onSigint = async () => {
    if (cancelling) return;
    cancelling = true;
    process.stderr.write('\ncancelling...\n');
    try {
      let id = target.id;
      if (!id) {
        const running = await client.call('listInvocations', {
          query: { app_name: target.app, action_name: target.action, since: target.since, limit: 100 },
        });
        const candidates = running.filter((i) => !isFinal(i));
        if (candidates.length !== 1) throw new Error('could not tell which invocation to cancel; use rbrowse invocations update ID --status failed');
        id = candidates[0]!.id;
      }
      await client.call('updateInvocation', { params: { id }, body: { status: 'failed' } });
      process.stderr.write(`invocation ${id}: failed (cancelled)\n`);
    } catch (err) {
      process.stderr.write(`error: ${(err as Error).message}\n`);
    }
    process.exit(EXIT_CANCELLED);
  };
  // `on`, not `once`: the progress display's signal-exit kills the process at once when only its own listeners are left.
  process.on('SIGINT', onSigint);
  return () => process.off('SIGINT', onSigint);
}

/** `rbrowse invoke <app> <action>`: runs an action, follows its logs, prints its output. */
export function invokeCommand(): Command {
  const cmd = new Command('invoke')
    .description('invoke an action of a deployed app, follow its logs and print its output (stdout); Ctrl-C cancels it')
    .argument('<app>', 'app name')
    .argument('<action>', 'action name')
    .option('-p, --payload <json>', 'the payload, JSON', json)
    .option('-f, --payload-file <file>', 'read the payload from a file (- for stdin)')
    .option('--version <label>', 'app version', 'latest')
    .option('--no-async', 'one call that waits for the end (up to 100 s); else queued and followed')
    .addOption(new Option('--sync').hideHelp())
    .option('--async-timeout-seconds <seconds>', 'fail the invocation after this long, 10..3600 (default 900)', seconds)
    .addOption(new Option('--async-timeout <seconds>').argParser(seconds).hideHelp())
    .option('--json', 'print the final invocation object instead of the output')
    .addHelpText(
      'after',
      '\nExamples:\n  rbrowse invoke sample echo -p \'{"a":1}\' --no-async\n  rbrowse invoke my-app scrape -f payload.json --async-timeout-seconds 600',
    )
    .action(async (app: string, action: string, o, command: Command) => {
      if (o.payload !== undefined && o.payloadFile !== undefined) command.error('error: give --payload or --payload-file, not both');
      const payload = payloadOf(o);
      const timeout = o.asyncTimeoutSeconds ?? o.asyncTimeout;
      // On a terminal the progress display shows the logs; otherwise they go to stderr, so stdout keeps only the result.
      const shown = animated() && !o.json;
      const line = (p: Progress, text: string) => (shown ? p.log(text) : void process.stderr.write(`${text}\n`));
      const client = await clientFor(command);
      const target: { id?: string; app: string; action: string; since: string } = { app, action, since: new Date(Date.now() - 1000).toISOString() };
      const stopCancel = cancelOnInterrupt(client, target);
      try {
        const created = await withProgress(
          `invoking ${app} ${action}`,
          async (p) => {
            const i = await client.call('createInvocation', {
              body: {
                app_name: app,
                version: o.version,
                action_name: action,
                ...(payload !== undefined ? { payload } : {}),
                async: o.async !== false && !o.sync,
                ...(timeout !== undefined ? { async_timeout_seconds: timeout } : {}),
              },
            });
            target.id = i.id;
            if (!shown) line(p, `invocation ${i.id}: ${i.status}`);
            return i;
          },
          { quiet: !shown, done: (i) => `invocation ${i.id}: ${i.status}` },
        );
        // Sync or not, the stream replays the logs and ends at (or waits for) the terminal state.
        const final = await follow(client, created.id, { quiet: !shown, keepFailed: o.json }, (e, p) => {
          if (e.event === 'log') line(p, e.message);
          else if (e.event === 'error') line(p, `error: ${e.error.message}`);
          else if (e.event === 'invocation_state') {
            if (shown) p.status(`invocation ${e.invocation.id}: ${e.invocation.status}`);
            else line(p, `invocation ${e.invocation.id}: ${e.invocation.status}`);
          }
        });
        if (o.json) printJson(final);
        else if (final.output !== undefined) printJson(parsedOutput(final.output));
        if (final.status === 'failed') {
          process.stderr.write(`error: ${outcome(final)}\n`);
          process.exitCode = 1;
        }
      } finally {
        stopCancel();
      }
    });
  return covers(cmd, 'createInvocation', 'invocationEvents');
}

function parsedOutput(output: string): unknown {
  try {
    return JSON.parse(output);
  } catch {
    return output;
  }
}

export function invocationsCommand(): Command {
  const invocations = new Command('invocations').description('invocations of app actions');
  covers(invocations.command('get'), 'getInvocation')
    .description('show one invocation')
    .argument('<id>', 'invocation id')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse invocations get k0ahd3fvbqzs5lqgtjfnh4ke --json')
    .action(async (id: string, o, cmd: Command) => show(o, await (await clientFor(cmd)).call('getInvocation', { params: { id } })));
  covers(invocations.command('list'), 'listInvocations')
    .alias('ls')
    .description('list invocations, newest first (every page, unless --limit or --offset)')
    .option('--app-name <name>', 'of this app')
    .addOption(new Option('--app <name>').hideHelp())
    .option('--action-name <name>', 'of this action')
    .addOption(new Option('--action <name>').hideHelp())
    .option('--version <label>', 'of this app version')
    .addOption(new Option('--status <status>', 'in this status').choices(INVOCATION_STATUSES))
    .option('--deployment-id <id>', 'of this deployment')
    .option('--query <text>', 'whose id, app or action name contains this')
    .option('--since <time>', 'started since: an RFC 3339 time or a duration such as 5m')
    .option('--limit <n>', 'one page of this size, 1..100', count)
    .option('--offset <n>', 'one page, skipping this many', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print invocation ids only')
    .addHelpText('after', '\nExample:\n  rbrowse invocations list --app-name sample --status failed --since 1h')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const filters = {
        app_name: o.appName ?? o.app,
        action_name: o.actionName ?? o.action,
        version: o.version,
        status: o.status,
        deployment_id: o.deploymentId,
        query: o.query,
        since: o.since,
      };
      const items = await listPages(o, (page) => client.request('listInvocations', { query: { ...filters, ...page } }));
      printList(items, o, {
        id: (i) => i.id,
        headers: ['INVOCATION', 'APP', 'VERSION', 'ACTION', 'STATUS', 'AGE'],
        row: (i) => [i.id, i.app_name, i.version, i.action_name, i.status, age(i.started_at)],
      });
    });
  covers(invocations.command('update'), 'updateInvocation')
    .description('set the final status: a running action is stopped (failed also ends its browsers)')
    .argument('<id>', 'invocation id')
    .addOption(new Option('--status <status>', 'the final status').choices(['succeeded', 'failed']).makeOptionMandatory())
    .option('--output <json>', 'the output, JSON', json)
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse invocations update k0ahd3fvbqzs5lqgtjfnh4ke --status failed')
    .action(async (id: string, o, cmd: Command) => {
      const body = { status: o.status, ...(o.output !== undefined ? { output: o.output } : {}) };
      show(o, await (await clientFor(cmd)).call('updateInvocation', { params: { id }, body }));
    });
  covers(invocations.command('browsers'), 'listInvocationBrowsers')
    .description('the active browser sessions of an invocation')
    .argument('<id>', 'invocation id')
    .option('--json', 'print the sessions, as a JSON array')
    .option('-q, --quiet', 'print session ids only')
    .addHelpText('after', '\nExample:\n  rbrowse invocations browsers k0ahd3fvbqzs5lqgtjfnh4ke -q | xargs rbrowse rm')
    .action(async (id: string, o, cmd: Command) => {
      const { browsers } = await (await clientFor(cmd)).call('listInvocationBrowsers', { params: { id } });
      if (o.json) return printJson(browsers);
      if (o.quiet) return void process.stdout.write(browsers.map((b) => `${b.session_id}\n`).join(''));
      browsers.forEach((b, i) => {
        if (i) process.stdout.write('\n');
        printSession(b);
      });
    });
  covers(invocations.command('delete-browsers'), 'deleteInvocationBrowsers')
    .description('end every browser session of an invocation')
    .argument('<id>', 'invocation id')
    .addHelpText('after', '\nExample:\n  rbrowse invocations delete-browsers k0ahd3fvbqzs5lqgtjfnh4ke')
    .action(async (id: string, _o, cmd: Command) => {
      await (await clientFor(cmd)).call('deleteInvocationBrowsers', { params: { id } });
      process.stdout.write(`${id}\n`);
    });
  covers(invocations.command('events'), 'invocationEvents')
    .description("follow an invocation's events until it ends: logs, state changes, errors")
    .argument('<id>', 'invocation id')
    .option('--since <time>', 'log lines since: an RFC 3339 time or a duration such as 5m')
    .option('--json', 'print each event as a JSON line')
    .addHelpText('after', '\nExample:\n  rbrowse invocations events k0ahd3fvbqzs5lqgtjfnh4ke --since 5m')
    .action(async (id: string, o, cmd: Command) => {
      const client = await clientFor(cmd);
      const final = await follow(client, id, { since: o.since, quiet: o.json, keepFailed: o.json }, (e, p) => {
        const text = o.json ? JSON.stringify(e) : eventLine(e);
        if (text !== undefined) p.log(text);
        if (e.event === 'invocation_state') p.status(`invocation ${id}: ${e.invocation.status}`);
      });
      if (final.status === 'failed') process.exitCode = 1;
    });
  return invocations;
}

function eventLine(e: InvocationEvent): string | undefined {
  switch (e.event) {
    case 'log':
      return e.message;
    case 'invocation_state':
      return `[${e.invocation.status}]${e.invocation.status_reason ? ` ${e.invocation.status_reason}` : ''}`;
    case 'error':
      return `[error] ${e.error.message}`;
    default:
      return undefined;
  }
}
