import type { PlaywrightExecuteBody, PlaywrightExecuteResult } from '../../../src/api/playwright.js';
import { BOX_NODE, BOX_RUNTIME } from '../../box/box-spec.js';
import type { LiveSession } from '../../sessions/live-session.js';
import { processesOf } from '../process/session-processes.js';

const DEFAULT_TIMEOUT_SEC = 60;

/** The runner as the session's box sees it (rbrowse's runtime is at /opt/rbrowse there). */
const RUNNER_PATH = `${BOX_RUNTIME}/daemon/in-session/playwright/runner.mjs`;

interface RunnerAnswer {
  success: boolean;
  result?: unknown;
  error?: string;
  stack?: string;
  tab?: { created: boolean; target_id: string };
}

/**
 * Runs Playwright code against a session's browser (Kernel's browsers.playwright.execute) in a
 * Node process of its own inside the session's namespace, as the session's user: it connects
 * through the CDP gateway (so a `browser.close()` in the code leaves the session alone), a loop
 * or a crash ends only it, and the timeout kills it. Kernel's own runs in one long-lived process
 * per VM, which a `while (true)` blocks for good.
 */
export async function executePlaywright(
  session: LiveSession,
  cdpUrl: string,
  body: PlaywrightExecuteBody,
  abort: AbortSignal,
  /** The tab `page` is bound to (a named executor's); otherwise the active one, not one of `avoid` (the named executors' tabs). */
  tabs: { targetId?: string; avoid?: string[] } = {},
): Promise<PlaywrightExecuteResult> {
  const timeoutSec = body.timeout_sec ?? DEFAULT_TIMEOUT_SEC;
  const r = await processesOf(session).runToEnd(
    { command: BOX_NODE, args: [RUNNER_PATH], timeout_sec: timeoutSec },
    { abort, input: JSON.stringify({ code: body.code, cdp: cdpUrl, ...tabs }), resultPipe: true },
  );
  const stdout = r.stdout.toString();
  const stderr = r.stderr.toString();
  if (r.timedOut) return { success: false, error: `the code ran longer than timeout_sec (${timeoutSec} s) and was stopped`, stdout, stderr };
  let answer: RunnerAnswer;
  try {
    answer = JSON.parse(r.result.toString()) as RunnerAnswer;
  } catch {
    return { success: false, error: `the code's process ended without an answer (exit code ${r.exitCode})`, stdout, stderr };
  }
  const tab = answer.tab ? { tab: answer.tab } : {};
  if (answer.success) return { success: true, result: answer.result ?? null, stdout, stderr, ...tab };
  return { success: false, error: answer.error ?? 'failed', stdout, stderr: answer.stack ? `${stderr}${answer.stack}\n` : stderr, ...tab };
}
