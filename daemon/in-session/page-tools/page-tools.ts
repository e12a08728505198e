import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ServiceUnavailableError } from '../../../src/errors.js';
import type { BoxProcess } from '../../box/box.js';
import { BOX_NODE, BOX_RUNTIME, BOX_USER } from '../../box/box-spec.js';
import type { LiveSession, ServiceKind, SessionService } from '../../sessions/live-session.js';
import { processesOf } from '../process/session-processes.js';
import TOOLS from './tools.json' with { type: 'json' };

/** Playwright MCP's tools, as the @playwright/mcp this daemon runs declares them (tools.json, checked by test/mcp-page-tools.test.ts). */
export interface PageToolDef {
  name: string;
  description?: string;
  inputSchema: { type: 'object'; properties?: Record<string, object>; required?: string[]; [k: string]: unknown };
  annotations?: Record<string, unknown>;
}
export const PAGE_TOOLS = TOOLS as unknown as PageToolDef[];

/** The runner as the session's box sees it. */
const RUNNER_PATH = `${BOX_RUNTIME}/daemon/in-session/page-tools/runner.mjs`;
/** Where Playwright MCP's files (snapshots, screenshots, console logs) go: the session's own, for the fs tools. */
export const PAGE_TOOLS_DIR = `${BOX_USER.home}/playwright-mcp`;
/** The longest text one answer carries (a snapshot of a 20,000-item page is a million characters); the rest goes to a file. */
export const MAX_ANSWER_CHARS = 100_000;
/** What the daemon reads of one message at most: the runner's bounded answer, images included, with room to spare. */
const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;
/** A call that runs longer fails (its tool may still finish in the page). */
const CALL_TIMEOUT_MS = 120_000;
const START_TIMEOUT_MS = 60_000;

/**
 * MCP over a box program's stdin and stdout: newline-delimited JSON-RPC, as the SDK's stdio
 * transport speaks it, each message bounded so a runner gone wrong cannot make the daemon hold
 * more than one.
 */
class BoxStdioTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private buffer = '';

  constructor(private readonly child: BoxProcess) {}

  async start(): Promise<void> {
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => {
      this.buffer += chunk;
      for (let nl = this.buffer.indexOf('\n'); nl >= 0; nl = this.buffer.indexOf('\n')) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        if (!line.trim()) continue;
        try {
          this.onmessage?.(JSON.parse(line) as JSONRPCMessage);
        } catch (err) {
          this.onerror?.(err as Error);
        }
      }
      if (this.buffer.length > MAX_MESSAGE_BYTES) {
        this.onerror?.(new Error('a message of Playwright MCP was over the limit'));
        this.child.kill('SIGKILL');
      }
    });
    void this.child.exited.then(() => this.onclose?.());
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.child.stdin?.write(`${JSON.stringify(message)}\n`);
  }

  async close(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.child.exited;
  }
}

/**
 * Playwright MCP (@playwright/mcp, not a copy of it) on one session: a process in the session's
 * box, as its user, connected to the session's browser through the CDP gateway, started on the
 * first call and ended when the last MCP connection using it lets it go (its CDP connection holds
 * the session while it runs) or with the session. Its state (the refs of the last snapshot, the
 * selected tab, console and network logs) is the session's, shared by whoever drives it.
 */
export class PageTools implements SessionService {
  private client?: Promise<Client>;
  private process?: BoxProcess;
  private readonly users = new Set<string>();
  private stopped = false;

  constructor(private readonly session: LiveSession) {}

  /** One tool call of `user` (an MCP connection), whose use of the runner lasts until release(user). */
  async call(user: string, cdpUrl: string, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    this.users.add(user);
    const client = await this.connect(cdpUrl);
    const release = this.session.hold('api');
    try {
      return (await client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS })) as CallToolResult;
    } finally {
      release();
    }
  }

  /** `user` is done with the runner: the last one to go ends it, which lets the session go idle. */
  async release(user: string): Promise<void> {
    if (!this.users.delete(user) || this.users.size > 0) return;
    await this.end();
  }

  private connect(cdpUrl: string): Promise<Client> {
    if (this.stopped) throw new ServiceUnavailableError('the session is ending');
    this.client ??= this.start(cdpUrl).catch((err: unknown) => {
      this.client = undefined;
      throw new ServiceUnavailableError(`Playwright MCP could not start in the session: ${(err as Error).message}`);
    });
    return this.client;
  }

  private async start(cdpUrl: string): Promise<Client> {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const config = JSON.stringify({ cdp: cdpUrl, outputDir: PAGE_TOOLS_DIR, maxChars: MAX_ANSWER_CHARS });
    const child = processesOf(this.session).helper([BOX_NODE, RUNNER_PATH, config], { stdin: true });
    this.process = child;
    child.stderr?.resume();
    const client = new Client({ name: 'rbrowse', version: '1' });
    client.onclose = () => {
      // A runner that died (killed, crashed) is started afresh by the next call.
      if (this.process === child) {
        this.client = undefined;
        this.process = undefined;
      }
    };
    await client.connect(new BoxStdioTransport(child), { timeout: START_TIMEOUT_MS });
    return client;
  }

  private async end(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    this.client = undefined;
    if (!child) return;
    child.kill('SIGKILL');
    await child.exited;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.end();
  }
}

const newPageTools: ServiceKind<PageTools> = (session) => new PageTools(session);

/** The session's Playwright MCP; it ends with the session. */
export const pageToolsOf = (session: LiveSession): PageTools => session.service(newPageTools);
