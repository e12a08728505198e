import { Command, InvalidArgumentError, Option } from 'commander';
import type { ApiKey, CreatedApiKey } from '../../src/api/api-keys.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { age, printFields, printJson, printList } from '../output.js';
import { listPages } from '../paging.js';
import { count } from '../arg-parsers.js';
import { deleteEach } from '../delete-each.js';

function days(value: string): number | null {
  if (value === 'never') return null;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 3650) throw new InvalidArgumentError('expected a whole number of days up to 3650, or "never"');
  return n;
}

function printKey(k: ApiKey): void {
  printFields([
    ['id', k.id],
    ['name', k.name],
    ['masked_key', k.masked_key],
    ['created_at', k.created_at],
    ['created_by', k.created_by.id],
    ['expires_at', k.expires_at ?? 'never'],
    ['deleted_at', k.deleted_at],
    ['project_id', k.project_id],
  ]);
}

const show = (o: { json?: boolean }, k: ApiKey) => (o.json ? printJson(k) : printKey(k));

/** A new key: the plaintext alone on stdout (for a pipe or $(...)), its id on stderr. */
function showCreated(o: { json?: boolean }, k: CreatedApiKey): void {
  if (o.json) return printJson(k);
  process.stdout.write(`${k.key}\n`);
  process.stderr.write(`API key ${k.id} (${k.name}): shown this once, store it now\n`);
}

export function keysCommand(): Command {
  const keys = new Command('keys').description("your organization's API keys (the plaintext is shown once, at create and rotate)");
  covers(keys.command('create'), 'createApiKey')
    .description('create an API key and print it (only this once)')
    .requiredOption('--name <name>', 'a label (1-255 characters; names need not be unique)')
    .option('--days-to-expire <days>', 'lifetime in days (1-3650); default: never expires', days)
    .option('--project-id <id>', 'bind the key to one project')
    .option('--json', 'print the API object, plaintext key included')
    .addHelpText('after', '\nExample:\n  export KERNEL_API_KEY=$(rbrowse keys create --name ci --days-to-expire 30)')
    .action(async (o, cmd: Command) => {
      const body = {
        name: o.name,
        ...(o.daysToExpire !== undefined ? { days_to_expire: o.daysToExpire } : {}),
        ...(o.projectId ? { project_id: o.projectId } : {}),
      };
      showCreated(o, await (await clientFor(cmd)).call('createApiKey', { body }));
    });
  covers(keys.command('list'), 'listApiKeys')
    .alias('ls')
    .description('list API keys, masked (every page, unless --limit or --offset)')
    .addOption(new Option('--status <status>', 'active (not deleted; expired ones included), deleted or all').choices(['active', 'deleted', 'all']))
    .option('--include-deleted', 'deprecated: --status all')
    .option('--name <name>', 'only keys of this name')
    .option('--query <text>', 'keys whose name, creator or project contains this, or whose id or masked key starts with it')
    .addOption(new Option('--sort-by <field>', 'sort field').choices(['created_at', 'name', 'expires_at']))
    .addOption(new Option('--sort-direction <direction>', 'sort direction (default desc)').choices(['asc', 'desc']))
    .option('--limit <n>', 'one page of this size, 1..100', count)
    .option('--offset <n>', 'one page, skipping this many', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print key ids only')
    .addHelpText('after', '\nExample:\n  rbrowse keys list --status all --sort-by name --sort-direction asc')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const filters = {
        ...(o.status ? { status: o.status } : {}),
        ...(o.includeDeleted ? { include_deleted: true } : {}),
        ...(o.name ? { name: o.name } : {}),
        ...(o.query ? { query: o.query } : {}),
        ...(o.sortBy ? { sort_by: o.sortBy } : {}),
        ...(o.sortDirection ? { sort_direction: o.sortDirection } : {}),
      };
      const items = await listPages(o, (page) => client.request('listApiKeys', { query: { ...filters, ...page } }));
      printList(items, o, {
        id: (k) => k.id,
        headers: ['KEY', 'NAME', 'MASKED', 'AGE', 'EXPIRES', 'DELETED'],
        row: (k) => [k.id, k.name, k.masked_key, age(k.created_at), k.expires_at ?? 'never', k.deleted_at ?? ''],
      });
    });
  covers(keys.command('get'), 'getApiKey')
    .description('show one API key, masked')
    .argument('<id>', 'key id')
    .option('--include-deleted', 'find it even when deleted')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse keys get k1a2b3 --json')
    .action(async (id: string, o, cmd: Command) => {
      show(o, await (await clientFor(cmd)).call('getApiKey', { params: { id }, query: o.includeDeleted ? { include_deleted: true } : {} }));
    });
  covers(keys.command('update'), 'updateApiKey')
    .alias('rename')
    .description('rename an API key')
    .argument('<id>', 'key id')
    .requiredOption('--name <name>', 'the new name')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse keys update k1a2b3 --name ci-old')
    .action(async (id: string, o, cmd: Command) => {
      show(o, await (await clientFor(cmd)).call('updateApiKey', { params: { id }, body: { name: o.name } }));
    });
  covers(keys.command('delete'), 'deleteApiKey')
    .alias('rm')
    .description('delete API keys: they stop working at once (a key cannot delete itself)')
    .argument('<ids...>', 'key ids')
    .addHelpText('after', '\nExample:\n  rbrowse keys delete k1a2b3')
    .action(async (ids: string[], _o, cmd: Command) => {
      const client = await clientFor(cmd);
      await deleteEach(ids, (id) => client.call('deleteApiKey', { params: { id } }));
    });
  covers(keys.command('rotate'), 'rotateApiKey')
    .description('a new key in place of this one (printed once); the old one expires after --expire-in-days')
    .argument('<id>', 'key id')
    .option('--expire-in-days <days>', 'grace period of the old key: 0 ends it at once (default 7)', days)
    .option('--days-to-expire <days>', "the new key's lifetime (default: the old key's)", days)
    .option('--json', 'print the API object, plaintext key included')
    .addHelpText(
      'after',
      "\nRotating the CLI's own key (rbrowse auth token) updates the key the CLI uses.\n\nExample:\n  rbrowse keys rotate k1a2b3 --expire-in-days 0",
    )
    .action(async (id: string, o, cmd: Command) => {
      const body = {
        ...(o.expireInDays !== undefined ? { expire_in_days: o.expireInDays } : {}),
        ...(o.daysToExpire !== undefined ? { days_to_expire: o.daysToExpire } : {}),
      };
      showCreated(o, await (await clientFor(cmd)).call('rotateApiKey', { params: { id }, body }));
    });
  return keys;
}
