import { Command } from 'commander';
import type { TelemetryEnvelope } from '../../src/api/telemetry.js';
import { positiveInt } from '../arg-parsers.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printList } from '../output.js';
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
  return telemetry;
}
