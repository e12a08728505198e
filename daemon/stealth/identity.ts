import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchChromium } from '../browser/chromium.js';
import type { Spawner } from '../browser/launcher.js';
import { markedEnv } from '../browser/procs.js';
import { removeTree } from '../fs-util.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { CdpClient } from '../cdp/cdp-client.js';

/** CDP's Emulation.UserAgentMetadata: what navigator.userAgentData and the Sec-CH-UA headers report. */
export interface UserAgentMetadata {
  brands: { brand: string; version: string }[];
  fullVersionList: { brand: string; version: string }[];
  fullVersion: string;
  platform: string;
  platformVersion: string;
  architecture: string;
  model: string;
  mobile: boolean;
  bitness?: string;
  wow64?: boolean;
  formFactors?: string[];
}

/** What a browser says it is: its user agent string and its client hints. */
export interface BrowserIdentity {
  userAgent: string;
  metadata: UserAgentMetadata;
}

const HINTS = ['architecture', 'bitness', 'formFactors', 'fullVersionList', 'model', 'platformVersion', 'uaFullVersion', 'wow64'];
const PROBE_MS = 30_000;

/** Headless Chromium names itself HeadlessChrome where the same browser with a window says Chrome. */
export function withoutHeadless(identity: BrowserIdentity): BrowserIdentity {
  const fix = (s: string) => s.replace(/HeadlessChrome/g, 'Chrome');
  const brands = (list: { brand: string; version: string }[]) => list.map((b) => ({ ...b, brand: fix(b.brand) }));
  const { metadata } = identity;
  return {
    userAgent: fix(identity.userAgent),
    metadata: { ...metadata, brands: brands(metadata.brands), fullVersionList: brands(metadata.fullVersionList) },
  };
}

/**
 * Asks the browser itself: runs the executable once, headless and without any stealth flag, and
 * reads Browser.getVersion and navigator.userAgentData there, so no version or brand is ever
 * written down here. Its processes carry the home's markers, so a daemon killed meanwhile has
 * them reaped at its next start.
 */
export async function probeIdentity(opts: { chromiumPath: string; sandbox: Sandbox; home: string; spawn?: Spawner }): Promise<BrowserIdentity> {
  const dir = await mkdtemp(join(tmpdir(), 'rbrowse-identity-'));
  try {
    const roots = { home: join(dir, 'home'), tmp: join(dir, 'tmp') };
    await Promise.all([mkdir(roots.home), mkdir(roots.tmp)]);
    await opts.sandbox.own(roots);
    const chromium = await launchChromium({
      executable: opts.chromiumPath,
      spawn: opts.spawn,
      wrapper: opts.sandbox.wrap(roots),
      userDataDir: opts.sandbox.homePath(roots, 'user-data'),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...opts.sandbox.insideEnv(roots), ...markedEnv(opts.home, 'identity-probe') },
      headless: true,
      width: 800,
      height: 600,
      noSandbox: !opts.sandbox.chromiumSandbox.on,
    });
    const cdp = await CdpClient.connect(chromium.wsUrl).catch(async (err) => {
      await chromium.close();
      throw err;
    });
    try {
      return await withTimeout(PROBE_MS, readIdentity(cdp, chromium.httpOrigin));
    } finally {
      cdp.close();
      await chromium.close();
    }
  } finally {
    await removeTree(dir);
  }
}

async function readIdentity(cdp: CdpClient, httpOrigin: string): Promise<BrowserIdentity> {
  const { userAgent } = await cdp.send<{ userAgent: string }>('Browser.getVersion');
  const { targetId } = await cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
  // navigator.userAgentData exists only in secure contexts; the DevTools endpoint on loopback is one.
  await cdp.send('Page.enable', {}, sessionId);
  const loaded = cdp.once('Page.loadEventFired', sessionId);
  await cdp.send('Page.navigate', { url: `${httpOrigin}/json/version` }, sessionId);
  await loaded;
  const { result, exceptionDetails } = await cdp.send(
    'Runtime.evaluate',
    { expression: `navigator.userAgentData.getHighEntropyValues(${JSON.stringify(HINTS)})`, awaitPromise: true, returnByValue: true },
    sessionId,
  );
  if (exceptionDetails) throw new Error(`reading navigator.userAgentData failed: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
  const { uaFullVersion, ...hints } = result.value as Omit<UserAgentMetadata, 'fullVersion'> & { uaFullVersion: string };
  return { userAgent, metadata: { ...hints, fullVersion: uaFullVersion } };
}

function withTimeout<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the browser did not tell its identity within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
