import { Command } from 'commander';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { followUntilInterrupted } from '../sse.js';

/** `rbrowse logs ID`: its Chromium's log (or a file in it with --path); -f keeps following. */
export function logsCommand(): Command {
  return covers(new Command('logs'), 'logsStream')
    .description("a session's Chromium log, or a file inside it; with -f, new lines as they come until interrupted")
    .argument('<id>', 'session id or name')
    .option('--path <path>', 'a file inside the session instead of the Chromium log')
    .option('--supervisor-process <name>', 'whose own log (chromium)', 'chromium')
    .option('-f, --follow', 'print lines written from now on, until interrupted')
    .option('--json', 'print each event as a JSON line')
    .addHelpText('after', '\nExamples:\n  rbrowse logs my-session\n  rbrowse logs my-session -f --path /tmp/app.log')
    .action(async (id: string, o, cmd: Command) => {
      const client = await clientFor(cmd);
      const query = new URLSearchParams({
        source: o.path ? 'path' : 'supervisor',
        follow: String(o.follow === true),
        ...(o.path ? { path: o.path } : { supervisor_process: o.supervisorProcess }),
      });
      const url = new URL(`/browsers/${encodeURIComponent(id)}/logs/stream?${query}`, client.baseUrl);
      await followUntilInterrupted<{ event: string; message: string }>(url.href, client.authHeaders(), (ev) => {
        if (ev.event === 'log') console.log(o.json ? JSON.stringify(ev) : ev.message);
      });
    });
}
