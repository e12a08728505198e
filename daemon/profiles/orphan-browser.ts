import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cdpCommands } from '../browser/chromium.js';
import { findMarkedProcesses, killMarked, waitGone, within } from '../browser/procs.js';

/**
 * Ends a browser a crashed daemon left running, as a live session ends: Browser.close first (so
 * Chromium flushes cookies and storage), through the endpoint it wrote into its user data
 * (DevToolsActivePort), then every process of the session is killed. Only a process still carrying
 * the session's marker is addressed, so a stale port file never reaches another program.
 * Resolves whether the browser closed by itself.
 */
export async function endOrphanBrowser(o: {
  home: string;
  sessionId: string;
  pid?: number;
  userDataDir: string;
  graceMs?: number;
}): Promise<boolean> {
  const grace = o.graceMs ?? 5000;
  const running = o.pid !== undefined && (await findMarkedProcesses(o.home, o.sessionId)).includes(o.pid);
  let graceful = false;
  if (running) {
    const [port, path] = (await readFile(join(o.userDataDir, 'DevToolsActivePort'), 'utf8').catch(() => '')).split('\n');
    if (port && path?.startsWith('/devtools/browser/')) {
      const wsUrl = `ws://127.0.0.1:${Number(port)}${path}`;
      await within(grace, cdpCommands(wsUrl, (send) => send('Browser.close')).catch(() => {}));
      graceful = await waitGone([o.pid!], grace);
    }
  }
  await killMarked(o.home, o.sessionId);
  return graceful;
}
