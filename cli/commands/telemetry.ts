import { Command } from 'commander';
import type { TelemetryEnvelope } from '../../src/api/telemetry.js';
import type { OtlpDestination } from '../../src/api/telemetry-destinations.js';
import { header, positiveInt } from '../arg-parsers.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printJson, printList } from '../output.js';
import { followUntilInterrupted } from '../sse.js';

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** One event as a line: time, type, and what matters of its data. */
function line(e: TelemetryEnvelope): string[] {
  const d = (e.event.data ?? {}) as Record<string, unknown>;
  const what = d.operation_id ?? d.text ?? (d.status !== undefined ? `${d.status} ${d.url}` : d.url) ?? d.reason ?? '';
  return [String(e.seq), new Date(e.event.ts / 1000).toISOString(), e.event.type, String(what)];
}

/** `rbrowse telemetry events|stream ID`: a session's telemetry (enable it with create or update --telemetry). */
export function telemetryCommand(): Command {
  const telemetry = new Command('telemetry').description("a session's telemetry events (turned on with create --telemetry)");
  covers(telemetry.command('events'), 'telemetryEvents')
    .description('a page of the events kept, oldest first (the last 5 minutes unless --since)')
    .argument('<id>', 'session id or name')
    .option('--category <name>', 'only this category (repeatable): control, connection, console, network, page, ...', collect)
    .option('--since <time>', 'RFC 3339 time, or a duration ago such as 10m')
    .option('--until <time>', 'RFC 3339 time, or a duration ago')
    .option('--order <asc|desc>', 'oldest or newest first', 'asc')
    .option('--limit <n>', 'events in the page, 1..1000', positiveInt)
    .option('--offset <seq>', "the previous page's X-Next-Offset", positiveInt)
    .option('--json', 'print the {seq, event} envelopes')
    .option('-q, --quiet', 'print seq numbers only')
    .addHelpText('after', '\nExample:\n  rbrowse telemetry events my-session --category network --since 2m')
    .action(async (id: string, o, cmd: Command) => {
      const client = await clientFor(cmd);
      const items = await client.call('telemetryEvents', {
        params: { id },
        query: {
          ...(o.category ? { category: o.category } : {}),
          ...(o.since ? { since: o.since } : {}),
          ...(o.until ? { until: o.until } : {}),
          order: o.order,
          ...(o.limit ? { limit: o.limit } : {}),
          ...(o.offset ? { offset: o.offset } : {}),
        },
      });
      printList(items, o, { id: (e) => String(e.seq), headers: ['SEQ', 'TIME', 'TYPE', 'DETAIL'], row: line });
    });
  covers(telemetry.command('stream'), 'telemetryStream')
    .description('new events as they come, until interrupted or the session ends')
    .argument('<id>', 'session id or name')
    .option('--replay <all>', '`all`: start from the oldest event kept')
    .option('--json', 'print each envelope as a JSON line')
    .addHelpText('after', '\nExample:\n  rbrowse telemetry stream my-session --replay all')
    .action(async (id: string, o, cmd: Command) => {
      const client = await clientFor(cmd);
      const url = new URL(
        `/browsers/${encodeURIComponent(id)}/telemetry/stream${o.replay ? `?replay=${encodeURIComponent(o.replay)}` : ''}`,
        client.baseUrl,
      );
      await followUntilInterrupted<TelemetryEnvelope>(url.href, client.authHeaders(), (e) => {
        console.log(o.json ? JSON.stringify(e) : line(e).join('  '));
      });
    });
  telemetry.addCommand(destinationsCommand());
  return telemetry;
}

