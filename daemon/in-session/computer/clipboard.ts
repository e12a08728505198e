import { ApiError, ServiceUnavailableError } from '../../../src/errors.js';
import { cdpCommands, type DevToolsEndpoint } from '../../browser/chromium.js';

/**
 * The session's clipboard is its browser's (on X11 the CLIPBOARD selection, headless Chromium's
 * own otherwise), reached through the Clipboard API of a page the daemon opens for the purpose:
 * hidden (no client lists or auto-attaches it), in a browser context of its own (the permission
 * and focus it needs touch none of the user's pages), on file:///dev/null (an empty secure
 * context, which about:blank is not; any build has it, where chrome:// pages are full Chromium's),
 * and gone when the call returns. The same for headful and headless.
 */
async function withClipboardPage<T>(browser: DevToolsEndpoint, run: (evaluate: (expression: string) => Promise<unknown>) => Promise<T>): Promise<T> {
  try {
    return await clipboardPage(browser, run);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ServiceUnavailableError(`the browser's clipboard could not be reached (${err instanceof Error ? err.message : String(err)})`);
  }
}

/** How long one clipboard call may take, its hidden page's set-up included. */
const CLIPBOARD_TIMEOUT_MS = 10_000;

async function clipboardPage<T>(browser: DevToolsEndpoint, run: (evaluate: (expression: string) => Promise<unknown>) => Promise<T>): Promise<T> {
  let result!: T;
  await cdpCommands(
    browser,
    async (send) => {
      const { browserContextId } = await send('Target.createBrowserContext', { disposeOnDetach: true });
      try {
        const { targetId } = await send('Target.createTarget', { url: 'file:///dev/null', browserContextId, background: true, hidden: true });
        const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
        await send('Browser.grantPermissions', { permissions: ['clipboardReadWrite', 'clipboardSanitizedWrite'], browserContextId });
        // The Clipboard API answers only a focused document.
        await send('Emulation.setFocusEmulationEnabled', { enabled: true }, sessionId);
        result = await run(async (expression) => {
          const r = await send('Runtime.evaluate', { expression, awaitPromise: true, userGesture: true, returnByValue: true }, sessionId);
          if (r.exceptionDetails)
            throw new ServiceUnavailableError(`the clipboard refused: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
          return r.result.value;
        });
      } finally {
        await send('Target.disposeBrowserContext', { browserContextId }).catch(() => {});
      }
    },
    { timeoutMs: CLIPBOARD_TIMEOUT_MS },
  );
  return result;
}

/** The clipboard's text ('' when it holds none). */
export function readClipboard(browser: DevToolsEndpoint): Promise<string> {
  return withClipboardPage(browser, async (evaluate) => String((await evaluate('navigator.clipboard.readText()')) ?? ''));
}

export function writeClipboard(browser: DevToolsEndpoint, text: string): Promise<void> {
  return withClipboardPage(browser, async (evaluate) => void (await evaluate(`navigator.clipboard.writeText(${JSON.stringify(text)})`)));
}
