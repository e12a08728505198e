import { Command, InvalidArgumentError, Option } from 'commander';
import { text } from 'node:stream/consumers';
import type { Credential, CredentialProvider } from '../../src/api/credentials.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { age, printFields, printJson, printList } from '../output.js';
import { listPages } from '../paging.js';
import { count } from '../arg-parsers.js';
import { deleteEach } from '../delete-each.js';

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
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new InvalidArgumentError('standard input must be a JSON object of strings');
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
    .addHelpText(
      'after',
      '\nExample:\n  echo \'{"username":"alice","password":"s3cret"}\' | rbrowse credentials create --name gh --domain github.com --values-stdin',
    )
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
  credentials.addCommand(providersCommand());
  return credentials;
}

function showProvider(o: { json?: boolean }, p: CredentialProvider): void {
  if (o.json) return printJson(p);
  printFields([
    ['id', p.id],
    ['name', p.name],
    ['provider_type', p.provider_type],
    ['enabled', String(p.enabled)],
    ['priority', String(p.priority)],
    ['updated_at', p.updated_at],
  ]);
}

/** The token from standard input: a service account token never goes on a command line. */
async function tokenFromStdin(): Promise<string> {
  const token = (await text(process.stdin)).trim();
  if (!token) throw new InvalidArgumentError('standard input holds no token');
  return token;
}

function providersCommand(): Command {
  const providers = new Command('providers').description("your organization's credential providers (1Password service accounts)");
  covers(providers.command('create'), 'createCredentialProvider')
    .description('add a 1Password service account; its token is read from standard input')
    .requiredOption('--name <name>', 'unique in the organization')
    .addOption(new Option('--provider-type <type>', 'the kind of provider').choices(['onepassword']).default('onepassword'))
    .option('--cache-ttl-seconds <n>', 'how long item lists are reused (default 300)', count)
    .option('--token-stdin', 'read the token from standard input (the only way to give it)')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  printenv OP_SERVICE_ACCOUNT_TOKEN | rbrowse credentials providers create --name team-1p --token-stdin')
    .action(async (o, cmd: Command) => {
      if (!o.tokenStdin) throw new InvalidArgumentError('give the token on standard input with --token-stdin');
      const body = {
        name: o.name,
        provider_type: o.providerType,
        token: await tokenFromStdin(),
        ...(o.cacheTtlSeconds !== undefined ? { cache_ttl_seconds: o.cacheTtlSeconds } : {}),
      };
      showProvider(o, await (await clientFor(cmd)).call('createCredentialProvider', { body }));
    });
  covers(providers.command('list'), 'listCredentialProviders')
    .alias('ls')
    .description('list providers in lookup order')
    .option('--query <text>', 'providers whose name contains this')
    .option('--limit <n>', 'one page of this size, 1..100', count)
    .option('--offset <n>', 'one page, skipping this many', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print provider ids only')
    .addHelpText('after', '\nExample:\n  rbrowse credentials providers list')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const items = await listPages(o, (page) =>
        client.request('listCredentialProviders', { query: { ...(o.query ? { query: o.query } : {}), ...page } }),
      );
      printList(items, o, {
        id: (p) => p.id,
        headers: ['PROVIDER', 'NAME', 'TYPE', 'ENABLED', 'PRIORITY'],
        row: (p) => [p.id, p.name, p.provider_type, String(p.enabled), String(p.priority)],
      });
    });
  covers(providers.command('get'), 'getCredentialProvider')
    .description('show a provider')
    .argument('<provider>', 'id or name')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse credentials providers get team-1p')
    .action(async (id: string, o, cmd: Command) => showProvider(o, await (await clientFor(cmd)).call('getCredentialProvider', { params: { id } })));
  covers(providers.command('update'), 'updateCredentialProvider')
    .description('rename, re-prioritize, enable or disable a provider, or give it a new token (--token-stdin)')
    .argument('<provider>', 'id or name')
    .option('--name <name>', 'a new name')
    .option('--priority <n>', 'lower is asked first', count)
    .option('--enabled <bool>', 'true or false', (v: string) => {
      if (v !== 'true' && v !== 'false') throw new InvalidArgumentError('expected true or false');
      return v === 'true';
    })
    .option('--cache-ttl-seconds <n>', 'how long item lists are reused', count)
    .option('--token-stdin', 'read a new token from standard input')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse credentials providers update team-1p --enabled false')
    .action(async (id: string, o, cmd: Command) => {
      const body = {
        ...(o.name ? { name: o.name } : {}),
        ...(o.priority !== undefined ? { priority: o.priority } : {}),
        ...(o.enabled !== undefined ? { enabled: o.enabled } : {}),
        ...(o.cacheTtlSeconds !== undefined ? { cache_ttl_seconds: o.cacheTtlSeconds } : {}),
        ...(o.tokenStdin ? { token: await tokenFromStdin() } : {}),
      };
      showProvider(o, await (await clientFor(cmd)).call('updateCredentialProvider', { params: { id }, body }));
    });
  covers(providers.command('delete'), 'deleteCredentialProvider')
    .alias('rm')
    .description('remove providers and their tokens')
    .argument('<providers...>', 'ids or names')
    .addHelpText('after', '\nExample:\n  rbrowse credentials providers delete team-1p')
    .action(async (ids: string[], _o, cmd: Command) => {
      const client = await clientFor(cmd);
      await deleteEach(ids, (id) => client.call('deleteCredentialProvider', { params: { id } }));
    });
  covers(providers.command('items'), 'credentialProviderItems')
    .description("the provider's login items")
    .argument('<provider>', 'id or name')
    .option('--json', 'print the API object')
    .option('-q, --quiet', 'print item paths only')
    .addHelpText('after', '\nExample:\n  rbrowse credentials providers items team-1p')
    .action(async (id: string, o, cmd: Command) => {
      const r = await (await clientFor(cmd)).call('credentialProviderItems', { params: { id } });
      if (o.json) return printJson(r);
      printList(r.items, o, { id: (i) => i.path, headers: ['PATH', 'URLS'], row: (i) => [i.path, i.urls.join(' ')] });
    });
  covers(providers.command('test'), 'testCredentialProvider')
    .description('connect with the token: the vaults it reads, or the error (exit 1)')
    .argument('<provider>', 'id or name')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse credentials providers test team-1p')
    .action(async (id: string, o, cmd: Command) => {
      const r = await (await clientFor(cmd)).call('testCredentialProvider', { params: { id } });
      if (o.json) printJson(r);
      else process.stdout.write(r.success ? `ok: ${r.vaults.map((v) => v.name).join(', ') || 'no vaults'}\n` : `failed: ${r.error}\n`);
      if (!r.success) process.exitCode = 1;
    });
  return providers;
}
