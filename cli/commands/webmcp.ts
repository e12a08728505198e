import { readFile } from 'node:fs/promises';
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
    .option('--exclude-custom', "the pages' own tools only, without custom ones")
    .option('--json', 'print the API object (with input schemas and annotations)')
    .option('-q, --quiet', 'print tool_refs only')
    .addHelpText('after', '\nExample:\n  rbrowse webmcp ls my-session')
    .action(async (id: string, o, cmd: Command) => {
      const query = o.excludeCustom ? { exclude_custom: true } : {};
      const { tools } = await (await clientFor(cmd)).call('listWebmcpTools', { params: { id }, query });
      if (o.json) return printJson({ tools });
      printList(tools, o, {
        id: (t) => t.tool_ref,
        headers: ['TOOL REF', 'NAME', 'TAB', 'PAGE', 'DESCRIPTION'],
        row: (t) => [
          t.tool_ref,
          t.tool.name,
          String(t.source.tab_id),
          t.source.frame ? `${t.source.page_url} (frame ${t.source.frame.url})` : t.source.page_url,
          t.source.custom ? `[custom ${t.source.custom.namespace}] ${t.tool.description}` : t.tool.description,
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
  webmcp.addCommand(customToolsCommand());
  return webmcp;
}

/** `rbrowse webmcp custom-tools ls|add|rm`: tools the caller defines in JavaScript, offered on matching pages. */
function customToolsCommand(): Command {
  const custom = new Command('custom-tools').description(
    'custom tools: defined in JavaScript, offered on every tab whose pages match their URL patterns',
  );
  covers(custom.command('list'), 'listWebmcpCustomTools')
    .alias('ls')
    .description("list the session's custom tools")
    .argument('<id>', 'session id or name')
    .option('--json', 'print the API object')
    .option('-q, --quiet', 'print ids only')
    .addHelpText('after', '\nExample:\n  rbrowse webmcp custom-tools ls my-session')
    .action(async (id: string, o, cmd: Command) => {
      const { tools } = await (await clientFor(cmd)).call('listWebmcpCustomTools', { params: { id } });
      if (o.json) return printJson({ tools });
      printList(tools, o, {
        id: (t) => t.id,
        headers: ['ID', 'NAMESPACE', 'NAME', 'KIND', 'URL PATTERNS'],
        row: (t) => [t.id, t.namespace, t.tool.name, t.kind, t.match.url_patterns.join(' ')],
      });
    });
  covers(custom.command('add'), 'addWebmcpCustomTools')
    .description('add a batch of tools to a namespace, atomically (the source is JavaScript run in the session: only source you trust)')
    .argument('<id>', 'session id or name')
    .requiredOption('--namespace <name>', "the batch's namespace")
    .option('--source <js>', 'the definitions: an array of {kind, match: {url_patterns}, tool: {name, description, inputSchema}, execute}')
    .option('--source-file <path>', 'read the source from a file (- for standard input)')
    .option('--force-overwrite-namespace', "replace the namespace's tools with this batch")
    .option('--json', 'print the API object')
    .addHelpText(
      'after',
      `\nExample:\n  rbrowse webmcp custom-tools add my-session --namespace shop --source '[{ kind: "page", match: { url_patterns: ["https://shop.example/*"] }, tool: { name: "title", description: "The page title", inputSchema: { type: "object" } }, execute: () => document.title }]'`,
    )
    .action(async (id: string, o, cmd: Command) => {
      const source = o.source ?? (o.sourceFile && o.sourceFile !== '-' ? await readFile(o.sourceFile, 'utf8') : await text(process.stdin));
      const body = { namespace: o.namespace, source, ...(o.forceOverwriteNamespace ? { force_overwrite_namespace: true } : {}) };
      const { tools } = await (await clientFor(cmd)).call('addWebmcpCustomTools', { params: { id }, body });
      if (o.json) return printJson({ tools });
      console.log(
        `added ${tools.length} custom tool${tools.length === 1 ? '' : 's'} to ${o.namespace}: ${tools.map((t) => `${t.tool.name} (${t.id})`).join(', ')}`,
      );
    });
  covers(custom.command('delete'), 'removeWebmcpCustomTool')
    .alias('rm')
    .description('remove a custom tool by its id (an invocation under way goes on)')
    .argument('<id>', 'session id or name')
    .argument('<tool-id>', 'the ct_ id, as custom-tools ls shows it')
    .addHelpText('after', '\nExample:\n  rbrowse webmcp custom-tools rm my-session ct_...')
    .action(async (id: string, toolId: string, _o, cmd: Command) => {
      await (await clientFor(cmd)).call('removeWebmcpCustomTool', { params: { id, tool_id: toolId } });
    });
  return custom;
}
