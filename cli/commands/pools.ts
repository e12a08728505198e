import { Command } from 'commander';
import type { BrowserPool, CreatePoolBody, UpdatePoolBody } from '../../src/api/pools.js';
import type { RbrowseClient } from '../../src/client.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printFields, printJson, printList } from '../output.js';
import { listPages } from '../paging.js';
import { waitWithProgress } from '../progress.js';
import { printSession } from './browsers.js';
import { count, jsonObject, seconds, tag, viewport } from '../arg-parsers.js';
import { deleteEach } from '../delete-each.js';

/** The configuration options create and update share, named after the API fields. */
function withConfigOptions(cmd: Command, update: boolean): Command {
  cmd
    .option('--name <name>', update ? 'rename the pool' : 'a name unique among your pools')
    .option('--size <n>', 'browsers kept in the pool, idle and acquired (1..50)', count)
    .option('--fill-rate-per-minute <percent>', 'percent of size launched per minute (default 10)', count)
    .option('--timeout-seconds <seconds>', 'inactivity timeout of an acquired browser (default 600)', seconds)
    .option('--viewport <WxH[@R]>', 'one of the supported viewports, e.g. 1024x768', viewport)
    .option('--proxy-id <id>', update ? 'route through this proxy ("" removes it)' : 'route through this proxy')
    .option('--start-url <url>', update ? 'page new browsers open ("" removes it)' : 'page new browsers open')
    .option(
      '--chrome-policy <json>',
      update ? 'Chrome enterprise policies, a JSON object ({} removes them)' : 'Chrome enterprise policies, a JSON object',
      jsonObject,
    );
  for (const [flag, what] of [
    ['headless', 'run without a display (no live view)'],
    ['stealth', 'reduce automation tells'],
    ['kiosk-mode', 'hide the address bar and tabs in live view'],
  ] as const) {
    cmd.option(`--${flag}`, what);
    if (update) cmd.option(`--no-${flag}`, `turn ${flag} off`);
  }
  return cmd.option('--json', 'print the API object');
}

function configBody(o: Record<string, unknown>): UpdatePoolBody {
  const fields: [keyof UpdatePoolBody, unknown][] = [
    ['name', o.name],
    ['size', o.size],
    ['fill_rate_per_minute', o.fillRatePerMinute],
    ['timeout_seconds', o.timeoutSeconds],
    ['viewport', o.viewport],
    ['proxy_id', o.proxyId],
    ['start_url', o.startUrl],
    ['chrome_policy', o.chromePolicy],
    ['headless', o.headless],
    ['stealth', o.stealth],
    ['kiosk_mode', o.kioskMode],
  ];
  return Object.fromEntries(fields.filter(([, v]) => v !== undefined)) as UpdatePoolBody;
}

function printPool(p: BrowserPool): void {
  const c = p.browser_pool_config;
  printFields([
    ['id', p.id],
    ['name', p.name],
    ['available', `${p.available_count} of ${c.size}`],
    ['acquired', p.acquired_count],
    ['fill_rate', `${c.fill_rate_per_minute}% of size per minute`],
    ['timeout_seconds', c.timeout_seconds],
    ['mode', c.headless ? 'headless' : 'headful'],
    ['viewport', c.viewport ? `${c.viewport.width}x${c.viewport.height}@${c.viewport.refresh_rate}` : undefined],
    ['stealth', c.stealth],
    ['kiosk_mode', c.kiosk_mode],
    ['proxy_id', c.proxy_id],
    ['start_url', c.start_url],
    ['chrome_policy', c.chrome_policy ? JSON.stringify(c.chrome_policy) : undefined],
    ['last_error', p.last_error ? `${p.last_error.occurred_at} ${p.last_error.code}: ${p.last_error.message}` : undefined],
    ['created_at', p.created_at],
  ]);
}

const show = (o: { json?: boolean }, p: BrowserPool) => (o.json ? printJson(p) : printPool(p));

/** --wait: until every browser of the pool is idle and ready, with a bar on a terminal. */
async function waitFilled(client: RbrowseClient, pool: BrowserPool, o: { json?: boolean }): Promise<BrowserPool> {
  return waitWithProgress(
    `filling pool ${pool.name ?? pool.id}`,
    () => client.call('getPool', { params: { id: pool.id } }),
    (p) => ({ done: p.available_count, total: p.browser_pool_config.size - p.acquired_count }),
    { quiet: o.json, done: (p, ms) => `pool ${p.name ?? p.id} has ${p.available_count} browsers ready (${(ms / 1000).toFixed(1)} s)` },
  );
}

