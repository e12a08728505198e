import { Command, InvalidArgumentError } from 'commander';
import { text } from 'node:stream/consumers';
import type { Credential } from '../../src/api/credentials.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { age, printFields, printJson, printList } from '../output.js';
import { listPages } from '../paging.js';
import { count, deleteEach } from './browsers.js';

/** `--value KEY=VALUE`, repeatable. */
function value(raw: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = raw.indexOf('=');
  if (eq < 1) throw new InvalidArgumentError('expected KEY=VALUE');
  return { ...previous, [raw.slice(0, eq)]: raw.slice(eq + 1) };
}

/** Values from --value and, with --values-stdin, a JSON object on standard input (kept out of shell history and ps). */
async function values(o: { value?: Record<string, string>; valuesStdin?: boolean }): Promise<Record<string, string> | undefined> {
  if (!o.valuesStdin) return o.value;
  let parsed: unknown;
  try {
    parsed = JSON.parse(await text(process.stdin));
  } catch {
    throw new InvalidArgumentError('standard input must be a JSON object of strings');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new InvalidArgumentError('standard input must be a JSON object of strings');
  return { ...(parsed as Record<string, string>), ...o.value };
}

function show(o: { json?: boolean }, c: Credential): void {
  if (o.json) return printJson(c);
  printFields([
    ['id', c.id],
    ['name', c.name],
    ['domain', c.domain],
    ['value_keys', (c.value_keys ?? []).join(', ')],
    ['has_totp_secret', String(c.has_totp_secret)],
    ['sso_provider', c.sso_provider],
    ['totp_code', c.totp_code],
    ['updated_at', c.updated_at],
  ]);
}

export function credentialsCommand(): Command {
  const credentials = new Command('credentials').description('stored logins: values and TOTP secrets go in encrypted and never come back out');
  covers(credentials.command('create'), 'createCredential')
    .description('store a credential')
    .requiredOption('--name <name>', 'unique within the project')
    .requiredOption('--domain <domain>', 'the site it logs into')
    .option('--value <key=value>', 'a stored field (repeat)', value)
    .option('--values-stdin', 'read the fields as a JSON object from standard input')
    .option('--totp-secret <base32>', 'a TOTP secret for two-factor codes')
    .option('--sso-provider <name>', 'google, github, microsoft, ...')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  echo \'{"username":"alice","password":"s3cret"}\' | rbrowse credentials create --name gh --domain github.com --values-stdin')
    .action(async (o, cmd: Command) => {
      const body = {
        name: o.name,
        domain: o.domain,
        values: (await values(o)) ?? {},
        ...(o.totpSecret ? { totp_secret: o.totpSecret } : {}),
        ...(o.ssoProvider ? { sso_provider: o.ssoProvider } : {}),
      };
      show(o, await (await clientFor(cmd)).call('createCredential', { body }));
    });
  covers(credentials.command('list'), 'listCredentials')
    .alias('ls')
    .description('list credentials (every page, unless --limit or --offset)')
    .option('--domain <domain>', 'only this domain')
    .option('--query <text>', 'credentials whose name or domain contains this')
    .option('--limit <n>', 'one page of this size, 1..100', count)
    .option('--offset <n>', 'one page, skipping this many', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print credential ids only')
    .addHelpText('after', '\nExample:\n  rbrowse credentials list --domain github.com')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const items = await listPages(o, (page) =>
        client.request('listCredentials', { query: { ...(o.domain ? { domain: o.domain } : {}), ...(o.query ? { query: o.query } : {}), ...page } }),
      );
      printList(items, o, {
        id: (c) => c.id,
        headers: ['CREDENTIAL', 'NAME', 'DOMAIN', 'TOTP', 'AGE'],
        row: (c) => [c.id, c.name, c.domain, c.has_totp_secret ? 'yes' : '', age(c.created_at)],
      });
    });
  covers(credentials.command('get'), 'getCredential')
    .description('show a credential (its field names, never their values)')
    .argument('<credential>', 'id or name')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse credentials get gh')
    .action(async (id: string, o, cmd: Command) => show(o, await (await clientFor(cmd)).call('getCredential', { params: { id } })));
  covers(credentials.command('update'), 'updateCredential')
    .description('rename, merge or remove fields, set or clear the TOTP secret')
    .argument('<credential>', 'id or name')
    .option('--name <name>', 'a new name')
    .option('--value <key=value>', 'a field to set (repeat)', value)
    .option('--values-stdin', 'read fields to set as a JSON object from standard input')
    .option('--remove-value-key <key>', 'a field to remove (repeat)', (v: string, prev: string[] = []) => [...prev, v])
    .option('--totp-secret <base32>', 'a new TOTP secret ("" removes it)')
    .option('--sso-provider <name>', 'a new SSO provider ("" removes it)')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse credentials update gh --value password=n3w --remove-value-key otp')
    .action(async (id: string, o, cmd: Command) => {
      const fields = await values(o);
      const body = {
        ...(o.name ? { name: o.name } : {}),
        ...(fields ? { values: fields } : {}),
        ...(o.removeValueKey ? { remove_value_keys: o.removeValueKey } : {}),
        ...(o.totpSecret !== undefined ? { totp_secret: o.totpSecret } : {}),
        ...(o.ssoProvider !== undefined ? { sso_provider: o.ssoProvider } : {}),
      };
      show(o, await (await clientFor(cmd)).call('updateCredential', { params: { id }, body }));
    });
  covers(credentials.command('delete'), 'deleteCredential')
    .alias('rm')
    .description('delete credentials and their values')
    .argument('<credentials...>', 'ids or names')
    .addHelpText('after', '\nExample:\n  rbrowse credentials delete gh')
    .action(async (ids: string[], _o, cmd: Command) => {
      const client = await clientFor(cmd);
      await deleteEach(ids, (id) => client.call('deleteCredential', { params: { id } }));
    });
  covers(credentials.command('totp'), 'credentialTotpCode')
    .description("print the current TOTP code of a credential's secret")
    .argument('<credential>', 'id or name')
    .option('--json', 'print the API object ({code, expires_at})')
    .addHelpText('after', '\nExample:\n  rbrowse credentials totp gh')
    .action(async (id: string, o, cmd: Command) => {
      const r = await (await clientFor(cmd)).call('credentialTotpCode', { params: { id } });
      if (o.json) printJson(r);
      else process.stdout.write(`${r.code}\n`);
    });
  return credentials;
}
