import { cdpCommands, type DevToolsEndpoint } from './chromium.js';

export type PageSend = (method: string, params?: object) => Promise<any>;

/**
 * Runs commands on the browser's active page: the first page target Chromium lists (the most
 * recently focused tab), attached with flatten so one browser connection carries them.
 */
export async function withActivePage<T>(browser: DevToolsEndpoint, run: (send: PageSend) => Promise<T>): Promise<T> {
  let result!: T;
  await cdpCommands(browser, async (send) => {
    const { targetInfos } = (await send('Target.getTargets')) as { targetInfos: { targetId: string; type: string; url: string }[] };
    const page = targetInfos.find((t) => t.type === 'page' && !t.url.startsWith('devtools://'));
    if (!page) throw new Error('the browser has no open page');
    const { sessionId } = await send('Target.attachToTarget', { targetId: page.targetId, flatten: true });
    result = await run((method, params) => send(method, params, sessionId));
  });
  return result;
}

/** Chromium's processes together used less CPU than this in the last interval: its start-up work is done. */
const QUIET_CPU_MS = 20;
const QUIET_INTERVAL_MS = 100;
/** A browser still busy after this long is called ready anyway (a page it was told to open may keep it busy). */
const QUIET_WAIT_MAX_MS = 5000;

/**
 * Waits until the browser's first page target exists and its renderer answers, and then until
 * the browser has finished starting: what a client connecting to a browser that has just
 * started would otherwise wait for (a standby browser is handed out only once this holds).
 * Chromium goes on working for about half a second after its page answers (nearly two cores'
 * worth here), and a first `goto` in that time took twice as long; its processes' CPU time,
 * which it reports itself, tells when that is over.
 */
export async function warmUp(browser: DevToolsEndpoint, timeoutMs = 15_000, opts: { stopWaiting?: () => boolean } = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await cdpCommands(browser, async (send) => {
    for (;;) {
      const { targetInfos } = (await send('Target.getTargets')) as { targetInfos: { targetId: string; type: string }[] };
      const page = targetInfos.find((t) => t.type === 'page');
      if (page) {
        const { sessionId } = await send('Target.attachToTarget', { targetId: page.targetId, flatten: true });
        await send('Runtime.evaluate', { expression: 'document.readyState' }, sessionId);
        break;
      }
      if (Date.now() > deadline) throw new Error('the browser opened no page');
      await new Promise((r) => setTimeout(r, 10));
    }
    const cpuMs = async () => {
      const { processInfo } = (await send('SystemInfo.getProcessInfo')) as { processInfo: { cpuTime: number }[] };
      return processInfo.reduce((sum, p) => sum + p.cpuTime, 0) * 1000;
    };
    const quietBy = Math.min(deadline, Date.now() + QUIET_WAIT_MAX_MS);
    // A browser that cannot report its processes is ready once its page answers, as before.
    let last = await cpuMs().catch(() => undefined);
    // stopWaiting: someone waits for this browser now (a claimed standby launch): its page answers, that is enough.
    while (last !== undefined && Date.now() < quietBy && !opts.stopWaiting?.()) {
      await new Promise((r) => setTimeout(r, QUIET_INTERVAL_MS));
      const now = await cpuMs().catch(() => undefined);
      if (now === undefined || now - last < QUIET_CPU_MS) return;
      last = now;
    }
  });
}

/**
 * Loads url in the browser's active page in place of its blank one, as if it had been the page's
 * first URL: the blank entry is dropped from the history (Page.navigate answers once the
 * navigation committed or failed), so history.length is 1, as in a browser started with url.
 */
export async function navigate(browser: DevToolsEndpoint, url: string): Promise<void> {
  await withActivePage(browser, async (send) => {
    const { errorText } = (await send('Page.navigate', { url })) as { errorText?: string };
    if (errorText) return; // an error page, as a cold start shows; nothing to drop
    // A navigation to another site moves the page to a new renderer, to which the page's target
    // reattaches a moment later: until then the reset is refused.
    for (let tries = 0; ; tries++) {
      try {
        return void (await send('Page.resetNavigationHistory'));
      } catch (err) {
        if (tries >= 100 || !/not attached/i.test(String((err as Error).message))) throw err;
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  });
}
