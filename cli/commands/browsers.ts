import { spawn } from 'node:child_process';
import { Command, InvalidArgumentError, Option } from 'commander';
import { which } from '../../src/system-deps.js';
import type { BrowserSession, CreateBrowserBody } from '../../src/api/schemas.js';
import { parseViewportArg } from '../../src/viewport.js';
import { clientFor } from '../context.js';
import { age, printFields, printJson, printList } from '../output.js';

export function seconds(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('expected whole seconds');
  return n;
}

export function viewport(value: string) {
  const v = parseViewportArg(value);
  if (!v) throw new InvalidArgumentError('expected WIDTHxHEIGHT or WIDTHxHEIGHT@RATE, e.g. 1024x768');
  return v;
}

export function tag(value: string, previous: Record<string, string> = {}) {
  const i = value.indexOf('=');
  if (i < 1) throw new InvalidArgumentError('expected KEY=VALUE');
  return { ...previous, [value.slice(0, i)]: value.slice(i + 1) };
}

const viewportText = (s: BrowserSession) =>
  s.viewport ? `${s.viewport.width}x${s.viewport.height}@${s.viewport.refresh_rate}` : '';

export function printSession(s: BrowserSession): void {
  printFields([
    ['session_id', s.session_id],
    ['name', s.name],
    ['status', s.deleted_at ? `deleted ${s.deleted_at}` : 'active'],
    ['cdp_ws_url', s.cdp_ws_url],
    ['live_view_url', s.browser_live_view_url],
    ['mode', s.headless ? 'headless' : 'headful'],
    ['viewport', viewportText(s)],
    ['stealth', s.stealth],
    ['kiosk_mode', s.kiosk_mode],
    ['timeout_seconds', s.timeout_seconds],
    ['proxy_id', s.proxy_id],
    ['pool', s.pool ? (s.pool.name ?? s.pool.id) : undefined],
    ['tags', s.tags && Object.keys(s.tags).length ? s.tags : undefined],
    ['created_at', s.created_at],
  ]);
}

/** `create` is both `rbrowse create` and `rbrowse browsers create`. */
export function createCommand(name: string): Command {
  return new Command(name)
    .description('create a browser session')
    .option('--headless', 'run without a display (no live view)')
    .option('--stealth', 'reduce automation tells')
    .option('--kiosk', 'hide the address bar and tabs in live view')
    .option('--timeout <seconds>', 'inactivity timeout, 10..259200 (default 60)', seconds)
    .option('--viewport <WxH[@R]>', 'one of the supported viewports, e.g. 1024x768', viewport)
    .option('--name <name>', 'a name unique among your active sessions')
    .option('--start-url <url>', 'page to open first')
    .option('--tag <key=value>', 'a tag (repeatable)', tag)
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse create --viewport 1024x768 --timeout 300')
    .action(async (o, cmd: Command) => {
      const body: CreateBrowserBody = {
        ...(o.headless ? { headless: true } : {}),
        ...(o.stealth ? { stealth: true } : {}),
        ...(o.kiosk ? { kiosk_mode: true } : {}),
        ...(o.timeout !== undefined ? { timeout_seconds: o.timeout } : {}),
        ...(o.viewport ? { viewport: o.viewport } : {}),
        ...(o.name ? { name: o.name } : {}),
        ...(o.startUrl ? { start_url: o.startUrl } : {}),
        ...(o.tag ? { tags: o.tag } : {}),
      };
      const session = await (await clientFor(cmd)).call('createBrowser', { body });
      if (o.json) printJson(session);
      else printSession(session);
    });
}

export function listCommand(name: string): Command {
  return new Command(name)
    .description('list browser sessions')
    .addOption(new Option('--status <status>', 'which sessions').choices(['active', 'deleted', 'all']).default('active'))
    .option('--limit <n>', 'page size, 1..100', (v) => Number(v))
    .option('--offset <n>', 'skip this many', (v) => Number(v))
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print session ids only')
    .addHelpText('after', '\nExample:\n  rbrowse ls -q | xargs rbrowse rm')
    .action(async (o, cmd: Command) => {
      const items = await (await clientFor(cmd)).call('listBrowsers', {
        query: { status: o.status, limit: o.limit, offset: o.offset },
      });
      printList(items, o, {
        id: (s) => s.session_id,
        headers: ['SESSION', 'NAME', 'MODE', 'VIEWPORT', 'TIMEOUT', 'AGE', 'STATUS'],
        row: (s) => [
          s.session_id,
          s.name ?? '',
          s.headless ? 'headless' : 'headful',
          viewportText(s),
          `${s.timeout_seconds}s`,
          age(s.created_at),
          s.deleted_at ? 'deleted' : 'active',
        ],
      });
    });
}

