/**
 * rbrowse for Playwright Test: `import { test, expect } from 'rbrowse/playwright'` instead of from
 * '@playwright/test', and each worker's browser is an rbrowse session (from standby when one is
 * ready) that Playwright drives over CDP. Tests get a fresh context each, as with Playwright's
 * own launch (`testWithFreshBrowser`: a session of its own for every test). Only HTTP and
 * connectOverCDP are used, so any Playwright from 1.45 on works; the project's own
 * @playwright/test is used (a peer dependency), never a copy of rbrowse's.
 *
 * Where the sessions come from, first match: the `rbrowse` option's baseUrl and apiKey (in
 * playwright.config's `use`), KERNEL_BASE_URL and KERNEL_API_KEY, or the local daemon of
 * RBROWSE_HOME through the package's own CLI, started if it is not running.
 */
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test as base, expect, type Browser } from '@playwright/test';

export interface RbrowseOptions {
  /** A Kernel-compatible server (default: KERNEL_BASE_URL, else the local daemon). */
  baseUrl?: string;
  apiKey?: string;
  /** A headful session (a live view to watch) when false; default: Playwright's own `headless` option. */
  headless?: boolean;
  /** The session's screen size (headful) and first window. */
  viewport?: { width: number; height: number };
  /** A saved profile to load (and save into, with save_changes). */
  profile?: { name?: string; id?: string; save_changes?: boolean };
  /** A proxy of the organization, by id. */
  proxy?: string;
  stealth?: boolean;
  /** More of the body of POST /browsers (extensions, timeout_seconds, ...); the fields above win. */
  session?: Record<string, unknown>;
}

export interface RbrowseSession {
  session_id: string;
  cdp_ws_url: string;
  browser_live_view_url?: string;
  [field: string]: unknown;
}

interface Server {
  baseUrl: string;
  apiKey: string;
}

/** This file's directory, in the ESM build (import.meta.url) and the CommonJS one (__dirname). */
function here(): string {
  return typeof __dirname === 'string' ? __dirname : dirname(fileURLToPath(import.meta.url));
}

/** The local daemon through the package's CLI (`rbrowse env` starts it when needed and prints its URL and key). */
function localServer(): Server {
  const cli = join(here(), '..', 'bin', 'rbrowse');
  const out = execFileSync(cli, ['env'], { encoding: 'utf8', env: process.env });
  const value = (name: string) => new RegExp(`^export ${name}=(.*)$`, 'm').exec(out)?.[1]?.trim();
  const baseUrl = value('KERNEL_BASE_URL');
  const apiKey = value('KERNEL_API_KEY');
  if (!baseUrl || !apiKey) throw new Error(`rbrowse env printed no server:\n${out}`);
  return { baseUrl, apiKey };
}

function serverOf(opts: RbrowseOptions): Server {
  const baseUrl = opts.baseUrl ?? process.env.KERNEL_BASE_URL;
  const apiKey = opts.apiKey ?? process.env.KERNEL_API_KEY;
  if (baseUrl && apiKey) return { baseUrl: baseUrl.replace(/\/+$/, ''), apiKey };
  return localServer();
}

/** The body of POST /browsers for `opts`, with Playwright's `headless` where rbrowse's is not set. */
function sessionBody(opts: RbrowseOptions, headless: boolean): Record<string, unknown> {
  return {
    ...opts.session,
    headless: opts.headless ?? (opts.session?.headless as boolean | undefined) ?? headless,
    ...(opts.viewport ? { viewport: opts.viewport } : {}),
    ...(opts.profile ? { profile: opts.profile } : {}),
    ...(opts.proxy ? { proxy_id: opts.proxy } : {}),
    ...(opts.stealth !== undefined ? { stealth: opts.stealth } : {}),
  };
}

async function api(server: Server, method: string, path: string, body?: unknown): Promise<Response> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${server.apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  // A session already gone (its timeout, a daemon stop) is what its DELETE wanted anyway.
  if (!res.ok && !(method === 'DELETE' && res.status === 404)) throw new Error(`rbrowse ${method} ${path}: ${res.status} ${await res.text()}`);
  return res;
}

/** A session for the length of `use`, ended after it. */
async function withSession(server: Server, body: Record<string, unknown>, use: (session: RbrowseSession) => Promise<void>): Promise<void> {
  const session = (await (await api(server, 'POST', '/browsers', body)).json()) as RbrowseSession;
  try {
    await use(session);
  } finally {
    await api(server, 'DELETE', `/browsers/${session.session_id}`);
  }
}

/** The server a worker's session is on, to call its API (its files, for downloads: docs/playwright.md). */
export interface RbrowseServer extends Server {
  /** One API call with the key; error answers throw (a DELETE's 404 does not). */
  api(method: string, path: string, body?: unknown): Promise<Response>;
}

export const test = base.extend<object, { rbrowse: RbrowseOptions; rbrowseServer: RbrowseServer; rbrowseSession: RbrowseSession; browser: Browser }>({
  rbrowse: [{}, { option: true, scope: 'worker' }],
  rbrowseServer: [
    async ({ rbrowse }, use) => {
      const server = serverOf(rbrowse);
      await use({ ...server, api: (method, path, body) => api(server, method, path, body) });
    },
    { scope: 'worker' },
  ],
  rbrowseSession: [
    async ({ rbrowse, headless, rbrowseServer: server }, use) => withSession(server, sessionBody(rbrowse, headless), use),
    { scope: 'worker' },
  ],
  browser: [
    async ({ playwright, rbrowseSession }, use) => {
      const browser = await playwright.chromium.connectOverCDP(rbrowseSession.cdp_ws_url);
      try {
        await use(browser);
      } finally {
        await browser.close();
      }
    },
    { scope: 'worker' },
  ],
});

/**
 * A fresh rbrowse session for every test rather than one per worker: each test's context is a
 * new context of its own session (from standby when one is ready), which ends with the test. For
 * suites that want nothing shared between tests, browser state included.
 */
export const testWithFreshBrowser = test.extend<{ rbrowseTestSession: RbrowseSession }>({
  rbrowseTestSession: async ({ rbrowse, headless, rbrowseServer: server }, use) => withSession(server, sessionBody(rbrowse, headless), use),
  context: async ({ playwright, rbrowseTestSession, contextOptions, viewport }, use) => {
    const browser = await playwright.chromium.connectOverCDP(rbrowseTestSession.cdp_ws_url);
    try {
      const context = await browser.newContext({ ...contextOptions, ...(viewport !== undefined ? { viewport } : {}) });
      await use(context);
      await context.close();
    } finally {
      await browser.close();
    }
  },
});

export { expect };