/** `rbrowse telemetry destinations ...`: OTLP collectors sessions export their telemetry to. */
function destinationsCommand(): Command {
  const destinations = new Command('destinations').description(
    'OTLP/HTTP collectors a session exports its telemetry to (create --telemetry with export.otlp.destination)',
  );
  covers(destinations.command('list'), 'listTelemetryDestinations')
    .alias('ls')
    .description('list the destinations (header values are never shown)')
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print ids only')
    .addHelpText('after', '\nExample:\n  rbrowse telemetry destinations ls')
    .action(async (o, cmd: Command) => {
      const items = await (await clientFor(cmd)).call('listTelemetryDestinations', { query: { limit: 100 } });
      if (o.json) return printJson(items);
      printList(items, o, {
        id: (d) => d.id,
        headers: ['ID', 'NAME', 'ENDPOINT', 'HEADERS'],
        row: (d) => [d.id, d.name, d.endpoint, Object.keys(d.headers).join(', ')],
      });
    });
  covers(destinations.command('create'), 'createTelemetryDestination')
    .description('add a collector: its base endpoint (/v1/logs is added) and the headers each export sends')
    .argument('<name>', 'unique in the organization')
    .argument('<endpoint>', 'http(s)://host:port of the collector, without /v1/logs')
    .option('--header <header>', "'Name: value' sent with each export, e.g. an ingestion key (repeatable)", header)
    .option('--description <text>', 'what it is for')
    .option('--json', 'print the API object (else its id)')
    .addHelpText('after', "\nExample:\n  rbrowse telemetry destinations create local-otel http://127.0.0.1:4318 --header 'Authorization: Bearer x'")
    .action(async (name: string, endpoint: string, o, cmd: Command) => {
      const body = { name, endpoint, ...(o.header ? { headers: o.header } : {}), ...(o.description ? { description: o.description } : {}) };
      const d = await (await clientFor(cmd)).call('createTelemetryDestination', { body });
      if (o.json) printJson(d);
      else console.log(d.id);
    });
  covers(destinations.command('get'), 'getTelemetryDestination')
    .description('one destination, by id or name')
    .argument('<id>', 'destination id or name')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse telemetry destinations get local-otel')
    .action(async (id: string, o, cmd: Command) =>
      printDestination(await (await clientFor(cmd)).call('getTelemetryDestination', { params: { id } }), o.json),
    );
  covers(destinations.command('update'), 'updateTelemetryDestination')
    .description('change a destination; sessions exporting to it use new headers at once')
    .argument('<id>', 'destination id or name')
    .option('--name <name>', 'a new name')
    .option('--endpoint <url>', 'a new endpoint')
    .option('--description <text>', 'a new description')
    .option('--header <header>', "'Name: value' sets one, 'Name:' removes it (repeatable)", header)
    .option('--json', 'print the API object')
    .addHelpText('after', "\nExample:\n  rbrowse telemetry destinations update local-otel --header 'Authorization: Bearer new-key'")
    .action(async (id: string, o, cmd: Command) => {
      const headers = Object.fromEntries(Object.entries((o.header ?? {}) as Record<string, string>).map(([k, v]) => [k, v === '' ? null : v]));
      const body = {
        ...(o.name ? { name: o.name } : {}),
        ...(o.endpoint ? { endpoint: o.endpoint } : {}),
        ...(o.description !== undefined ? { description: o.description } : {}),
        ...(Object.keys(headers).length ? { headers } : {}),
      };
      printDestination(await (await clientFor(cmd)).call('updateTelemetryDestination', { params: { id }, body }), o.json);
    });
  covers(destinations.command('delete'), 'deleteTelemetryDestination')
    .alias('rm')
    .description('delete a destination (not while a session exports to it)')
    .argument('<id>', 'destination id or name')
    .addHelpText('after', '\nExample:\n  rbrowse telemetry destinations rm local-otel')
    .action(async (id: string, _o, cmd: Command) => void (await (await clientFor(cmd)).call('deleteTelemetryDestination', { params: { id } })));
  return destinations;
}

function printDestination(d: OtlpDestination, json: boolean | undefined): void {
  if (json) return printJson(d);
  console.log(
    `${d.name} (${d.id})\n  endpoint  ${d.endpoint}\n  headers   ${Object.keys(d.headers).join(', ') || '-'}${d.description ? `\n  ${d.description}` : ''}`,
  );
}
