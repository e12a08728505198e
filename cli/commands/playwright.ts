import { text } from 'node:stream/consumers';
import { Command } from 'commander';
import { positiveInt } from '../arg-parsers.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printJson } from '../output.js';

/** `rbrowse playwright ID [CODE]`: runs the code (or this command's input) and prints its result. */
export function playwrightCommand(): Command {
  return covers(new Command('playwright'), 'playwrightExecute')
    .description("run Playwright code against a session's browser (page, context and browser are given; return a value)")
    .argument('<id>', 'session id or name')
    .argument('[code]', 'the code; read from standard input when left out')
    .option('--timeout-sec <seconds>', 'stop it after this many seconds (default 60)', positiveInt)
    .option('--json', 'print the API object')
    .addHelpText(
      'after',
      `\nExamples:\n  rbrowse playwright my-session "await page.goto('https://example.com'); return page.title();"\n  rbrowse playwright my-session < scrape.ts`,
    )
    .action(async (id: string, code: string | undefined, o, cmd: Command) => {
      const body = { code: code ?? (await text(process.stdin)), ...(o.timeoutSec ? { timeout_sec: o.timeoutSec } : {}) };
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
