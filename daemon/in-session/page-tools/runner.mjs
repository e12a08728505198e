// Playwright's own MCP server (@playwright/mcp) on this session's browser, in the session's box as
// its user: the daemon speaks MCP with it over stdin and stdout (see page-tools.ts). Its argument
// is a JSON object: the browser's DevTools endpoint inside the box, where files it writes go, and
// the longest text an answer may carry.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createConnection } from '@playwright/mcp';

const { cdp, outputDir, maxChars } = JSON.parse(process.argv[2] ?? '{}');
mkdirSync(outputDir, { recursive: true });

const server = await createConnection({
  browser: { cdpEndpoint: cdp },
  outputDir,
  // Paths an answer names are the session's own, for the fs tools to read.
  filePaths: 'absolute',
  imageResponses: 'allow',
});

let saved = 0;
/**
 * An answer's text past maxChars (a snapshot of a huge page) is cut at a line break before it; the
 * whole text goes to a file in the session, and the answer says where and how to ask for less.
 */
function bounded(message) {
  const content = message?.result?.content;
  if (!Array.isArray(content)) return message;
  const texts = content.filter((c) => c?.type === 'text' && typeof c.text === 'string');
  const total = texts.reduce((n, c) => n + c.text.length, 0);
  if (total <= maxChars) return message;
  const whole = texts.map((c) => c.text).join('\n');
  const file = join(outputDir, `answer-${Date.now()}-${++saved}.md`);
  writeFileSync(file, whole);
  let room = maxChars;
  for (const c of texts) {
    if (c.text.length <= room) {
      room -= c.text.length;
      continue;
    }
    const cut = c.text.lastIndexOf('\n', room);
    c.text = c.text.slice(0, cut > room / 2 ? cut : room);
    room = 0;
  }
  content.push({
    type: 'text',
    text: `### Truncated\nThis answer had ${total} characters; the first ${maxChars} are above. The whole of it is in the session's file ${file} (read it with fs_read_file), or ask for less: browser_snapshot with depth (levels of the tree) or target (the ref or selector of one part of the page).`,
  });
  return message;
}

const transport = new StdioServerTransport();
const send = transport.send.bind(transport);
transport.send = (message, options) => send(bounded(message), options);
transport.onclose = () => process.exit(0);
await server.connect(transport);
process.stdin.on('end', () => process.exit(0));
