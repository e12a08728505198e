import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Argument, Command } from 'commander';
import { TOOL_GROUPS } from '../../src/mcp/tools.js';
import { clientFor } from '../context.js';

/** The command an MCP client runs: this checkout's bin/rbrowse, whatever the client's PATH. */
function rbrowseCommand(): string {
  // dist/cli.js (built) or cli/commands/mcp.ts (tsx): bin/ is beside either's parent.
  const here = dirname(fileURLToPath(import.meta.url));
  for (const up of ['..', '../..']) {
    const bin = resolve(here, up, 'bin/rbrowse');
    if (existsSync(bin)) return bin;
  }
  return 'rbrowse';
}

interface ServerEntry {
  command: string;
  args: string[];
  env?: Record<string, string>;
}

/** The daemon the server talks to: a non-default home or server goes into the client's config. */
function entry(): ServerEntry {
  const env: Record<string, string> = {};
  for (const name of ['RBROWSE_HOME', 'RBROWSE_PORT']) if (process.env[name]) env[name] = process.env[name]!;
  return { command: rbrowseCommand(), args: ['mcp'], ...(Object.keys(env).length ? { env } : {}) };
}

interface ClientConfig {
  /** Where the client reads its MCP servers: a project file (in the current directory) or the user's. */
  file: () => string;
  /** The configuration with rbrowse's server added (or replaced), from the file's current text. */
  merge: (current: string | undefined, server: ServerEntry) => string;
}

/** A JSON file whose servers live under `key` (mcpServers, servers, context_servers). */
function jsonUnder(key: string, shape: (s: ServerEntry) => object = (s) => s): ClientConfig['merge'] {
  return (current, server) => {
    let config: Record<string, unknown> = {};
    if (current?.trim()) {
      try {
        config = JSON.parse(current) as Record<string, unknown>;
      } catch {
        // A settings file with comments (JSONC) is the user's to edit; rbrowse does not rewrite it.
        throw new Error(
          `it is not plain JSON (comments?); add this under "${key}" yourself:\n${JSON.stringify({ rbrowse: shape(server) }, null, 2)}`,
        );
      }
    }
    const servers = (config[key] ?? {}) as Record<string, unknown>;
    config[key] = { ...servers, rbrowse: shape(server) };
    return `${JSON.stringify(config, null, 2)}\n`;
  };
}

