import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { Command } from 'commander';
import { positiveInt } from '../arg-parsers.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printJson } from '../output.js';

const EXTENSIONS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp' };

/** `rbrowse repl ID [CODE]`: runs the code in the session's REPL and prints its output in order. */
export function replCommand(): Command {
  return covers(new Command('repl'), 'runRepl')
    .description("run JavaScript in a session's persistent REPL (bindings stay between calls; helpers: gotoUrl, click, js, pageInfo, ...)")
    .argument('<id>', 'session id or name')
    .argument('[code]', 'the code; read from standard input when left out')
    .option('--reset', 'start a fresh REPL first (with no code: only that)')
    .option('--timeout-sec <seconds>', 'stop the REPL after this many seconds (default 60)', positiveInt)
    .option('--output <dir>', 'where to save emitted images (default: the current directory)', '.')
    .option('--json', 'print the API object')
    .addHelpText(
      'after',
      `\nExamples:\n  rbrowse repl my-session 'await gotoUrl("https://example.com"); await waitForLoad(); repl.write((await pageInfo()).title)'\n  rbrowse repl my-session 'await repl.emitImage({path: await captureScreenshot()})'\n  rbrowse repl my-session --reset`,
    )
    .action(async (id: string, code: string | undefined, o, cmd: Command) => {
      const body = {
        code: code ?? (o.reset && process.stdin.isTTY ? '' : await text(process.stdin)),
        ...(o.reset ? { reset: true } : {}),
        ...(o.timeoutSec ? { timeout_sec: o.timeoutSec } : {}),
      };
      const r = await (await clientFor(cmd)).call('runRepl', { params: { id }, body });
      if (o.json) return printJson(r);
      let images = 0;
      for (const item of r.content ?? []) {
        if (item.type === 'text') (item.channel === 'stderr' ? process.stderr : process.stdout).write(item.text);
        else {
          const file = join(o.output, `repl-${r.repl_id}-${Date.now()}-${++images}.${EXTENSIONS[item.mime_type] ?? 'img'}`);
          await writeFile(file, Buffer.from(item.data_b64, 'base64'));
          process.stderr.write(`[image ${item.mime_type} saved to ${file}]\n`);
        }
      }
      const last = r.content?.at(-1);
      if (last?.type === 'text' && !last.text.endsWith('\n')) process.stdout.write('\n');
      if (r.content_truncated) process.stderr.write('(output was truncated)\n');
      if (!r.success) {
        console.error(`error: ${r.error}${r.repl_terminated ? ' (the REPL ended; the next call starts a fresh one)' : ''}`);
        process.exitCode = 1;
      }
    });
}