export function poolsCommand(): Command {
  const pools = new Command('pools').description('browser pools: pre-created browsers, acquired in milliseconds');
  withConfigOptions(covers(pools.command('create'), 'createPool').description('create a pool; it fills in the background'), false)
    .option('--wait', 'wait until the pool is full (a progress bar on a terminal)')
    .addHelpText('after', '\nExample:\n  rbrowse pools create --name ci --size 3 --headless --fill-rate-per-minute 100 --wait')
    .action(async (o, cmd: Command) => {
      if (o.size === undefined) cmd.error('error: --size is required');
      const body = configBody(o) as CreatePoolBody;
      const client = await clientFor(cmd);
      const pool = await client.call('createPool', { body });
      show(o, o.wait ? await waitFilled(client, pool, o) : pool);
    });
  covers(pools.command('list'), 'listPools')
    .alias('ls')
    .description('list pools')
    .option('--name <name>', 'only the pool of this name')
    .option('--query <text>', 'pools whose name contains this (or whose id is this)')
    .option('--limit <n>', 'one page of this size, 1..100', count)
    .option('--offset <n>', 'one page, skipping this many', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print pool ids only')
    .addHelpText('after', '\nExamples:\n  rbrowse pools ls\n  rbrowse pools ls -q | xargs rbrowse pools rm --force')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const items = await listPages(o, (page) => client.request('listPools', { query: { name: o.name, query: o.query, ...page } }));
      printList(items, o, {
        id: (p) => p.id,
        headers: ['POOL', 'NAME', 'SIZE', 'AVAILABLE', 'ACQUIRED', 'MODE', 'LAST ERROR'],
        row: (p) => [
          p.id,
          p.name ?? '',
          String(p.browser_pool_config.size),
          String(p.available_count),
          String(p.acquired_count),
          p.browser_pool_config.headless ? 'headless' : 'headful',
          p.last_error?.code ?? '',
        ],
      });
    });
  covers(pools.command('get'), 'getPool')
    .description('show one pool')
    .argument('<pool>', 'pool id or name')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse pools get ci --json')
    .action(async (pool: string, o, cmd: Command) => show(o, await (await clientFor(cmd)).call('getPool', { params: { id: pool } })));
  withConfigOptions(covers(pools.command('update'), 'updatePool').description('change a pool; new browsers use the new configuration'), true)
    .argument('<pool>', 'pool id or name')
    .option('--discard-all-idle', 'replace the idle browsers now')
    .option('--wait', 'then wait until the pool is full again')
    .addHelpText('after', '\nExample:\n  rbrowse pools update ci --size 5 --discard-all-idle --wait')
    .action(async (pool: string, o, cmd: Command) => {
      const body = { ...configBody(o), ...(o.discardAllIdle ? { discard_all_idle: true } : {}) };
      const client = await clientFor(cmd);
      const updated = await client.call('updatePool', { params: { id: pool }, body });
      show(o, o.wait ? await waitFilled(client, updated, o) : updated);
    });
  covers(pools.command('delete'), 'deletePool')
    .alias('rm')
    .description('delete pools and their browsers')
    .argument('<pools...>', 'pool ids or names')
    .option('--force', 'also end browsers that are acquired')
    .addHelpText('after', '\nExample:\n  rbrowse pools rm ci --force')
    .action(async (ids: string[], o, cmd: Command) => {
      const client = await clientFor(cmd);
      await deleteEach(ids, (id) => client.call('deletePool', { params: { id }, body: { force: Boolean(o.force) } }));
    });
  covers(pools.command('flush'), 'flushPool')
    .description('end the idle browsers of a pool (it refills)')
    .argument('<pool>', 'pool id or name')
    .addHelpText('after', '\nExample:\n  rbrowse pools flush ci')
    .action(async (pool: string, _o, cmd: Command) => {
      await (await clientFor(cmd)).call('flushPool', { params: { id: pool } });
      process.stdout.write(`${pool}\n`);
    });
  covers(pools.command('acquire'), 'acquirePool')
    .description('lease a browser of the pool; prints its session id and CDP URL')
    .argument('<pool>', 'pool id or name')
    .option('--acquire-timeout-seconds <seconds>', 'how long to wait (default: the time to fill the pool)', count)
    .option('--name <name>', 'a session name for this lease')
    .option('--tag <key=value>', 'a tag for this lease (repeatable)', tag)
    .option('--json', 'print the API object')
    .addHelpText(
      'after',
      '\nExit status 3 when no browser became available in time.\n\nExample:\n  rbrowse pools acquire ci --acquire-timeout-seconds 10',
    )
    .action(async (pool: string, o, cmd: Command) => {
      const session = await (await clientFor(cmd)).call('acquirePool', {
        params: { id: pool },
        body: {
          ...(o.acquireTimeoutSeconds !== undefined ? { acquire_timeout_seconds: o.acquireTimeoutSeconds } : {}),
          ...(o.name ? { name: o.name } : {}),
          ...(o.tag ? { tags: o.tag } : {}),
        },
      });
      if (!session) {
        process.stderr.write('no browser became available in time\n');
        process.exitCode = 3;
        return;
      }
      if (o.json) printJson(session);
      else printSession(session);
    });
  covers(pools.command('release'), 'releasePool')
    .description('give an acquired browser back to its pool')
    .argument('<pool>', 'pool id or name')
    .argument('<session_id>', 'the acquired session')
    .option('--no-reuse', 'end the browser; the pool makes a new one')
    .addHelpText('after', '\nExample:\n  rbrowse pools release ci k0ahd3fvbqzs5lqgtjfnh4ke --no-reuse')
    .action(async (pool: string, sessionId: string, o, cmd: Command) => {
      await (await clientFor(cmd)).call('releasePool', {
        params: { id: pool },
        body: { session_id: sessionId, reuse: o.reuse !== false },
      });
      process.stdout.write(`${sessionId}\n`);
    });
  return pools;
}
