import { randomUUID } from 'node:crypto';
import { launchChromium } from '../../browser/chromium.js';
import type { Boxes } from '../../box/boxes.js';
import { BOX_USER } from '../../box/box-spec.js';
import { boxEnv } from '../../box/box-env.js';
import { CdpClient } from '../../browser/cdp-client.js';

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
 * Asks the browser itself: runs the executable once, headless and without any stealth flag, in a
 * box of its own as sessions' browsers run, and reads Browser.getVersion and
 * navigator.userAgentData there, so no version or brand is ever written down here.
 */
export async function probeIdentity(opts: { chromiumPath: string; boxes: Boxes; chromiumSandbox: boolean }): Promise<BrowserIdentity> {
  const box = await opts.boxes.start({ kind: 'session', id: `identity-${randomUUID()}` });
  try {
    const chromium = await launchChromium({
      executable: opts.chromiumPath,
      box,
      userDataDir: `${BOX_USER.home}/user-data`,
      env: boxEnv(),
      headless: true,
      width: 800,
      height: 600,
      noSandbox: !opts.chromiumSandbox,
    });
    const cdp = await CdpClient.connect(chromium).catch(async (err) => {
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
    await box.stop();
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
  if (exceptionDetails)
    throw new Error(`reading navigator.userAgentData failed: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
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
