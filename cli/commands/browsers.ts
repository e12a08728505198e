import { spawn } from 'node:child_process';
import { Command, InvalidArgumentError, Option } from 'commander';
import { which } from '../../src/system-deps.js';
import type { BrowserSession, CreateBrowserBody } from '../../src/api/browsers.js';
import { TELEMETRY_CATEGORIES, type TelemetryRequest } from '../../src/api/telemetry-config.js';
import { ApiCallError } from '../../src/client.js';
import { clientFor } from '../context.js';
import { profileArg, profileSelection } from './profiles.js';
import { extensionSelections } from './extensions.js';
import { covers } from '../operations.js';
import { count, jsonObject, secondsIn, tag, viewport } from '../arg-parsers.js';
import { deleteEach } from '../delete-each.js';
import { age, printFields, printJson, printList, timeLeft } from '../output.js';
import { listPages } from '../paging.js';
import { withProgress } from '../progress.js';

export const viewportText = (s: Pick<BrowserSession, 'viewport'>) =>
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
    ['profile', s.profile ? (s.profile.name ?? s.profile.id) : undefined],
    ['invocation_id', s.invocation_id],
    ['pool', s.pool ? (s.pool.name ?? s.pool.id) : undefined],
    ['tags', s.tags && Object.keys(s.tags).length ? s.tags : undefined],
    ['created_at', s.created_at],
  ]);
}

/** `--telemetry`: on with the default set (no value), plus the comma-separated categories given. */
function telemetryArg(value: string | true | TelemetryRequest): TelemetryRequest {
  if (typeof value === 'object') return value;
  const names =
    value === true
      ? []
      : value
          .split(',')
          .map((c) => c.trim())
          .filter(Boolean);
  const unknown = names.filter((c) => !(TELEMETRY_CATEGORIES as readonly string[]).includes(c));
  if (unknown.length) throw new InvalidArgumentError(`unknown categories ${unknown.join(', ')} (${TELEMETRY_CATEGORIES.join(', ')})`);
  return { enabled: true, ...(names.length ? { browser: Object.fromEntries(names.map((c) => [c, { enabled: true }])) } : {}) };
}

/** `create` is both `rbrowse create` and `rbrowse browsers create`. */
export function createCommand(name: string): Command {
  const cmd = new Command(name)
    .description('create a browser session')
    .option('--headless', 'run without a display (no live view)')
    .option('--stealth', 'reduce automation tells')
    .option('--kiosk-mode', 'hide the address bar and tabs in live view')
    .addOption(new Option('--kiosk').hideHelp())
    .option('--timeout-seconds <seconds>', 'inactivity timeout, 10..259200 (default 60)', secondsIn(10, 259_200))
    .addOption(new Option('--timeout <seconds>').argParser(secondsIn(10, 259_200)).hideHelp())
    .option('--viewport <WxH[@R]>', 'one of the supported viewports, e.g. 1024x768', viewport)
    .option('--name <name>', 'a name unique among your active sessions')
    .option('--start-url <url>', 'page to open first')
    .option('--tag <key=value>', 'a tag (repeatable)', tag)
    .option('--profile <NAME[:save]>', 'load a saved profile (id or name); :save writes changes back when the session ends', profileArg)
    .option('--extension <name>', 'load an uploaded extension (id or name; repeatable, up to 20)', (v: string, prev: string[] = []) => [...prev, v])
    .option('--proxy <id>', 'route the traffic through this proxy (rbrowse proxies create)')
    .option('--telemetry [categories]', 'capture telemetry: the default set, plus these (comma-separated: console,network,page)', telemetryArg)
    .option('--export <destination>', 'export its telemetry over OTLP to this destination too (rbrowse telemetry destinations)')
    .option('--chrome-policy <json>', 'Chrome enterprise policies for this browser, as a JSON object', jsonObject)
    .option('--json', 'print the API object')
    .option('-q, --quiet', 'print the session id only')
    .addHelpText('after', '\nExamples:\n  rbrowse create --viewport 1024x768 --timeout-seconds 300\n  id=$(rbrowse create --headless -q)')
    .action(async (o, cmd: Command) => {
      const timeout = o.timeoutSeconds ?? o.timeout;
      const body: CreateBrowserBody = {
        ...(o.headless ? { headless: true } : {}),
        ...(o.stealth ? { stealth: true } : {}),
        ...(o.kioskMode || o.kiosk ? { kiosk_mode: true } : {}),
        ...(timeout !== undefined ? { timeout_seconds: timeout } : {}),
        ...(o.viewport ? { viewport: o.viewport } : {}),
        ...(o.name ? { name: o.name } : {}),
        ...(o.startUrl ? { start_url: o.startUrl } : {}),
        ...(o.tag ? { tags: o.tag } : {}),
        ...(o.proxy ? { proxy_id: o.proxy } : {}),
        ...(o.telemetry || o.export
          ? {
              telemetry: {
                ...telemetryArg(o.telemetry ?? true),
                ...(o.export ? { export: { otlp: { destination: { name: o.export } } } } : {}),
              },
            }
          : {}),
        ...(o.chromePolicy ? { chrome_policy: o.chromePolicy } : {}),
      };
      const client = await clientFor(cmd);
      if (o.profile) body.profile = await profileSelection(client, o.profile);
      if (o.extension) body.extensions = await extensionSelections(client, o.extension);
      const session = await withProgress(`creating a ${o.headless ? 'headless' : 'headful'} session`, () => client.call('createBrowser', { body }), {
        quiet: o.json || o.quiet,
        done: (s, ms) => `created session ${s.session_id} (${(ms / 1000).toFixed(1)} s)`,
      });
      if (o.json) printJson(session);
      else if (o.quiet) process.stdout.write(`${session.session_id}\n`);
      else {
        printSession(session);
        // On stderr, so that the fields stay the whole of stdout for a script that reads them.
        process.stderr.write(
          `\nIt ends ${session.timeout_seconds} s after its last CDP client or live viewer leaves (--timeout-seconds), or with rbrowse rm ${session.session_id}.\n`,
        );
      }
    });
  return covers(cmd, 'createBrowser');
}

