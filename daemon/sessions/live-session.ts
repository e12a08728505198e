import { mkdir } from 'node:fs/promises';
import { BackgroundPriority } from '../browser/background-priority.js';
import type { LaunchClaim } from '../lib/launch-claim.js';
import {
  cdpCommands,
  launchChromium,
  resizeWindows,
  type ChromiumOptions,
  type ChromiumProcess,
  type DevToolsEndpoint,
} from '../browser/chromium.js';
import { sleep, within } from '../lib/procs.js';
import { ConflictError, NotFoundError } from '../../src/errors.js';
import type { Display, DisplayAllocator } from '../browser/xvfb.js';
import { startVncServer, type VncServer } from '../browser/vnc-server.js';
import { removeTree } from '../lib/fs-util.js';
import { FileOps } from '../box/box-files.js';
import type { Box } from '../box/box.js';
import type { Boxes } from '../box/boxes.js';
import { BOX_USER } from '../box/box-spec.js';
import { boxEnv } from '../box/box-env.js';
import type { SessionRecord } from './record.js';
import type { UpdateBrowserBody } from '../../src/api/browsers.js';
import type { FeatureLaunch } from './features.js';
import { type SessionDirs, sessionDirs } from './session-dirs.js';

export interface RuntimeDeps {
  home: string;
  sessionsDir: string;
  chromiumPath: string;
  /** What headless sessions run on unless a feature needs full Chromium (src/system-deps.ts). */
  headlessShellPath?: string;
  displays: DisplayAllocator;
  /** Where every session runs: a box of its own (namespaces, users, limits). */
  boxes: Boxes;
  /** Whether Chromium can run with its own sandbox inside a box (it needs nested user namespaces). */
  chromiumSandbox: boolean;
  log?: (msg: string, extra?: object) => void;
  /** Aborted when the daemon stops: what a session's end still tries again (a failing profile save) is left for the next start. */
  giveUp?: AbortSignal;
}

const NEVER = new AbortController().signal;

/** The browser's profile directory, inside its box. */
export const USER_DATA_DIR = `${BOX_USER.home}/user-data`;

/** The build a session's browser runs: the headless shell for a headless one, unless a feature needs full Chromium. */
function executableFor(deps: RuntimeDeps, headless: boolean, features: FeatureLaunch[]): string {
  return headless && deps.headlessShellPath && !features.some((f) => f.fullBrowser) ? deps.headlessShellPath : deps.chromiumPath;
}

/**
 * Launches the session's Chromium with its features' flags, then runs their `started` hooks;
 * opens `startUrl` unless a feature opens it itself (then the browser starts on about:blank).
 */
async function boot(options: ChromiumOptions, features: FeatureLaunch[], startUrl: string | undefined): Promise<ChromiumProcess> {
  const opensItself = features.some((f) => f.opensStartUrl);
  const chromium = await launchChromium({
    ...options,
    startUrl: opensItself ? undefined : startUrl,
    extraArgs: features.flatMap((f) => f.args ?? []),
  });
  try {
    for (const f of features) await f.started?.({ browser: chromium, startUrl });
  } catch (err) {
    await chromium.close();
    throw err;
  }
  return chromium;
}

/**
 * The URL of the browser's first page, to open again after a restart (none for about:blank or
 * chrome:// pages). Asked over CDP: /json/list also shows hidden pages (browser curl's).
 */
async function currentPageUrl(browser: DevToolsEndpoint): Promise<string | undefined> {
  let url: string | undefined;
  await within(
    2000,
    cdpCommands(browser, async (send) => {
      const { targetInfos } = (await send('Target.getTargets')) as { targetInfos: { type: string; url: string }[] };
      url = targetInfos.find((t) => t.type === 'page')?.url;
    }),
  ).catch(() => {});
  return url && /^(https?|file|data):/.test(url) ? url : undefined;
}

/** Sets up a session's features around the launch (see features.ts): they write into the box through `files`. */
export type PrepareFeatures = (ctx: { dirs: SessionDirs; files: FileOps; box: Box }) => Promise<FeatureLaunch[]>;

/** Something that acts inside one session and must end with it (see LiveSession.service). */
export interface SessionService {
  stop?(): void | Promise<void>;
}

/** Makes a session's service of one kind; the function itself names the kind. */
export type ServiceKind<T extends SessionService> = (session: LiveSession) => T;

/** cdp: a CDP client; viewer: a live-view viewer; api: a computer or filesystem request in flight, or a process running; agent: an MCP connection that made or drives it. */
export type ClientKind = 'cdp' | 'viewer' | 'api' | 'agent';

