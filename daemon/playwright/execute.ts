import { existsSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PlaywrightExecuteBody, PlaywrightExecuteResult } from '../../src/api/playwright.js';
import { NODE_BINARY } from '../apps/harness-command.js';
import type { LiveSession } from '../sessions/live-session.js';

const DEFAULT_TIMEOUT_SEC = 60;

/** runner.mjs is not bundled: beside this module in the sources, in daemon/playwright/ from the bundle (dist/*.js). */
const RUNNER_PATH: string = (() => {
  const candidates = ['./runner.mjs', '../daemon/playwright/runner.mjs'].map((rel) => fileURLToPath(new URL(rel, import.meta.url)));
  return candidates.find((p) => existsSync(p)) ?? candidates[0]!;
})();

/**
 * What the runner needs from the host inside the session's namespace, read-only: rbrowse's
 * package (the runner, playwright, esbuild) and its Node, wherever they are installed.
 */
const RUNNER_FILES: string[] = (() => {
  const root = resolve(dirname(RUNNER_PATH), '../..');
  const node = realpathSync(NODE_BINARY);
  return node.startsWith(`${root}/`) ? [root] : [root, node];
})();

interface RunnerAnswer {
  success: boolean;
  result?: unknown;
  error?: string;
  stack?: string;
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
): Promise<PlaywrightExecuteResult> {
  const timeoutSec = body.timeout_sec ?? DEFAULT_TIMEOUT_SEC;
  const r = await session.processes.runToEnd(
    { command: NODE_BINARY, args: [RUNNER_PATH], timeout_sec: timeoutSec },
    { abort, input: JSON.stringify({ code: body.code, cdp: cdpUrl }), resultPipe: true, readOnly: RUNNER_FILES },
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
  if (answer.success) return { success: true, result: answer.result ?? null, stdout, stderr };
  return { success: false, error: answer.error ?? 'failed', stdout, stderr: answer.stack ? `${stderr}${answer.stack}\n` : stderr };
}
