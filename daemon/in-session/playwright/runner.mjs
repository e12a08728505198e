// One Playwright execution (POST /browsers/{id}/playwright/execute), in a process of its own
// inside the session's namespace: the daemon sends {code, cdp, targetId?} on stdin and reads one
// JSON answer from fd 3, so whatever the code prints stays its stdout and stderr. A loop or a
// crash here ends this process only; the daemon kills it at the timeout. With targetId (a named
// executor's tab) `page` is that tab; without, the active one, never one of `avoid` (the named
// executors' tabs).
import { writeSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import { transform } from 'esbuild';
import { chromium } from 'playwright';

let connected;
const answer = async (value) => {
  writeSync(3, safeJson(value));
  // A clean goodbye to the browser before the process ends: a connection cut by the exit leaves
  // Chromium's auto-attach of this client in place for a moment, and a page created then (the
  // daemon's clipboard page) waited for a debugger that was gone.
  await connected?.close().catch(() => {});
  process.exit(0);
};

/** The result as JSON: undefined is null; what JSON cannot carry (cycles, BigInt) becomes its string form. */
function safeJson(value) {
  try {
    return JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v === undefined ? null : v)) ?? 'null';
  } catch {
    return JSON.stringify({ ...value, result: String(value.result) });
  }
}

const { code, cdp, targetId, avoid = [] } = JSON.parse(await text(process.stdin));

// TypeScript as well as JavaScript: the body is compiled inside an async function, so top-level
// await and return work, then taken out again.
let body;
try {
  const out = await transform(`async function __body__() {\n${code}\n}`, { loader: 'ts', target: 'es2022' });
  body = out.code.slice(out.code.indexOf('{') + 1, out.code.lastIndexOf('}'));
} catch (err) {
  await answer({ success: false, error: `the code does not compile: ${err.message}` });
}

const browser = await chromium
  .connectOverCDP(cdp, { timeout: 30_000 })
  .catch((err) => answer({ success: false, error: `could not connect to the session's browser: ${err.message}` }));
connected = browser;
const context = browser.contexts()[0] ?? (await browser.newContext());

/** A page's CDP target id: what the daemon names tabs by. */
async function targetOf(page) {
  const cdpSession = await context.newCDPSession(page);
  try {
    return (await cdpSession.send('Target.getTargetInfo')).targetInfo.targetId;
  } finally {
    await cdpSession.detach().catch(() => {});
  }
}

let page;
let tab;
if (targetId) {
  for (const candidate of context.pages()) if ((await targetOf(candidate).catch(() => undefined)) === targetId) page = candidate;
  if (!page) await answer({ success: false, error: "the executor's tab is gone" });
} else {
  // The active tab: not one a named executor owns (avoid), a visible one first. Playwright's
  // order of pages is not the browser's, so the first page could be a named executor's tab.
  const candidates = [];
  for (const candidate of context.pages()) {
    const id = await targetOf(candidate).catch(() => undefined);
    if (id && !avoid.includes(id)) candidates.push({ page: candidate, id });
  }
  // A page held by a dialog never answers: it counts as not visible after a second.
  const visibility = (p) => Promise.race([p.evaluate(() => document.visibilityState).catch(() => ''), new Promise((r) => setTimeout(r, 1000, ''))]);
  // One page (the common case) needs no look at which is in front.
  let chosen = candidates[0];
  if (candidates.length > 1)
    for (const c of candidates)
      if ((await visibility(c.page)) === 'visible') {
        chosen = c;
        break;
      }
  page = chosen?.page ?? (await context.newPage());
  tab = { created: !chosen, target_id: chosen?.id ?? (await targetOf(page)) };
}
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;
try {
  const result = await new AsyncFunction('page', 'context', 'browser', body)(page, context, browser);
  await answer({ success: true, result: result === undefined ? null : result, tab });
} catch (err) {
  await answer({ success: false, error: err instanceof Error ? err.message : String(err), stack: err instanceof Error ? err.stack : undefined, tab });
}
