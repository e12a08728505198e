import { Command, Option } from 'commander';
import { PROXY_TYPES, type CreateProxyBody, type Proxy as ProxyAnswer } from '../../src/api/proxies.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printFields, printJson, printList } from '../output.js';
import { listPages } from '../paging.js';
import { count } from '../arg-parsers.js';
import { deleteEach } from '../delete-each.js';

const repeat = (value: string, previous: string[] = []) => [...previous, value];
const MANAGED_FIELDS = ['country', 'city', 'state', 'zip', 'asn', 'os'] as const;

function printProxy(p: ProxyAnswer): void {
  printFields([
    ['id', p.id],
    ['name', p.name],
    ['type', p.type],
    ['address', p.config ? `${p.protocol ?? 'http'}://${p.config.host}:${p.config.port}` : undefined],
    ['username', p.config?.username],
    ['has_password', p.config?.has_password],
    ['bypass_hosts', p.bypass_hosts?.join(', ')],
    ['status', p.status && `${p.status} (checked ${p.last_checked})`],
    ['created_at', p.created_at],
  ]);
}

const show = (o: { json?: boolean }, p: ProxyAnswer) => (o.json ? printJson(p) : printProxy(p));

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

export function proxiesCommand(): Command {
  const proxies = new Command('proxies').description('upstream proxies sessions route through (rbrowse create --proxy ID)');
  const create = covers(proxies.command('create'), 'createProxy');
  create
    .description('create a custom proxy (your own proxy server)')
    .addOption(
      new Option('--type <type>', "proxy type; only custom works locally (the others need Kernel's managed network)")
        .choices(PROXY_TYPES)
        .default('custom'),
    )
    .option('--name <name>', 'a readable name (need not be unique)')
    .option('--host <host>', 'proxy host name or IP address')
    .option('--port <port>', 'proxy port, 1..65535', count)
    .addOption(new Option('--protocol <protocol>', 'how the daemon talks to the proxy (default http)').choices(['http', 'https']))
    .option('--username <user>', 'username for proxy authentication')
    .option('--password <password>', 'password for proxy authentication (visible in ps: prefer --password-stdin)')
    .option('--password-stdin', 'read the password from standard input')
    .option('--bypass-host <host>', 'a host that goes direct (.example.com: its subdomains); repeatable', repeat);
  // Where Kernel's managed network places a datacenter, isp, residential or mobile proxy.
  for (const field of MANAGED_FIELDS) create.option(`--${field} <${field}>`, `${field} of the managed proxy (not for custom)`);
  create
    .option('--json', 'print the API object')
    .addHelpText(
      'after',
      '\nExample:\n  printf %s "$PW" | rbrowse proxies create --name office --host 10.0.0.5 --port 3128 --username me --password-stdin',
    )
    .action(async (o, cmd: Command) => {
      const password = o.passwordStdin ? await readStdin() : o.password;
      const fields = { host: o.host, port: o.port, username: o.username, password, ...Object.fromEntries(MANAGED_FIELDS.map((f) => [f, o[f]])) };
      const config = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
      const body = {
        type: o.type,
        ...(o.name !== undefined ? { name: o.name } : {}),
        ...(o.protocol !== undefined ? { protocol: o.protocol } : {}),
        ...(o.bypassHost ? { bypass_hosts: o.bypassHost } : {}),
        ...(Object.keys(config).length ? { config } : {}),
      } as CreateProxyBody;
      show(o, await (await clientFor(cmd)).call('createProxy', { body }));
    });
  covers(proxies.command('list'), 'listProxies')
    .alias('ls')
    .description('list proxies (every page, unless --limit or --offset)')
    .option('--name <name>', 'only proxies of this name')
    .option('--query <text>', 'proxies whose name or host contains this (or whose id is this)')
    .option('--limit <n>', 'one page of this size, 1..100', count)
    .option('--offset <n>', 'one page, skipping this many', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print proxy ids only')
    .addHelpText('after', '\nExample:\n  rbrowse proxies list --query office')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const items = await listPages(o, (page) =>
        client.request('listProxies', { query: { ...(o.name ? { name: o.name } : {}), ...(o.query ? { query: o.query } : {}), ...page } }),
      );
      printList(items, o, {
        id: (p) => p.id,
        headers: ['PROXY', 'NAME', 'TYPE', 'ADDRESS', 'AUTH', 'STATUS'],
        row: (p) => [
          p.id,
          p.name ?? '',
          p.type,
          p.config ? `${p.protocol ?? 'http'}://${p.config.host}:${p.config.port}` : '',
          p.config?.username !== undefined || p.config?.has_password ? 'yes' : '',
          p.status ?? '',
        ],
      });
    });
  covers(proxies.command('get'), 'getProxy')
    .description('show one proxy')
    .argument('<id>', 'proxy id')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse proxies get k0ahd3fvbqzs5lqgtjfnh4ke --json')
    .action(async (id: string, o, cmd: Command) => show(o, await (await clientFor(cmd)).call('getProxy', { params: { id } })));
  covers(proxies.command('update'), 'updateProxy')
    .alias('rename')
    .description('rename a proxy')
    .argument('<id>', 'proxy id')
    .requiredOption('--name <name>', 'the new name')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse proxies update k0ahd3fvbqzs5lqgtjfnh4ke --name office-2')
    .action(async (id: string, o, cmd: Command) =>
      show(o, await (await clientFor(cmd)).call('updateProxy', { params: { id }, body: { name: o.name } })),
    );
  covers(proxies.command('check'), 'checkProxy')
    .description('check that the proxy answers and accepts its credentials')
    .argument('<id>', 'proxy id')
    .option('--url <url>', 'reach this URL through it (the stored status is left as it is)')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse proxies check k0ahd3fvbqzs5lqgtjfnh4ke --url https://example.com')
    .action(async (id: string, o, cmd: Command) => {
      const body = o.url ? { url: o.url } : {};
      show(o, await (await clientFor(cmd)).call('checkProxy', { params: { id }, body }));
    });
  covers(proxies.command('delete'), 'deleteProxy')
    .alias('rm')
    .description('delete proxies (refused while a live session or a pool uses one)')
    .argument('<ids...>', 'proxy ids')
    .addHelpText('after', '\nExample:\n  rbrowse proxies list -q | xargs rbrowse proxies delete')
    .action(async (ids: string[], _o, cmd: Command) => {
      const client = await clientFor(cmd);
      await deleteEach(ids, (id) => client.call('deleteProxy', { params: { id } }));
    });
  return proxies;
}