export function deleteCommand(name: string): Command {
  return new Command(name)
    .description('delete browser sessions (by id or name)')
    .argument('<ids...>', 'session ids or names')
    .addHelpText('after', '\nExample:\n  rbrowse rm k0ahd3fvbqzs5lqgtjfnh4ke')
    .action(async (ids: string[], _o, cmd: Command) => {
      const client = await clientFor(cmd);
      for (const id of ids) {
        await client.call('deleteBrowser', { params: { id } });
        process.stdout.write(`${id}\n`);
      }
    });
}

export function browsersCommand(): Command {
  const browsers = new Command('browsers').description('browser sessions');
  browsers.addCommand(createCommand('create'));
  browsers.addCommand(listCommand('list').alias('ls'));
  browsers
    .command('get')
    .description('show one session')
    .argument('<id>', 'session id or name')
    .option('--include-deleted', 'also find deleted sessions')
    .option('--json', 'print the API object')
    .action(async (id: string, o, cmd: Command) => {
      const s = await (await clientFor(cmd)).call('getBrowser', {
        params: { id },
        query: { include_deleted: Boolean(o.includeDeleted) },
      });
      if (o.json) printJson(s);
      else printSession(s);
    });
  browsers
    .command('update')
    .description('update a session')
    .argument('<id>', 'session id or name')
    .option('--proxy-id <id>', 'route through this proxy ("" removes it)')
    .option('--name <name>', 'rename ("" removes the name)')
    .option('--viewport <WxH[@R]>', 'resize the screen and window to a supported viewport', viewport)
    .option('--force', 'resize even while live-view viewers are connected')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExamples:\n  rbrowse browsers update k0ahd3fvbqzs5lqgtjfnh4ke --proxy-id ""\n  rbrowse browsers update my-session --viewport 1440x900 --force')
    .action(async (id: string, o, cmd: Command) => {
      const s = await (await clientFor(cmd)).call('updateBrowser', {
        params: { id },
        body: {
          ...(o.proxyId !== undefined ? { proxy_id: o.proxyId } : {}),
          ...(o.name !== undefined ? { name: o.name === '' ? null : o.name } : {}),
          ...(o.viewport ? { viewport: { ...o.viewport, ...(o.force ? { force: true } : {}) } } : {}),
        },
      });
      if (o.json) printJson(s);
      else printSession(s);
    });
  browsers.addCommand(deleteCommand('delete').alias('rm'));
  return browsers;
}

/** Where a desktop browser can be opened: a graphical session with xdg-open. */
function canOpenBrowser(): boolean {
  return Boolean((process.env.DISPLAY || process.env.WAYLAND_DISPLAY) && which('xdg-open'));
}

export function liveCommand(): Command {
  return new Command('live')
    .description('print the live view URL of a headful session, and open it in a desktop browser')
    .argument('<id>', 'session id or name')
    .option('--no-open', 'only print the URL')
    .option('--read-only', 'a view without input')
    .addHelpText('after', '\nExample:\n  rbrowse live my-session --no-open')
    .action(async (id: string, o, cmd: Command) => {
      const s = await (await clientFor(cmd)).call('getBrowser', { params: { id }, query: {} });
      if (!s.browser_live_view_url) throw new Error(`session ${s.session_id} is headless: it has no live view`);
      const url = o.readOnly ? `${s.browser_live_view_url}&readOnly=true` : s.browser_live_view_url;
      process.stdout.write(`${url}\n`);
      if (o.open && canOpenBrowser()) spawn('xdg-open', [url], { stdio: 'ignore', detached: true }).unref();
    });
}