/** Codex's TOML: rbrowse's table replaced or appended, the rest left as it is. */
function codexToml(current: string | undefined, server: ServerEntry): string {
  const q = (s: string) => JSON.stringify(s);
  const lines = [
    '[mcp_servers.rbrowse]',
    `command = ${q(server.command)}`,
    `args = [${server.args.map(q).join(', ')}]`,
    ...(server.env
      ? [
          `env = { ${Object.entries(server.env)
            .map(([k, v]) => `${k} = ${q(v)}`)
            .join(', ')} }`,
        ]
      : []),
  ];
  // rbrowse's table runs from its header to the next table header (a line that starts with "[").
  const kept: string[] = [];
  let inOurs = false;
  for (const line of (current ?? '').split('\n')) {
    if (/^\s*\[/.test(line)) inOurs = /^\s*\[mcp_servers\.rbrowse[.\]]/.test(line);
    if (!inOurs) kept.push(line);
  }
  const rest = kept.join('\n').trimEnd();
  return `${rest ? `${rest}\n\n` : ''}${lines.join('\n')}\n`;
}

const home = () => process.env.HOME ?? homedir();
const xdgConfig = () => process.env.XDG_CONFIG_HOME ?? join(home(), '.config');

/** Each client's own place and format, as its documentation gives them (Linux paths). */
export const MCP_CLIENTS: Record<string, ClientConfig> = {
  'claude-code': { file: () => resolve('.mcp.json'), merge: jsonUnder('mcpServers', (s) => ({ type: 'stdio', ...s })) },
  'claude-desktop': { file: () => join(xdgConfig(), 'Claude/claude_desktop_config.json'), merge: jsonUnder('mcpServers') },
  cursor: { file: () => join(home(), '.cursor/mcp.json'), merge: jsonUnder('mcpServers') },
  vscode: { file: () => resolve('.vscode/mcp.json'), merge: jsonUnder('servers', (s) => ({ type: 'stdio', ...s })) },
  windsurf: { file: () => join(home(), '.codeium/windsurf/mcp_config.json'), merge: jsonUnder('mcpServers') },
  zed: { file: () => join(xdgConfig(), 'zed/settings.json'), merge: jsonUnder('context_servers', (s) => ({ source: 'custom', ...s })) },
  codex: { file: () => join(process.env.CODEX_HOME ?? join(home(), '.codex'), 'config.toml'), merge: codexToml },
};

export function mcpCommand(): Command {
  const mcp = new Command('mcp').description("an MCP server for AI agents: rbrowse's browsers as tools (stdio)");
  mcp
    .command('serve', { isDefault: true })
    .description("serve MCP over stdin and stdout (what an MCP client runs): a relay to the daemon's /mcp, which holds the connection's sessions")
    .option('--tools <groups>', `only these tool groups, comma-separated (${TOOL_GROUPS.join(', ')}); default: all`)
    .addHelpText(
      'after',
      "\nThe connection's own browser session ends when this process does, unless the agent kept it (keep_browser).\n\nExamples:\n  rbrowse mcp                  # as an MCP client's command\n  rbrowse mcp --tools browsers,page\n  rbrowse mcp install cursor   # or configure the client to run it",
    )
    .action(async (o: { tools?: string }, cmd: Command) => {
      const client = await clientFor(cmd);
      const [{ StdioServerTransport }, { StreamableHTTPClientTransport }] = await Promise.all([
        import('@modelcontextprotocol/sdk/server/stdio.js'),
        import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
      ]);
      const url = new URL('/mcp', client.baseUrl);
      if (o.tools) url.searchParams.set('tools', o.tools);
      // Messages pass as they are, both ways: the daemon's endpoint is the server (one set of
      // tools, one place that holds the sessions), this process only the client's stdio.
      const daemon = new StreamableHTTPClientTransport(url, { requestInit: { headers: client.authHeaders() } });
      const stdio = new StdioServerTransport();
      let closing = false;
      const close = async (code = 0) => {
        if (closing) return;
        closing = true;
        // The daemon ends the connection (and its own session) at once, rather than when it goes idle.
        await daemon.terminateSession().catch(() => {});
        await daemon.close().catch(() => {});
        process.exit(code);
      };
      stdio.onmessage = (message) => {
        daemon.send(message).catch((err: Error) => {
          // A request the daemon could not take is answered as the protocol wants, not dropped.
          const id = (message as { id?: string | number }).id;
          if (id !== undefined) void stdio.send({ jsonrpc: '2.0', id, error: { code: -32603, message: `the rbrowse daemon: ${err.message}` } });
        });
      };
      daemon.onmessage = (message) => void stdio.send(message);
      daemon.onerror = (err) => process.stderr.write(`rbrowse mcp: ${err.message}\n`);
      stdio.onclose = () => void close();
      await daemon.start();
      await stdio.start();
      process.stdin.once('end', () => void close());
      for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void close(0));
      // Served until the client closes stdin.
      await new Promise(() => {});
    });
  mcp
    .command('install')
    .description("add rbrowse to an MCP client's configuration, and print what was written")
    .addArgument(new Argument('<client>', 'the MCP client').choices(Object.keys(MCP_CLIENTS)))
    .addHelpText('after', '\nExample:\n  rbrowse mcp install claude-code   # .mcp.json in this directory')
    .action((name: string) => {
      const client = MCP_CLIENTS[name]!;
      const file = client.file();
      const current = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
      let next: string;
      try {
        next = client.merge(current, entry());
      } catch (err) {
        throw new Error(`${file}: ${(err as Error).message}`);
      }
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, next);
      process.stdout.write(`${current === undefined ? 'wrote' : 'updated'} ${file}:\n${next}`);
    });
  return mcp;
}
