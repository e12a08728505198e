import { createWriteStream } from 'node:fs';
import { Command, InvalidArgumentError, Option, type OptionValues } from 'commander';
import type { AuditLogExportDestination } from '../../src/api/audit-export-destinations.js';
import type { AuditLogEntry, ListAuditLogsQuery } from '../../src/api/audit-logs.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printJson, printList } from '../output.js';
import { count } from '../arg-parsers.js';
import { sinceTime } from '../../src/since-time.js';

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
  audit.addCommand(destinationsCommand());
  return audit;
}

/** `rbrowse audit destinations ...`: S3 buckets the audit log is delivered to, continuously. */
function destinationsCommand(): Command {
  const destinations = new Command('destinations').description('deliver the audit log to an S3 bucket, through a role rbrowse assumes');
  const show = (d: AuditLogExportDestination) => {
    console.log(`${d.id}  s3://${d.bucket}/${d.prefix}  ${d.region}  ${d.status}`);
    console.log(`  trust policy: allow ${d.kernel_role_arn} to assume ${d.role_arn} with sts:ExternalId ${d.external_id}`);
    if (d.last_error) console.log(`  last error (${d.last_error_at}): ${d.last_error}`);
  };
  covers(destinations.command('create'), 'createAuditLogExportDestination')
    .description("start delivering (events from now on) to a bucket; then allow kernel_role_arn in the role's trust policy")
    .requiredOption('--bucket <name>', 'the S3 bucket')
    .requiredOption('--region <region>', "the bucket's region")
    .requiredOption('--role-arn <arn>', 'the role rbrowse assumes to write')
    .option('--prefix <prefix>', 'object keys start with it', '')
    .option('--kms-key-id <key>', 'encrypt with this KMS key (SSE-KMS)')
    .addOption(new Option('--type <type>', 'where to').choices(['s3']).default('s3'))
    .addOption(new Option('--format <format>', 'object format').choices(['jsonl.gz']).default('jsonl.gz'))
    .option('--json', 'print the API object')
    .addHelpText(
      'after',
      '\nExample:\n  rbrowse audit destinations create --bucket audit-logs --region us-east-1 --role-arn arn:aws:iam::123456789012:role/rbrowse-audit',
    )
    .action(async (o, cmd: Command) => {
      const body = {
        type: o.type,
        format: o.format,
        bucket: o.bucket,
        region: o.region,
        role_arn: o.roleArn,
        prefix: o.prefix,
        ...(o.kmsKeyId ? { kms_key_id: o.kmsKeyId } : {}),
      };
      const d = await (await clientFor(cmd)).call('createAuditLogExportDestination', { body });
      if (o.json) return printJson(d);
      show(d);
    });
  covers(destinations.command('list'), 'listAuditLogExportDestinations')
    .alias('ls')
    .description("the organization's destinations and how delivery stands")
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print ids only')
    .addHelpText('after', '\nExample:\n  rbrowse audit destinations ls')
    .action(async (o, cmd: Command) => {
      const items = await (await clientFor(cmd)).call('listAuditLogExportDestinations', { query: { limit: 100 } });
      if (o.json) return printJson(items);
      printList(items, o, {
        id: (d) => d.id,
        headers: ['ID', 'BUCKET', 'PREFIX', 'STATUS', 'LAST SUCCESS', 'FAILURES'],
        row: (d) => [d.id, d.bucket, d.prefix, d.status, d.last_success_at ?? '', String(d.consecutive_failures)],
      });
    });
  covers(destinations.command('get'), 'getAuditLogExportDestination')
    .description('one destination, with its trust-policy details and last error')
    .argument('<id>', 'destination id')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse audit destinations get <id> --json')
    .action(async (id: string, o, cmd: Command) => {
      const d = await (await clientFor(cmd)).call('getAuditLogExportDestination', { params: { id } });
      if (o.json) return printJson(d);
      show(d);
    });
  covers(destinations.command('update'), 'updateAuditLogExportDestination')
    .description('change a destination, or pause and resume it (events while paused are never delivered)')
    .argument('<id>', 'destination id')
    .option('--bucket <name>', 'the S3 bucket')
    .option('--region <region>', "the bucket's region")
    .option('--role-arn <arn>', 'the role rbrowse assumes')
    .option('--prefix <prefix>', 'object keys start with it')
    .option('--kms-key-id <key>', 'KMS key ("" removes it)')
    .addOption(new Option('--status <status>', 'pause or resume').choices(['active', 'paused']))
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse audit destinations update <id> --status paused')
    .action(async (id: string, o, cmd: Command) => {
      const body = {
        ...(o.bucket !== undefined ? { bucket: o.bucket } : {}),
        ...(o.region !== undefined ? { region: o.region } : {}),
        ...(o.roleArn !== undefined ? { role_arn: o.roleArn } : {}),
        ...(o.prefix !== undefined ? { prefix: o.prefix } : {}),
        ...(o.kmsKeyId !== undefined ? { kms_key_id: o.kmsKeyId } : {}),
        ...(o.status !== undefined ? { status: o.status } : {}),
      };
      const d = await (await clientFor(cmd)).call('updateAuditLogExportDestination', { params: { id }, body });
      if (o.json) return printJson(d);
      show(d);
    });
  covers(destinations.command('delete'), 'deleteAuditLogExportDestination')
    .alias('rm')
    .description('stop delivering and forget the destination')
    .argument('<id>', 'destination id')
    .addHelpText('after', '\nExample:\n  rbrowse audit destinations rm <id>')
    .action(async (id: string, _o, cmd: Command) => {
      await (await clientFor(cmd)).call('deleteAuditLogExportDestination', { params: { id } });
    });
  covers(destinations.command('test'), 'testAuditLogExportDestination')
    .description('assume the role and write a test object now; exit 1 with the stage that failed')
    .argument('<id>', 'destination id')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse audit destinations test <id>')
    .action(async (id: string, o, cmd: Command) => {
      const r = await (await clientFor(cmd)).call('testAuditLogExportDestination', { params: { id } });
      if (o.json) printJson(r);
      else console.log(r.success ? 'ok: the role was assumed and a test object written' : `failed at ${r.stage}: ${r.error?.message}`);
      if (!r.success) process.exitCode = 1;
    });
  return destinations;
}