export function listCommand(name: string): Command {
  const cmd = new Command(name)
    .description('list browser sessions (every page, unless --limit or --offset)')
    .addOption(new Option('--status <status>', 'which sessions').choices(['active', 'deleted', 'all']).default('active'))
    .option('--query <text>', 'sessions whose id or name contains this')
    .option('--limit <n>', 'one page of this size, 1..100', count)
    .option('--offset <n>', 'one page, skipping this many', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print session ids only')
    .addHelpText('after', '\nExamples:\n  rbrowse ls --status all\n  rbrowse ls -q | xargs rbrowse rm')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      // A table says how long each running session has left; the API object does not (Kernel's), the watch feed does.
      const activity = o.json || o.quiet || o.status === 'deleted' ? undefined : client.call('watchSnapshot', {}).catch(() => undefined);
      const items = await listPages(o, (page) =>
        client.request('listBrowsers', { query: { status: o.status, ...(o.query ? { query: o.query } : {}), ...page } }),
      );
      const snapshot = await activity;
      const running = new Map(snapshot?.sessions.map((w) => [w.session.session_id, w]));
      const now = snapshot ? Date.parse(snapshot.server_time) : Date.now();
      printList(items, o, {
        id: (s) => s.session_id,
        headers: ['SESSION', 'NAME', 'MODE', 'VIEWPORT', 'TIMEOUT', 'LEFT', 'AGE', 'STATUS'],
        row: (s) => {
          const w = running.get(s.session_id);
          return [
            s.session_id,
            s.name ?? '',
            s.headless ? 'headless' : 'headful',
            viewportText(s),
            `${s.timeout_seconds}s`,
            w ? timeLeft(w, now) : '',
            age(s.created_at),
            s.deleted_at ? 'deleted' : 'active',
          ];
        },
      });
    });
  return covers(cmd, 'listBrowsers', 'watchSnapshot');
}

export function deleteCommand(name: string): Command {
  const cmd = new Command(name)
    .description('delete browser sessions (by id or name), or every active one with --all')
    .argument('[ids...]', 'session ids or names')
    .option('--all', 'delete every active session of the organization')
    .addHelpText(
      'after',
      '\nWith no ids from a pipe (`rbrowse ls -q | xargs rbrowse rm` when nothing runs) it deletes nothing and exits 0.\n\nExamples:\n  rbrowse rm k0ahd3fvbqzs5lqgtjfnh4ke my-session\n  rbrowse rm --all',
    )
    .action(async (ids: string[], o, cmd: Command) => {
      if (o.all && ids.length) cmd.error('error: give session ids or --all, not both', { exitCode: 2 });
      if (!o.all && ids.length === 0) {
        // xargs runs the command once, without arguments, for empty input: nothing to delete is no error.
        if (!process.stdin.isTTY) return;
        cmd.error("error: missing required argument 'ids' (or --all)", { exitCode: 2 });
      }
      const client = await clientFor(cmd);
      const targets = o.all
        ? (await listPages({}, (page) => client.request('listBrowsers', { query: { status: 'active', ...page } }))).map((s) => s.session_id)
        : ids;
      await deleteEach(targets, (id) => client.call('deleteBrowser', { params: { id } }));
    });
  return covers(cmd, 'deleteBrowser');
}

