import { text } from 'node:stream/consumers';
import { Command } from 'commander';
import { positiveInt } from '../arg-parsers.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printJson, printList } from '../output.js';

/** `rbrowse playwright ID [CODE]`: runs the code (or this command's input) and prints its result. */
export function playwrightCommand(): Command {
  return covers(new Command('playwright'), 'playwrightExecute')
    .description("run Playwright code against a session's browser (page, context and browser are given; return a value)")
    .argument('<id>', 'session id or name')
    .argument('[code]', 'the code; read from standard input when left out')
    .option('--timeout-sec <seconds>', 'stop it after this many seconds (default 60)', positiveInt)
    .option('--executor <name>', 'run in this executor: one call at a time there, in a tab of its own (rbrowse executors)')
    .option('--json', 'print the API object')
    .addHelpText(
      'after',
      `\nExamples:\n  rbrowse playwright my-session "await page.goto('https://example.com'); return page.title();"\n  rbrowse playwright my-session < scrape.ts`,
    )
    .action(async (id: string, code: string | undefined, o, cmd: Command) => {
      const body = {
        code: code ?? (await text(process.stdin)),
        ...(o.timeoutSec ? { timeout_sec: o.timeoutSec } : {}),
        ...(o.executor ? { executor: o.executor } : {}),
      };
      const r = await (await clientFor(cmd)).call('playwrightExecute', { params: { id }, body });
      if (o.json) return printJson(r);
      if (r.stdout) process.stderr.write(r.stdout);
      if (r.stderr) process.stderr.write(r.stderr);
      if (r.success) console.log(typeof r.result === 'string' ? r.result : JSON.stringify(r.result, null, 2));
      else {
        console.error(`error: ${r.error}`);
        process.exitCode = 1;
      }
    });
}

/** `rbrowse executors ls ID`, `rbrowse executors rm ID NAME`: a session's Playwright executors. */
export function executorsCommand(): Command {
  const executors = new Command('executors').description("a session's Playwright executors (rbrowse playwright --executor)");
  covers(executors.command('list'), 'listPlaywrightExecutors')
    .alias('ls')
    .description('list the default executor and the named ones, busy or not, with their tabs')
    .argument('<id>', 'session id or name')
    .option('--json', 'print the API object')
    .option('-q, --quiet', 'print executor names only')
    .addHelpText('after', '\nExample:\n  rbrowse executors ls my-session')
    .action(async (id: string, o, cmd: Command) => {
      const { executors: list } = await (await clientFor(cmd)).call('listPlaywrightExecutors', { params: { id } });
      if (o.json) return printJson({ executors: list });
      printList(list, o, {
        id: (e) => e.name,
        headers: ['NAME', 'BUSY', 'LAST USED', 'URL'],
        row: (e) => [e.name, e.busy ? 'yes' : 'no', e.last_used_at, e.url ?? ''],
      });
    });
  covers(executors.command('delete'), 'deletePlaywrightExecutor')
    .alias('rm')
    .description('stop an executor: a named one goes (and its tab, unless --keep-tab), the default one restarts')
    .argument('<id>', 'session id or name')
    .argument('<name>', 'executor name')
    .option('--no-close-tab', "leave the executor's tab open")
    .addHelpText('after', '\nExample:\n  rbrowse executors rm my-session checkout')
    .action(async (id: string, name: string, o, cmd: Command) => {
      await (await clientFor(cmd)).call('deletePlaywrightExecutor', {
        params: { id, name },
        query: o.closeTab === false ? { close_tab: false } : {},
      });
    });
  return executors;
}
