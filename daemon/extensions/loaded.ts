import { normalize } from 'node:path';
import { cdpCommands } from '../browser/chromium.js';
import { sleep } from '../browser/procs.js';

/**
 * The paths among `expected` that Chromium has not loaded as unpacked extensions within
 * `timeoutMs`. Chromium skips an extension it cannot load without a word on stderr (a dialog on
 * a display), so CDP's Extensions.getExtensions is asked until every path is there. Resolves
 * null when this Chromium lacks the command and nothing can be told.
 */
export async function unloadedExtensions(wsUrl: string, expected: string[], timeoutMs: number): Promise<string[] | null> {
  const want = new Set(expected.map((p) => normalize(p)));
  let missing: string[] | null = [...want];
  await cdpCommands(wsUrl, async (send) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let loaded: { path: string }[];
      try {
        ({ extensions: loaded } = (await send('Extensions.getExtensions')) as { extensions: { path: string }[] });
      } catch (err) {
        if (/wasn't found|not found/i.test((err as Error).message)) {
          missing = null;
          return;
        }
        throw err;
      }
      const have = new Set(loaded.map((e) => normalize(e.path)));
      missing = [...want].filter((p) => !have.has(p));
      if (missing.length === 0 || Date.now() > deadline) return;
      await sleep(100);
    }
  });
  return missing;
}