/**
 * A running session: owns its box (namespaces, users, limits: see daemon/box), and in it its
 * Chromium, its Xvfb, window manager and x11vnc (when headful); it is the only thing that stops
 * them. Connected clients (CDP, viewers, API requests) keep the inactivity timer off.
 */
export class LiveSession {
  private readonly clients: Record<ClientKind, number> = { cdp: 0, viewer: 0, api: 0, agent: 0 };
  private lastActivity = Date.now();
  private fileOps?: FileOps;
  /** The in-session services asked for so far, by kind, in the order they were made. */
  private readonly services = new Map<ServiceKind<SessionService>, SessionService>();
  private stopping?: Promise<{ graceful: boolean; keptDisk: boolean }>;
  /** How to disconnect each connected client, by kind. */
  private readonly closers = new Map<() => void, ClientKind>();
  private clientsChanged?: () => void;
  private browserExited?: () => void;
  /** Set while Chromium is being restarted in place (loadExtensions, a profile attached): its exit then is planned. */
  private restarting?: Promise<void>;

  private constructor(
    readonly record: SessionRecord,
    readonly box: Box,
    private browser: ChromiumProcess,
    readonly display: Display | undefined,
    private vnc: VncServer | undefined,
    private readonly deps: RuntimeDeps,
    private readonly env: Record<string, string>,
    private readonly features: FeatureLaunch[],
    private readonly launchOptions: ChromiumOptions,
    /** Set while a browser launched ahead of demand waits at low priority (see foreground()). */
    private priority: BackgroundPriority | undefined,
  ) {
    this.superviseVnc();
    this.watchBrowser();
  }

  /** The session's Chromium now (a restart in place replaces it). */
  get chromium(): ChromiumProcess {
    return this.browser;
  }

  /** Resolves once a restart in place under way (if any) is over: what reaches the browser waits for it. */
  get restarted(): Promise<void> {
    return this.restarting ?? Promise.resolve();
  }

  /** Called once the session's browser exits by itself (a crash, a kill): the session is over. */
  onBrowserExit(listener: () => void): void {
    this.browserExited = listener;
  }

  private watchBrowser(): void {
    const browser = this.browser;
    void browser.exited.then(() => {
      if (this.browser === browser && !this.stopping && !this.restarting) this.browserExited?.();
    });
  }

  /**
   * Restarts x11vnc when it dies on its own, so the live view recovers (viewers reconnect by
   * themselves). A server replaced or stopped on purpose is no longer `this.vnc` when it exits.
   */
  private superviseVnc(): void {
    const vnc = this.vnc;
    if (!vnc || !this.display) return;
    void vnc.exited.then(async () => {
      if (this.vnc !== vnc || this.stopping) return;
      this.vnc = undefined;
      await sleep(500);
      if (this.stopping || !this.display) return;
      this.vnc = await startVncServer({
        display: this.display.number,
        refreshRate: this.record.viewport.refresh_rate,
        env: this.env,
        box: this.box,
      }).catch(() => undefined);
      this.superviseVnc();
    });
  }

  /**
   * Launches a session's browser (and display). `background`: launched ahead of demand (standby,
   * a pool's fill), its processes at the lowest CPU priority until foreground().
   */
  static async start(
    record: SessionRecord,
    deps: RuntimeDeps,
    prepare?: PrepareFeatures,
    opts: { background?: boolean; claim?: LaunchClaim; box?: Box; signal?: AbortSignal } = {},
  ): Promise<LiveSession> {
    const dirs = sessionDirs(deps.sessionsDir, record.id);
    await mkdir(dirs.root, { recursive: true, mode: 0o700 });
    let box: Box | undefined;
    let display: Display | undefined;
    let vnc: Promise<VncServer> | undefined;
    let features: FeatureLaunch[] = [];
    let chromium: ChromiumProcess | undefined;
    // Cancelled: the box goes at once, which fails whatever step of the launch is under way.
    const cancel = () => void box?.stop();
    opts.signal?.addEventListener('abort', cancel, { once: true });
    try {
      // A spare box (started ahead under this session's id), else one started now.
      box = opts.box ?? (await deps.boxes.start({ kind: 'session', id: record.id }));
      if (opts.signal?.aborted) throw new Error('the launch was cancelled');
      const priority = opts.background ? BackgroundPriority.forBox(box) : undefined;
      // Claimed by a create while it starts: its normal priority back now, not at the hand-over.
      opts.claim?.onClaim(() => void priority?.restore());
      features = (await prepare?.({ dirs, files: new FileOps(box), box })) ?? [];
      const env = boxEnv();
      if (!record.headless) {
        display = await deps.displays.start({ width: record.viewport.width, height: record.viewport.height, env, box });
        // The live view's server starts while Chromium does; both only need the display.
        vnc = startVncServer({ display: display.number, refreshRate: record.viewport.refresh_rate, env: boxEnv(display.number), box });
        vnc.catch(() => {});
      }
      const options: ChromiumOptions = {
        executable: executableFor(deps, record.headless, features),
        box,
        userDataDir: USER_DATA_DIR,
        env: boxEnv(display?.number),
        headless: record.headless,
        width: record.viewport.width,
        height: record.viewport.height,
        kiosk: record.kiosk_mode,
        noSandbox: !deps.chromiumSandbox,
        logFile: dirs.chromiumLog,
      };
      // A browser launched ahead of demand runs at the lowest CPU priority (see foreground()).
      chromium = await boot({ ...options, onSpawned: () => void priority?.lower() }, features, record.start_url);
      priority?.launched();
      return new LiveSession(record, box, chromium, display, await vnc, deps, boxEnv(display?.number), features, options, priority);
    } catch (err) {
      await chromium?.close();
      await (await vnc?.catch(() => undefined))?.stop();
      await display?.stop();
      await Promise.allSettled(features.map(async (f) => f.release?.()));
      await box?.stop();
      await removeTree(dirs.root);
      throw opts.signal?.aborted ? new Error('the launch was cancelled') : err;
    } finally {
      opts.signal?.removeEventListener('abort', cancel);
    }
  }

