import { Command, InvalidArgumentError } from 'commander';
import { positiveInt } from '../arg-parsers.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printJson } from '../output.js';

/** `Name: value`, repeatable, into one object. */
function header(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const i = value.indexOf(':');
  if (i < 1) throw new InvalidArgumentError('expected "Name: value"');
  return { ...previous, [value.slice(0, i).trim()]: value.slice(i + 1).trim() };
}

/** `rbrowse curl ID URL`: an HTTP request made by the session's browser; prints the body. */
export function curlCommand(): Command {
  return covers(new Command('curl'), 'browserCurl')
    .description("an HTTP request made by the session's browser (its cookies, proxy and TLS); prints the body")
    .argument('<id>', 'session id or name')
    .argument('<url>', 'http(s) URL')
    .option('-X, --method <method>', 'GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS', 'GET')
    .option('-H, --header <header>', '"Name: value" (repeatable)', header)
    .option('-d, --body <body>', 'request body')
    .option('--response-encoding <encoding>', 'utf8 or base64')
    .option('--timeout-ms <ms>', 'give up after this long (default 30000)', positiveInt)
    .option('--json', 'print the API object (status, headers, body)')
    .addHelpText('after', '\nExample:\n  rbrowse curl my-session https://example.com/api/me -H "Accept: application/json"')
    .action(async (id: string, url: string, o, cmd: Command) => {
      const r = await (await clientFor(cmd)).call('browserCurl', {
        params: { id },
        body: {
          url,
          method: o.method.toUpperCase(),
          ...(o.header ? { headers: o.header } : {}),
          ...(o.body !== undefined ? { body: o.body } : {}),
          ...(o.responseEncoding ? { response_encoding: o.responseEncoding } : {}),
          ...(o.timeoutMs ? { timeout_ms: o.timeoutMs } : {}),
        },
      });
      if (o.json) return printJson(r);
      process.stdout.write(r.body);
      if (r.status >= 400) process.exitCode = 1;
    });
}
