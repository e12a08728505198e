import { Readable } from 'node:stream';
import type { BrowserSession, CreateBrowserBody } from '../../src/api/browsers.js';
import { BadRequestError } from '../../src/errors.js';
import { MANAGED_POLICIES, SESSION_POLICY_FILE } from '../box/box-spec.js';
import type { FeatureLaunch, LaunchContext, SessionFeature } from '../sessions/features.js';
import type { SessionRecord } from '../sessions/record.js';

/** Kernel's cap on a serialized `chrome_policy`. */
const MAX_POLICY_BYTES = 5 * 1024 * 1024;

/**
 * Policies rbrowse sets or relies on itself (Kernel refuses the same kinds: extensions, proxy,
 * CDP and automation): set by a client, they would break the session's own features
 * (extensions, proxies, stealth) or cut the daemon off from its browser.
 */
const MANAGED =
  /^(Extension|Proxy)|^(RemoteDebuggingAllowed|DeveloperToolsAvailability|DeveloperToolsDisabled|CommandLineFlagSecurityWarningsEnabled)$/;

/** Refuses a chrome_policy naming a policy rbrowse manages, or too large to apply. */
export function checkChromePolicy(policy: Record<string, unknown> | undefined): void {
  if (!policy) return;
  const managed = Object.keys(policy).filter((name) => MANAGED.test(name));
  if (managed.length) {
    throw new BadRequestError(`chrome_policy: ${managed.join(', ')} ${managed.length > 1 ? 'are' : 'is'} managed by rbrowse and cannot be set`);
  }
  if (Buffer.byteLength(JSON.stringify(policy)) > MAX_POLICY_BYTES) throw new BadRequestError('chrome_policy: larger than 5 MiB as JSON');
}

/**
 * Kernel's `chrome_policy`: Chrome enterprise policies for one session's browser, written as a
 * managed policy file into the session's own /etc/chromium/policies/managed (a directory of its
 * disk, in its mount namespace) before Chromium starts, so no other session and not the host
 * sees them. Chromium checks each value itself, as a managed Chrome does. A policy is read at
 * launch, so such a create never takes a standby browser.
 */
export class ChromePolicies implements SessionFeature {
  check(_org: unknown, body: CreateBrowserBody): void {
    checkChromePolicy(body.chrome_policy);
  }

  needsLaunch(body: CreateBrowserBody): boolean {
    return Object.keys(body.chrome_policy ?? {}).length > 0;
  }

  async launch({ body, record, files }: LaunchContext): Promise<FeatureLaunch | undefined> {
    if (!this.needsLaunch(body)) return undefined;
    await files.write(`${MANAGED_POLICIES}/${SESSION_POLICY_FILE}`, Readable.from([JSON.stringify(body.chrome_policy)]));
    record.chrome_policy = body.chrome_policy;
    // The headless shell reads only a few policies of its own.
    return { fullBrowser: true };
  }

  view(record: SessionRecord): Partial<BrowserSession> {
    return record.chrome_policy ? { chrome_policy: record.chrome_policy } : {};
  }
}