  get id(): string {
    return this.record.id;
  }

  /** The session's directory on the daemon's side. */
  get dirs(): SessionDirs {
    return sessionDirs(this.deps.sessionsDir, this.id);
  }

  /** Counts as activity now: a standby browser handed over starts its inactivity countdown afresh. */
  touch(): void {
    this.lastActivity = Date.now();
  }

  /** Someone's session now (a standby hand-over, a pool's acquire): its processes get their normal CPU priority back. */
  async foreground(): Promise<void> {
    const priority = this.priority;
    this.priority = undefined;
    await priority?.restore();
  }

  /** A feature taken on after the launch (at a standby hand-over); stopped with the session like the rest. */
  adopt(launch: FeatureLaunch): void {
    this.features.push(launch);
  }

  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  /**
   * Marks a client (CDP or live-view viewer) as connected, which keeps the session active; call
   * the returned function when it leaves. onStop disconnects it when the session ends.
   */
  hold(kind: ClientKind, onStop?: () => void): () => void {
    this.clients[kind]++;
    if (onStop) this.closers.set(onStop, kind);
    this.clientsChanged?.();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.clients[kind]--;
      this.lastActivity = Date.now();
      if (onStop) this.closers.delete(onStop);
      this.clientsChanged?.();
    };
  }

  /** Called whenever a client connects or leaves (the watch feed shows the counts). */
  onClientsChange(listener: () => void): void {
    this.clientsChanged = listener;
  }

  /** Milliseconds without any client, or 0 while one is connected. */
  idleFor(now = Date.now()): number {
    const since = this.idleSince;
    return since === null ? 0 : now - since;
  }

  /** Since when no client has been connected (ms epoch), or null while one is. */
  get idleSince(): number | null {
    return this.clients.cdp + this.clients.viewer + this.clients.api + this.clients.agent > 0 ? null : this.lastActivity;
  }

  connected(kind: ClientKind): number {
    return this.clients[kind];
  }

  /** Filesystem operations inside this session's box, as its user. */
  get files(): FileOps {
    this.fileOps ??= new FileOps(this.box);
    return this.fileOps;
  }

  /**
   * This session's service of a kind (its processes, its filesystem watches, its browser's curl):
   * made on first use by the kind itself, so the session core knows none of them; each is stopped
   * with the session, before its browser closes.
   */
  service<T extends SessionService>(kind: ServiceKind<T>): T {
    let service = this.services.get(kind);
    if (!service) {
      service = kind(this);
      this.services.set(kind, service);
    }
    return service as T;
  }

  /** This session's VNC server while it runs (headful sessions only). */
  get vncServer(): VncServer | undefined {
    return this.vnc;
  }

  /**
   * Resizes the browser window and, for a headful session, the screen under it. The VNC server is
   * restarted so its pacing follows the new refresh rate; connected viewers are dropped. (A
   * headless browser keeps the screen size it was launched with.)
   */
  async resize(viewport: { width: number; height: number; refresh_rate: number }): Promise<void> {
    if (this.display) {
      for (const [close, kind] of [...this.closers]) if (kind === 'viewer') close();
      const old = this.vnc;
      this.vnc = undefined;
      await old?.stop();
      await this.display.resize(viewport.width, viewport.height);
    }
    await resizeWindows(this.chromium, viewport.width, viewport.height);
    // A restart in place launches the browser at the size it has now.
    this.launchOptions.width = viewport.width;
    this.launchOptions.height = viewport.height;
    if (this.display) {
      this.vnc = await startVncServer({ display: this.display.number, refreshRate: viewport.refresh_rate, env: this.env, box: this.box });
      this.superviseVnc();
    }
  }

  /**
   * Restarts Chromium in place with more features (extensions loaded, a profile attached): the
   * session keeps its id, jwts, directories, display, processes and the page it showed (its URL
   * is opened again); CDP clients are disconnected, as on Kernel, and reconnect with the same URL.
   * `add` runs while Chromium is stopped (a profile's user data is unpacked then). If the
   * browser does not come up with the addition, it is restarted as it was and the error thrown;
   * if not even that, the session ends.
   */
  async restartWith(add: () => Promise<FeatureLaunch[]>): Promise<void> {
    if (this.stopping) throw new NotFoundError('the session is ending');
    if (this.restarting) throw new ConflictError("the session's browser is already restarting");
    let done!: () => void;
    this.restarting = new Promise<void>((resolve) => (done = resolve));
    const release = this.hold('api');
    try {
      const url = await currentPageUrl(this.browser);
      for (const [close, kind] of [...this.closers]) if (kind === 'cdp') close();
      await this.browser.close();
      let added: FeatureLaunch[] = [];
      try {
        added = await add();
        const all = [...this.features, ...added];
        // Extensions loaded into a session on the headless shell move it to full Chromium.
        const executable = executableFor(this.deps, this.record.headless, all);
        this.browser = await boot({ ...this.launchOptions, executable }, all, url);
        this.launchOptions.executable = executable;
        this.features.push(...added);
      } catch (err) {
        // The old browser is closed, and a new one that failed its hooks closed itself (boot).
        await Promise.allSettled(added.map(async (f) => f.release?.()));
        // launchOptions still name the build it ran on.
        this.browser = await boot(this.launchOptions, this.features, url).catch((again: unknown) => {
          this.deps.log?.('session browser could not be restarted', { session: this.id, error: String(again) });
          throw err;
        });
        throw err;
      }
    } catch (err) {
      // Whatever happened, a session left without a running browser is over.
      if (await within(0, this.browser.exited)) this.browserExited?.();
      throw err;
    } finally {
      this.restarting = undefined;
      done();
      release();
      this.watchBrowser();
    }
  }

  /**
   * Refuses what needs a page kept out of the session's clients' sight (browser curl, the
   * clipboard): the headless shell shows every page it opens to them.
   */
  requireHiddenPages(what: string): void {
    const shell = this.deps.headlessShellPath;
    if (!shell || shell === this.deps.chromiumPath || this.launchOptions.executable !== shell) return;
    throw new ConflictError(
      `${what} needs full Chromium: this session runs on the headless shell (RBROWSE_HEADLESS_SHELL), which cannot hide the page it takes from the session's clients`,
    );
  }

  /** Applies a PATCH to what the session's features run (a proxy swapped live). */
  async update(body: UpdateBrowserBody): Promise<void> {
    for (const f of this.features) await f.update?.(body);
  }

  /**
   * Resolves whether Chromium closed by itself on Browser.close (else it had to be killed), and
   * whether the box's disk was kept for what a feature could not finish (a profile's save).
   */
  stop(): Promise<{ graceful: boolean; keptDisk: boolean }> {
    this.stopping ??= (async () => {
      // A restart in place finishes first, so the browser closed below is the one it started.
      await this.restarting;
      for (const close of [...this.closers.keys()]) close();
      for (const f of this.features) f.stopping?.();
      // The last made first: a service may run on one made before it (fs watches on processes).
      for (const service of [...this.services.values()].reverse()) {
        await (async () => service.stop?.())().catch((err: unknown) =>
          this.deps.log?.('session service failed at stop', { session: this.id, error: String(err) }),
        );
      }
      const graceful = await this.chromium.close();
      let keptDisk = false;
      for (const f of this.features) {
        const done = await f
          .closed?.({ graceful, giveUp: this.deps.giveUp ?? NEVER })
          .catch((err: unknown) => this.deps.log?.('session feature failed at close', { session: this.id, error: String(err) }));
        if (done?.keepDisk) keptDisk = true;
      }
      const vnc = this.vnc;
      this.vnc = undefined;
      await vnc?.stop();
      await this.display?.stop();
      await Promise.allSettled(this.features.map(async (f) => f.release?.()));
      // Whatever is left in the box (its PID namespace, its shared memory, its disk) goes with it.
      await this.box.stop({ keepDisk: keptDisk });
      await removeTree(this.dirs.root);
      return { graceful, keptDisk };
    })();
    return this.stopping;
  }
}
