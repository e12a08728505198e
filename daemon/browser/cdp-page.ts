import { cdpCommands } from '../browser/chromium.js';

export type PageSend = (method: string, params?: object) => Promise<any>;

/**
 * Runs commands on the browser's active page: the first page target Chromium lists (the most
 * recently focused tab), attached with flatten so one browser connection carries them.
 */
export async function withActivePage<T>(wsUrl: string, run: (send: PageSend) => Promise<T>): Promise<T> {
  let result!: T;
  await cdpCommands(wsUrl, async (send) => {
    const { targetInfos } = (await send('Target.getTargets')) as { targetInfos: { targetId: string; type: string; url: string }[] };
    const page = targetInfos.find((t) => t.type === 'page' && !t.url.startsWith('devtools://'));
    if (!page) throw new Error('the browser has no open page');
    const { sessionId } = await send('Target.attachToTarget', { targetId: page.targetId, flatten: true });
    result = await run((method, params) => send(method, params, sessionId));
  });
  return result;
}
