import { createWriteStream } from 'node:fs';
import { Command, InvalidArgumentError, Option, type OptionValues } from 'commander';
import type { AuditLogEntry, ListAuditLogsQuery } from '../../src/api/audit-logs.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printList } from '../output.js';
import { count } from '../arg-parsers.js';
import { sinceTime } from '../../daemon/lib/event-log.js';

/** A time as RFC 3339, or a duration ago (30m, 24h, 7d): the parser of the follows' --since. */
function when(value: string): string {
  try {
    return new Date(sinceTime(value)!).toISOString();
  } catch {
    throw new InvalidArgumentError('expected an RFC 3339 time or a duration such as 30m, 24h, 7d');
  }
}

const list = (v: string, prev: string[] = []) => [...prev, v];

/** The filters both commands share, as query fields. */
function filters(o: OptionValues): Omit<ListAuditLogsQuery, 'page_token' | 'limit'> {
  return {
    start: o.start ?? when('24h'),
    end: o.end ?? new Date(Date.now() + 1000).toISOString(),
    ...(o.method ? { method: o.method } : {}),
    ...(o.excludeMethod ? { exclude_method: o.excludeMethod } : {}),
    ...(o.search ? { search: o.search } : {}),
    ...(o.searchUserId ? { search_user_id: o.searchUserId } : {}),
    ...(o.authStrategy ? { auth_strategy: o.authStrategy } : {}),
    ...(o.service ? { service: o.service } : {}),
  };
}

function filterOptions(cmd: Command): Command {
  return cmd
    .option('--start <time>', 'from (inclusive): RFC 3339 or 30m, 24h, 7d ago (default 24h)', when)
    .option('--end <time>', 'until (exclusive; default now)', when)
    .option('--method <method>', 'only this HTTP method')
    .option('--exclude-method <method>', 'leave this method out (repeat)', list)
    .option('--search <text>', 'in the path, key id, email, client IP or status')
    .option('--search-user-id <key-id>', 'also match calls of this key (repeat)', list)
    .option('--auth-strategy <strategy>', 'only this authentication (api_key)')
    .option('--service <name>', 'only this service (api)');
}

export function auditCommand(): Command {
  const audit = new Command('audit').description("your organization's audit log: every state-changing call, newest first");
  covers(filterOptions(audit.command('list')), 'listAuditLogs')
    .alias('ls')
    .description('list calls (all pages up to --limit)')
    .option('--limit <n>', 'at most this many (default 100)', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print entry ids only')
    .addHelpText('after', '\nExample:\n  rbrowse audit list --start 1h --method DELETE')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const want = o.limit ?? 100;
      const items: AuditLogEntry[] = [];
      let token: string | undefined;
      do {
        const res = await client.request('listAuditLogs', {
          query: { ...filters(o), limit: Math.min(100, want - items.length), ...(token ? { page_token: token } : {}) },
        });
        items.push(...res.data);
        token = res.headers['x-next-page-token'] as string | undefined;
      } while (token && items.length < want);
      printList(items, o, {
        id: (e) => e.id,
        headers: ['TIME', 'METHOD', 'PATH', 'STATUS', 'KEY', 'PROJECT'],
        row: (e) => [e.timestamp, e.method, e.path, String(e.status), e.api_key_id, e.project_id],
      });
    });
  covers(filterOptions(audit.command('export')), 'exportAuditLogs')
    .description('write every matching call as JSON lines, chunk by chunk (each checked against its sha256)')
    .requiredOption('-o, --output <file>', 'where to write ("-": standard output)')
    .addOption(new Option('--format <format>', 'jsonl, or gzip-compressed chunks').choices(['jsonl', 'jsonl.gz']).default('jsonl'))
    .option('--limit <n>', 'entries per chunk (up to 50000)', count)
    .option('--json', 'print a summary as JSON ({rows, chunks, bytes}) on stderr')
    .addHelpText('after', '\nExample:\n  rbrowse audit export --start 7d -o audit.jsonl')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const out = o.output === '-' ? process.stdout : createWriteStream(o.output, { mode: 0o600 });
      const { createHash } = await import('node:crypto');
      let cursor: string | undefined;
      const total = { rows: 0, chunks: 0, bytes: 0 };
      for (;;) {
        const res = await client.open('exportAuditLogs', {
          query: { ...filters(o), format: o.format, ...(o.limit ? { limit: o.limit } : {}), ...(cursor ? { cursor } : {}) },
        });
        const body = Buffer.from(await res.arrayBuffer());
        if (createHash('sha256').update(body).digest('hex') !== res.headers.get('x-content-sha256'))
          throw new Error('a chunk did not match its X-Content-Sha256');
        await new Promise<void>((resolve, reject) => out.write(body, (err) => (err ? reject(err) : resolve())));
        total.rows += Number(res.headers.get('x-row-count'));
        total.chunks++;
        total.bytes += body.length;
        cursor = res.headers.get('x-has-more') === 'true' ? (res.headers.get('x-next-cursor') ?? undefined) : undefined;
        if (!cursor) break;
      }
      if (out !== process.stdout) await new Promise<void>((resolve) => (out as NodeJS.WritableStream).end(resolve));
      const summary = o.json ? JSON.stringify(total) : `${total.rows} entries in ${total.chunks} chunk(s), ${total.bytes} bytes`;
      process.stderr.write(`${summary}\n`);
    });
  return audit;
}