export function browsersCommand(): Command {
  const browsers = new Command('browsers').description('browser sessions');
  browsers.addCommand(createCommand('create'));
  browsers.addCommand(listCommand('list').alias('ls'));
  covers(browsers.command('get'), 'getBrowser')
    .description('show one session')
    .argument('<id>', 'session id or name')
    .option('--include-deleted', 'also find deleted sessions')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse browsers get my-session --json')
    .action(async (id: string, o, cmd: Command) => {
      const s = await (await clientFor(cmd)).call('getBrowser', {
        params: { id },
        query: { include_deleted: Boolean(o.includeDeleted) },
      });
      if (o.json) printJson(s);
      else printSession(s);
    });
  covers(browsers.command('update'), 'updateBrowser')
    .description('update a session')
    .argument('<id>', 'session id or name')
    .option('--proxy-id <id>', 'route through this proxy ("" removes it)')
    .option('--name <name>', 'rename ("" removes the name)')
    .option('--tag <key=value>', 'replace the tags with these (repeatable)', tag)
    .option('--no-tags', 'remove every tag')
    .option('--viewport <WxH[@R]>', 'resize the screen and window to a supported viewport', viewport)
    .option('--force', 'resize even while live-view viewers are connected')
    .option('--profile <NAME[:save]>', 'load a saved profile into a session that has none (its browser restarts in place)', profileArg)
    .option('--telemetry [categories]', 'capture telemetry afresh: the default set, plus these (console,network,page)', telemetryArg)
    .option('--no-telemetry', 'stop capturing telemetry')
    .option('--json', 'print the API object')
    .addHelpText(
      'after',
      '\nExamples:\n  rbrowse browsers update k0ahd3fvbqzs5lqgtjfnh4ke --proxy-id ""\n  rbrowse browsers update my-session --viewport 1440x900 --force\n  rbrowse browsers update my-session --profile github:save',
    )
    .action(async (id: string, o, cmd: Command) => {
      const client = await clientFor(cmd);
      const s = await client.call('updateBrowser', {
        params: { id },
        body: {
          ...(o.profile ? { profile: await profileSelection(client, o.profile) } : {}),
          ...(o.telemetry === false ? { telemetry: { enabled: false } } : o.telemetry ? { telemetry: telemetryArg(o.telemetry) } : {}),
          ...(o.proxyId !== undefined ? { proxy_id: o.proxyId } : {}),
          ...(o.name !== undefined ? { name: o.name === '' ? null : o.name } : {}),
          ...(o.tag ? { tags: o.tag } : o.tags === false ? { tags: null } : {}),
          ...(o.viewport ? { viewport: { ...o.viewport, ...(o.force ? { force: true } : {}) } } : {}),
        },
      });
      if (o.json) printJson(s);
      else printSession(s);
    });
  browsers.addCommand(deleteCommand('delete').alias('rm'));
  return browsers;
}

/** Opens a URL in a desktop browser where there is one (a graphical session with xdg-open); whether it did. */
export function openInDesktopBrowser(url: string): boolean {
  if (!(process.env.DISPLAY || process.env.WAYLAND_DISPLAY) || !which('xdg-open')) return false;
  spawn('xdg-open', [url], { stdio: 'ignore', detached: true }).unref();
  return true;
}

export function liveCommand(): Command {
  const cmd = new Command('live')
    .description('print the live view URL of a session (headless ones too), and open it in a desktop browser')
    .argument('<id>', 'session id or name')
    .option('--no-open', 'only print the URL')
    .option('--read-only', 'a view without input')
    .option('--json', 'print the API object (url, read_only_url, kind), open nothing')
    .addHelpText('after', '\nExample:\n  rbrowse live my-session --no-open')
    .action(async (id: string, o, cmd: Command) => {
      const view = await (await clientFor(cmd)).call('getLiveView', { params: { id } }).catch((err: unknown) => {
        // The usual reason a session a user just made is gone: it timed out with no client connected.
        if (err instanceof ApiCallError && err.status === 404) {
          throw new ApiCallError(404, {
            ...err.body,
            message: `${err.body.message} (a session ends timeout_seconds after its last client leaves, 60 s by default; rbrowse ls --status deleted lists ended ones)`,
          });
        }
        throw err;
      });
      if (o.json) return printJson(view);
      const url = o.readOnly ? view.read_only_url : view.url;
      process.stdout.write(`${url}\n`);
      if (o.open) openInDesktopBrowser(url);
    });
  return covers(cmd, 'getLiveView');
}
