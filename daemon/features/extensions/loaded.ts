import { normalize } from 'node:path';
import { BadRequestError } from '../../../src/errors.js';
import type { FeatureLaunch } from '../../sessions/features.js';
import { cdpCommands, type DevToolsEndpoint } from '../../browser/chromium.js';
import { sleep } from '../../lib/procs.js';

/**
 * The paths among `expected` that Chromium has not loaded as unpacked extensions within
 * `timeoutMs`. Chromium skips an extension it cannot load without a word on stderr (a dialog on
 * a display), so CDP's Extensions.getExtensions is asked until every path is there. Resolves
 * null when this Chromium lacks the command and nothing can be told.
 */
export async function unloadedExtensions(browser: DevToolsEndpoint, expected: string[], timeoutMs: number): Promise<string[] | null> {
  const want = new Set(expected.map((p) => normalize(p)));
  let missing: string[] | null = [...want];
  await cdpCommands(browser, async (send) => {
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

/** How long a launch waits for Chromium to list every extension it was given (it usually already has). */
const LOAD_TIMEOUT_MS = 15_000;

export interface ExtensionToLoad {
  /** Its root (the directory of its manifest.json) as the browser sees it. */
  path: string;
  /** Where the request named it (`extensions.0`), and what it is called, for the error. */
  field: string;
  label: string;
  manifestVersion: 2 | 3;
}

/** A session feature loading unpacked extensions: the flags, and a check once Chromium is up that it loaded each (400 if not). */
export function extensionsLaunch(extensions: ExtensionToLoad[], log: (msg: string) => void): FeatureLaunch {
  const paths = extensions.map((e) => e.path).join(',');
  return {
    // The headless shell has no extension system.
    fullBrowser: true,
    args: [
      `--load-extension=${paths}`,
      `--disable-extensions-except=${paths}`,
      // Branded Chrome builds ignore --load-extension unless this feature is off; Chromium honours it either way.
      '--disable-features=DisableLoadExtensionCommandLineSwitch',
    ],
    started: async ({ browser }) => {
      const missing = await unloadedExtensions(
        browser,
        extensions.map((e) => e.path),
        LOAD_TIMEOUT_MS,
      );
      if (missing === null) log('cannot tell which extensions Chromium loaded (no Extensions.getExtensions)');
      const failed = extensions.filter((e) => missing?.includes(e.path));
      if (failed.length === 0) return;
      const details = failed.map((e) => ({
        code: 'invalid_input',
        message: `${e.field}: Chromium did not load ${e.label}${
          e.manifestVersion === 2
            ? ': this Chromium no longer runs manifest_version 2 extensions'
            : ': check its manifest.json and the files it names'
        }`,
      }));
      throw new BadRequestError(details.map((d) => d.message).join('; '), details);
    },
  };
}
