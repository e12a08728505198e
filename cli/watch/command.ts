import { Command } from 'commander';
import { RbrowseClient } from '../../src/client.js';
import { openInDesktopBrowser } from '../commands/browsers.js';
import { clientFor, type GlobalOptions } from '../context.js';
import { readDaemonInfo } from '../daemon-control.js';
import { covers } from '../operations.js';
import { colorEnabled, EXIT } from '../output.js';
import { WatchConnection } from './connection.js';

export function watchCommand(): Command {
  const cmd = new Command('watch')
    .description('a live dashboard of your sessions, pools and invocations (full screen; needs a terminal)')
    .addHelpText(
      'after',
      '\nKeys: ↑/↓ select, enter details, l live view (printed, and opened where a desktop browser is),\n' +
        'd delete (asks y/N), c create (f headful, h headless), q quit.\n' +
        'It keeps reconnecting while the daemon restarts.\n\nExample:\n  rbrowse watch',
    )
    .action(async (_o, c: Command) => {
      if (!process.stdout.isTTY || !process.stdin.isTTY) {
        process.stderr.write('error: rbrowse watch needs a terminal (for scripts: rbrowse ls --json, or GET /watch)\n');
        process.exitCode = EXIT.usage;
        return;
      }
      const first = await clientFor(c);
      const opts = c.optsWithGlobals() as GlobalOptions;
      const remote = Boolean(opts.baseUrl ?? process.env.KERNEL_BASE_URL);
      // The local daemon may come back on another port (RBROWSE_PORT=0): look it up on each reconnect.
      const current = (): RbrowseClient => {
        if (remote) return first;
        const info = readDaemonInfo();
        if (!info) throw new Error('the daemon is not running');
        return info.base_url === first.baseUrl ? first : new RbrowseClient(info.base_url, first.apiKey, first.projectId);
      };
      // The dashboard's modules (Ink, React) load only when it is drawn, not with every command.
      const [{ createElement: h }, { render }, { Dashboard }] = await Promise.all([import('react'), import('ink'), import('./dashboard.js')]);
      const connection = new WatchConnection(current);
      const ink = render(
        h(Dashboard, {
          target: first.baseUrl,
          feed: connection,
          color: colorEnabled(),
          actions: {
            remove: async (id) => void (await current().call('deleteBrowser', { params: { id } })),
            create: (headless) => current().call('createBrowser', { body: headless ? { headless } : {} }),
            liveView: async (id) => (await current().call('getLiveView', { params: { id } })).url,
            open: openInDesktopBrowser,
            // OSC 52: the terminal (xterm, iTerm2, kitty, tmux with set-clipboard, most over SSH) takes it as a copy.
            copy: (text) => void process.stdout.write(`\x1b]52;c;${Buffer.from(text).toString('base64')}\x07`),
          },
        }),
        { alternateScreen: true, interactive: true, patchConsole: true },
      );
      try {
        await ink.waitUntilExit();
      } finally {
        await connection.stop();
      }
    });
  return covers(cmd, 'watch');
}
