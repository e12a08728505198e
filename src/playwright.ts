/**
 * rbrowse for Playwright Test: `import { test, expect } from 'rbrowse/playwright'` instead of from
 * '@playwright/test', and each worker's browser is an rbrowse session (from standby when one is
 * ready) that Playwright drives over CDP. Tests get a fresh context each, as with Playwright's
 * own launch (`testWithFreshBrowser`: a session of its own for every test). Only HTTP and
 * connectOverCDP are used, so any Playwright version works.
 *
 * Where the sessions come from, first match: the `rbrowse` option's baseUrl and apiKey (in
 * playwright.config's `use`), KERNEL_BASE_URL and KERNEL_API_KEY, or the local daemon of
 * RBROWSE_HOME, started if it is not running.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test as base, expect, type Browser } from '@playwright/test';

export interface RbrowseOptions {
  /** A Kernel-compatible server (default: KERNEL_BASE_URL, else the local daemon). */
  baseUrl?: string;
  apiKey?: string;
  /** The body of POST /browsers for each worker's session (default: `{ headless: true }`). */
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

/** The local daemon through the CLI (`rbrowse env` starts it when needed and prints its URL and key). */
function localServer(): Server {
  const cli = fileURLToPath(new URL('../bin/rbrowse', import.meta.url));
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
    async ({ rbrowse, rbrowseServer: server }, use) => withSession(server, rbrowse.session ?? { headless: true }, use),
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
  rbrowseTestSession: async ({ rbrowse, rbrowseServer: server }, use) => withSession(server, rbrowse.session ?? { headless: true }, use),
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
