import { randomUUID } from 'node:crypto';
import type { CreateBrowserBody } from '../../../src/api/browsers.js';
import type { FeatureLaunch, LaunchContext, SessionFeature } from '../../sessions/features.js';
import { navigate } from '../../browser/cdp-page.js';
import type { Boxes } from '../../box/boxes.js';
import { probeIdentity, withoutHeadless, type BrowserIdentity } from './identity.js';
import { initScript } from './init-script.js';
import { TargetPatcher } from './target-patcher.js';

export interface StealthDeps {
  chromiumPath: string;
  /** The probe browser runs as sessions' browsers do: in a box, as its user, with Chromium's sandbox when it can. */
  boxes: Boxes;
  chromiumSandbox: boolean;
  log: (msg: string, extra?: object) => void;
}

/**
 * The GPU a stealth session's WebGL names when the real one is a software renderer (there is no
 * GPU here): a common Intel laptop GPU as Chrome on Linux reports it.
 */
export const WEBGL_IDENTITY = {
  vendor: 'Google Inc. (Intel)',
  renderer: 'ANGLE (Intel, Mesa Intel(R) UHD Graphics 620 (KBL GT2), OpenGL 4.6)',
};

/** The Chromium flags of every stealth session, headful or headless. */
export function stealthArgs(userAgent: string): string[] {
  return [
    // navigator.webdriver is true whenever a debugging port is open; this keeps it false everywhere.
    '--disable-blink-features=AutomationControlled',
    // Read by every request and worker, service workers' script fetches included, which no CDP
    // override reaches. It empties the full versions of the client hints; CDP puts them back.
    `--user-agent=${userAgent}`,
    '--lang=en-US',
    '--accept-lang=en-US,en',
    // Without a GPU, headful Chromium has no WebGL at all, a tell of its own; SwiftShader renders
    // it, and the init script replaces SwiftShader's name.
    '--enable-unsafe-swiftshader',
  ];
}

/**
 * Removes the automation tells of stealth sessions, headful and headless alike: flags for what
 * Chromium decides at launch (webdriver, user agent, languages, WebGL), and a daemon-held CDP
 * connection (TargetPatcher) for what only the page's side can fix (full client hints, the WebGL
 * renderer's name), applied to every page, frame and worker before it runs. Non-stealth sessions
 * stay plain Chromium.
 */
export class Stealth implements SessionFeature {
  private identity?: Promise<BrowserIdentity>;

  constructor(private readonly deps: StealthDeps) {}

  needsLaunch(body: CreateBrowserBody): boolean {
    return body.stealth === true;
  }

  async launch(ctx: LaunchContext): Promise<FeatureLaunch | undefined> {
    if (!ctx.record.stealth) return undefined;
    const identity = await this.browserIdentity();
    const script = initScript({
      webgl: WEBGL_IDENTITY,
      highEntropy: { ...identity.metadata, uaFullVersion: identity.metadata.fullVersion },
      secret: randomUUID(),
    });
    let patcher: TargetPatcher | undefined;
    return {
      // Its identity is full Chromium's (probed from it), which the headless shell does not match.
      fullBrowser: true,
      args: stealthArgs(identity.userAgent),
      // Loaded before the patches were in, the start page would run its scripts unpatched.
      opensStartUrl: true,
      started: async ({ browser, startUrl }) => {
        // After a restart in place the old patcher's browser is gone.
        patcher?.close();
        patcher = await TargetPatcher.attach(browser, identity, script, this.deps.log);
        if (startUrl) await patcher.open(startUrl, () => navigate(browser, startUrl));
      },
      release: () => patcher?.close(),
    };
  }

  /** Asked of the browser once per daemon (the executable does not change); a failure is retried next time. */
  private browserIdentity(): Promise<BrowserIdentity> {
    this.identity ??= probeIdentity(this.deps).then(withoutHeadless, (err: unknown) => {
      this.identity = undefined;
      throw new Error(`stealth: could not read the browser's user agent: ${(err as Error).message}`);
    });
    return this.identity;
  }
}
