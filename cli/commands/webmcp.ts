import { text } from 'node:stream/consumers';
import { Command } from 'commander';
import { jsonObject, positiveInt } from '../arg-parsers.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printJson, printList } from '../output.js';

/** `rbrowse webmcp ls ID`, `rbrowse webmcp invoke ID --tool-ref REF`: the tools a session's pages offer. */
export function webmcpCommand(): Command {
  const webmcp = new Command('webmcp').description("the WebMCP tools a session's pages register, across its tabs and frames");
  covers(webmcp.command('list'), 'listWebmcpTools')
    .alias('ls')
    .description('list the tools registered now, each with the tool_ref that invokes it')
    .argument('<id>', 'session id or name')
    .option('--json', 'print the API object (with input schemas and annotations)')
    .option('-q, --quiet', 'print tool_refs only')
    .addHelpText('after', '\nExample:\n  rbrowse webmcp ls my-session')
    .action(async (id: string, o, cmd: Command) => {
      const { tools } = await (await clientFor(cmd)).call('listWebmcpTools', { params: { id } });
      if (o.json) return printJson({ tools });
      printList(tools, o, {
        id: (t) => t.tool_ref,
        headers: ['TOOL REF', 'NAME', 'TAB', 'PAGE', 'DESCRIPTION'],
        row: (t) => [
          t.tool_ref,
          t.tool.name,
          String(t.source.tab_id),
          t.source.frame ? `${t.source.page_url} (frame ${t.source.frame.url})` : t.source.page_url,
          t.tool.description,
        ],
      });
    });
  covers(webmcp.command('invoke'), 'invokeWebmcpTool')
    .description('invoke a listed tool and print its output; never retried (a page tool may act more than once)')
    .argument('<id>', 'session id or name')
    .requiredOption('--tool-ref <ref>', 'the tool, as rbrowse webmcp ls names it')
    .option('--input <json>', "the tool's input, a JSON object (read from standard input when left out)", jsonObject)
    .option('--timeout-sec <seconds>', 'how long to wait for its result (default 60)', positiveInt)
    .option('--json', 'print the API object')
    .addHelpText('after', `\nExample:\n  rbrowse webmcp invoke my-session --tool-ref wmt_... --input '{"query": "shoes"}'`)
    .action(async (id: string, o, cmd: Command) => {
      const input = o.input ?? jsonObject((await text(process.stdin)).trim() || '{}');
      const body = { tool_ref: o.toolRef, input, ...(o.timeoutSec ? { timeout_sec: o.timeoutSec } : {}) };
      const r = await (await clientFor(cmd)).call('invokeWebmcpTool', { params: { id }, body });
      if (o.json) return printJson(r);
      if (r.status === 'completed') return console.log(typeof r.output === 'string' ? r.output : JSON.stringify(r.output ?? null, null, 2));
      if (r.status === 'awaiting_submission') return console.log(`the form is filled in and waits for its submit (invocation ${r.invocation_id})`);
      console.error(`${r.status}${r.error_text ? `: ${r.error_text}` : ''} (invocation ${r.invocation_id})`);
      process.exitCode = 1;
    });
  return webmcp;
}
