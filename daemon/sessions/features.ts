import type { BrowserSession, CreateBrowserBody, UpdateBrowserBody } from '../../src/api/browsers.js';
import type { OrgRecord } from '../lib/owned-records.js';
import type { SessionRecord } from './record.js';
import type { DevToolsEndpoint } from '../browser/chromium.js';
import type { SessionDirs } from './session-dirs.js';
import type { FileOps } from '../box/box-files.js';
import type { Box } from '../box/box.js';

/** What a feature sees of a session while it launches. */
export interface LaunchContext {
  org: OrgRecord;
  body: CreateBrowserBody;
  /** The session's record before it is stored: a feature writes what it resolved here (profile, proxy_id). */
  record: SessionRecord;
  /** The session's directory on the daemon's side (never seen by the session); it goes when the session ends. */
  dirs: SessionDirs;
  /** The session's own files, inside its box and as its user: what a feature puts in, it writes through these. */
  files: FileOps;
  /** The session's box (a feature listens there: the proxy forwarder). */
  box: Box;
}

/** One feature's part in one running session. Every hook is optional. */
export interface FeatureLaunch {
  /** Extra Chromium flags. --disable-features, --enable-features, --load-extension and
   * --disable-extensions-except given by several features are merged into one list each. */
  args?: string[];
  /** After Chromium is up, before the session is handed out (again after each restart in place);
   * browser is its own DevTools endpoint (inside its box), startUrl what it should show (the
   * start URL, or the page it showed before a restart). */
  started?(info: { browser: DevToolsEndpoint; startUrl?: string }): Promise<void>;
  /** This feature opens startUrl itself in `started` (stealth: only once its patches are in), so
   * the browser starts on about:blank. */
  opensStartUrl?: boolean;
  /** The session has ended (it is deleted and its clients are gone); its browser is about to be
   * closed in the background. Synchronous: what the session held for others to see (a proxy in
   * use, a profile about to be saved) is updated before DELETE answers. */
  stopping?(): void;
  /** After Chromium has exited (graceful: it closed by itself on Browser.close), before the session's
   * directories are removed: where a profile's user data is written back. What cannot be written
   * by the time `giveUp` is aborted (the daemon stops) is left on the session's disk, which is
   * kept when this resolves `{ keepDisk: true }`: the record keeps its runtime, and the next
   * daemon start finishes it as it does a crashed daemon's sessions. */
  closed?(info: { graceful: boolean; giveUp: AbortSignal }): Promise<{ keepDisk: true } | undefined> | Promise<void>;
  /** Needs what only full Chromium has (extensions, enterprise policies, a real browser's
   * fingerprint): a headless session then runs full Chromium headless, not the headless shell. */
  fullBrowser?: boolean;
  /** Always called last, also when the launch failed part way: give back leases, close servers. */
  release?(): Promise<void> | void;
  /** A PATCH /browsers/{id} of the running session, after every feature's checkUpdate passed. */
  update?(body: UpdateBrowserBody): Promise<void>;
}

/**
 * Something a session may carry (a profile, extensions, a proxy, stealth, an invocation): checked
 * on create, set up around the browser's launch and torn down when the session ends. The session
 * manager runs the features in order; each is built once in the composition root.
 */
export interface SessionFeature {
  /** Refuses a create body naming missing resources (404) or conflicting (409). No side effects
   * beyond the body itself, where it resolves one way of naming a thing into the other (Kernel's
   * `proxy` object into `proxy_id`): pools run it when their configuration is set. */
  check?(org: OrgRecord, body: CreateBrowserBody): void;
  /** Before Chromium starts; undefined when the session does not use this feature. */
  launch?(ctx: LaunchContext): Promise<FeatureLaunch | undefined>;
  /** Whether the body asks for something only a launch can give (a profile's user data, extensions,
   * stealth flags): such a create never takes a standby browser. */
  needsLaunch?(body: CreateBrowserBody): boolean;
  /** A standby browser (launched with an empty body) becomes this body's session: what launch would
   * have done for the body, done to the running browser; its `started` runs at once. */
  handOver?(ctx: LaunchContext): Promise<FeatureLaunch | undefined>;
  /** Refuses a PATCH before anything of it is applied. */
  checkUpdate?(org: OrgRecord, record: SessionRecord, body: UpdateBrowserBody): void;
  /** A PATCH this feature applies by restarting Chromium in place (a profile attached): what to
   * load, set up while the browser is stopped; undefined when the body asks nothing of it. */
  restart?(ctx: Omit<LaunchContext, 'body'>, body: UpdateBrowserBody): Promise<FeatureLaunch | undefined>;
  /** Whether a PATCH body needs `restart`. */
  needsRestart?(body: UpdateBrowserBody): boolean;
  /** Fields this feature adds to the session's API object. */
  view?(record: SessionRecord): Partial<BrowserSession>;
  /** What a list's `query` also matches the session by (a profile's name and id). */
  searchTerms?(record: SessionRecord): string[];
  /** Before a DELETE ends the session: refuses it (the session lives on) when what its end must do
   * cannot be done (a profile's save with no room for it). */
  checkDelete?(org: OrgRecord, record: SessionRecord, files: FileOps): Promise<void>;
}
