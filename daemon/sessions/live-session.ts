import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { spawnHere, type Spawner } from '../browser/launcher.js';
import { BackgroundPriority } from '../browser/background-priority.js';
import { cdpCommands, launchChromium, resizeWindows, type ChromiumOptions, type ChromiumProcess } from '../browser/chromium.js';
import { killMarked, markedEnv, sleep, within } from '../browser/procs.js';
import { removeSegmentsOf } from '../browser/sysv-shm.js';
import { ConflictError, NotFoundError } from '../../src/errors.js';
import { SessionProcesses } from '../process/session-processes.js';
import { SessionWatches } from '../fs/watches.js';
import { BrowserCurl } from '../curl/browser-curl.js';
import type { Display, DisplayAllocator } from '../browser/xvfb.js';
import { startVncServer, type VncServer } from '../liveview/vnc-server.js';
import { removeTree } from '../fs-util.js';
import type { Sandbox } from '../sandbox/sandbox.js';
import { FileOps } from '../fs/file-ops.js';
import type { SessionRecord } from './record.js';
import type { UpdateBrowserBody } from '../../src/api/schemas.js';
import type { FeatureLaunch, SessionDirs } from './features.js';

export interface RuntimeDeps {
  home: string;
  sessionsDir: string;
  chromiumPath: string;
  displays: DisplayAllocator;
  sandbox: Sandbox;
  /** Starts the browsers (the daemon's launcher process). */
  spawn?: Spawner;
  log?: (msg: string, extra?: object) => void;
}

/** Per-session directories; everything a browser writes stays below `root` and goes with it. */
export function sessionDirs(sessionsDir: string, id: string) {
  const root = join(sessionsDir, id);
  // home is the session's /home/kernel and tmp its /tmp (see daemon/sandbox).
  const home = join(root, 'home');
  const tmp = join(root, 'tmp');
  return {
    root,
    // Chromium's log, on the daemon's side (outside the namespace): GET .../logs/stream?source=supervisor.
    chromiumLog: join(root, 'chromium.log'),
    home,
    userData: join(home, 'user-data'),
    downloads: join(home, 'Downloads'),
    config: join(home, '.config'),
    cache: join(home, '.cache'),
    data: join(home, '.local', 'share'),
    tmp,
    run: join(tmp, '.xdg-runtime'),
  };
}

/**
 * Creates a session's directories and the environment its processes get: a HOME, XDG and temp
 * directories of its own, and the markers that let the daemon find its processes again.
 */
export async function prepareSessionDirs(sessionsDir: string, home: string, id: string) {
  const dirs = sessionDirs(sessionsDir, id);
  await Promise.all(
    [dirs.userData, dirs.downloads, dirs.config, dirs.cache, dirs.data, dirs.tmp, dirs.run].map((d) =>
      mkdir(d, { recursive: true, mode: 0o700 }),
    ),
  );
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LANG: process.env.LANG ?? 'C.UTF-8',
    ...(process.env.TZ ? { TZ: process.env.TZ } : {}),
    HOME: dirs.home,
    XDG_CONFIG_HOME: dirs.config,
    XDG_CACHE_HOME: dirs.cache,
    XDG_DATA_HOME: dirs.data,
    XDG_RUNTIME_DIR: dirs.run,
    TMPDIR: dirs.tmp,
    ...markedEnv(home, id),
  };
  return { dirs, env };
}

/**
 * Launches the session's Chromium with its features' flags, then runs their `started` hooks;
 * opens `startUrl` unless a feature opens it itself (then the browser starts on about:blank).
 */
async function boot(options: ChromiumOptions, features: FeatureLaunch[], startUrl: string | undefined): Promise<ChromiumProcess> {
  const opensItself = features.some((f) => f.opensStartUrl);
  const chromium = await launchChromium({ ...options, startUrl: opensItself ? undefined : startUrl, extraArgs: features.flatMap((f) => f.args ?? []) });
  try {
    for (const f of features) await f.started?.({ wsUrl: chromium.wsUrl, startUrl });
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
async function currentPageUrl(wsUrl: string): Promise<string | undefined> {
  let url: string | undefined;
  await within(
    2000,
    cdpCommands(wsUrl, async (send) => {
      const { targetInfos } = (await send('Target.getTargets')) as { targetInfos: { type: string; url: string }[] };
      url = targetInfos.find((t) => t.type === 'page')?.url;
    }),
  ).catch(() => {});
  return url && /^(https?|file|data):/.test(url) ? url : undefined;
}

/** Sets up a session's features around the launch (see features.ts); gets the session's paths. */
export type PrepareFeatures = (ctx: { dirs: SessionDirs; insidePath(hostPath: string): string }) => Promise<FeatureLaunch[]>;

/** cdp: a CDP client; viewer: a live-view viewer; api: a computer or filesystem request in flight, or a process running. */
export type ClientKind = 'cdp' | 'viewer' | 'api';

/**
 * A running session: owns its Chromium (in the session's sandbox), its Xvfb, window manager and
 * x11vnc (when headful) and its directories, and is the only thing that stops them. Connected
 * clients (CDP, viewers, API requests) keep the inactivity timer off.
 */
export class LiveSession {
  private readonly clients: Record<ClientKind, number> = { cdp: 0, viewer: 0, api: 0 };
  private lastActivity = Date.now();
  private fileOps?: FileOps;
  private processRunner?: SessionProcesses;
  private fsWatches?: SessionWatches;
  private browserCurl?: BrowserCurl;
  /** Every x11vnc this session ran: Xvfb holds their shared memory until it exits. */
  private readonly vncPids = new Set<number>();
  private stopping?: Promise<{ graceful: boolean }>;
  /** How to disconnect each connected client, by kind. */
  private readonly closers = new Map<() => void, ClientKind>();
  private clientsChanged?: () => void;
  private browserExited?: () => void;
  /** Set while Chromium is being restarted in place (loadExtensions, a profile attached): its exit then is planned. */
  private restarting?: Promise<void>;

  private constructor(
    readonly record: SessionRecord,
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
    this.vncPids.add(vnc.pid);
    void vnc.exited.then(async () => {
      if (this.vnc !== vnc || this.stopping) return;
      this.vnc = undefined;
      await sleep(500);
      if (this.stopping || !this.display) return;
      this.vnc = await startVncServer({
        display: this.display.number,
        refreshRate: this.record.viewport.refresh_rate,
        env: this.env,
        spawn: this.deps.spawn,
      }).catch(() => undefined);
      this.superviseVnc();
    });
  }

  /**
   * Launches a session's browser (and display). `background`: launched ahead of demand (standby,
   * a pool's fill), its processes at the lowest CPU priority until foreground().
   */
  static async start(record: SessionRecord, deps: RuntimeDeps, prepare?: PrepareFeatures, opts: { background?: boolean } = {}): Promise<LiveSession> {
    const { dirs, env } = await prepareSessionDirs(deps.sessionsDir, deps.home, record.id);
    const priority = opts.background ? BackgroundPriority.for(deps.spawn ?? spawnHere) : undefined;
    const spawn = priority?.spawn ?? deps.spawn;
    const roots = { home: dirs.home, tmp: dirs.tmp };
    let display: Display | undefined;
    let vnc: Promise<VncServer> | undefined;
    let features: FeatureLaunch[] = [];
    let chromium: ChromiumProcess | undefined;
    try {
      features = (await prepare?.({ dirs, insidePath: (p) => deps.sandbox.insidePath(roots, p) })) ?? [];
      // Everything the daemon put in (a profile, extensions) now belongs to the user the browser runs as.
      await deps.sandbox.own(roots);
      if (!record.headless) {
        display = await deps.displays.start({ width: record.viewport.width, height: record.viewport.height, env, spawn });
        // The live view's server starts while Chromium does; both only need the display.
        vnc = startVncServer({ display: display.number, refreshRate: record.viewport.refresh_rate, env, spawn });
        vnc.catch(() => {});
      }
      const options: ChromiumOptions = {
        executable: deps.chromiumPath,
        spawn,
        wrapper: deps.sandbox.wrap(roots, { display: display?.number }),
        userDataDir: deps.sandbox.homePath(roots, 'user-data'),
        env: { ...env, ...deps.sandbox.insideEnv(roots), ...(display ? { DISPLAY: `:${display.number}` } : {}) },
        headless: record.headless,
        width: record.viewport.width,
        height: record.viewport.height,
        kiosk: record.kiosk_mode,
        noSandbox: !deps.sandbox.chromiumSandbox.on,
        logFile: dirs.chromiumLog,
      };
      chromium = await boot(options, features, record.start_url);
      // A restart in place (after the hand-over) starts at normal priority.
      return new LiveSession(record, chromium, display, await vnc, deps, env, features, { ...options, spawn: deps.spawn }, priority);
    } catch (err) {
      await chromium?.close();
      await (await vnc?.catch(() => undefined))?.stop();
      await display?.stop();
      await killMarked(deps.home, record.id);
      await Promise.allSettled(features.map(async (f) => f.release?.()));
      await removeTree(dirs.root);
      throw err;
    }
  }

  get id(): string {
    return this.record.id;
  }

  /** The session's directories on the daemon's side. */
  get dirs(): SessionDirs {
    return sessionDirs(this.deps.sessionsDir, this.id);
  }

  /** A path below dirs.home or dirs.tmp as the browser sees it (the sandbox maps them elsewhere). */
  insidePath(hostPath: string): string {
    const { home, tmp } = this.dirs;
    return this.deps.sandbox.insidePath({ home, tmp }, hostPath);
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
    return this.clients.cdp + this.clients.viewer + this.clients.api > 0 ? null : this.lastActivity;
  }

  connected(kind: ClientKind): number {
    return this.clients[kind];
  }

  /** Filesystem operations inside this session's sandbox. */
  get files(): FileOps {
    const dirs = this.dirs;
    this.fileOps ??= new FileOps(this.deps.sandbox, { home: dirs.home, tmp: dirs.tmp }, {
      PATH: this.env.PATH!,
      ...markedEnv(this.deps.home, this.id),
    });
    return this.fileOps;
  }

  /** Processes run in this session (its namespace, its user); they end with it. */
  get processes(): SessionProcesses {
    const dirs = this.dirs;
    this.processRunner ??= new SessionProcesses({
      sandbox: this.deps.sandbox,
      roots: { home: dirs.home, tmp: dirs.tmp },
      env: { PATH: this.env.PATH!, ...markedEnv(this.deps.home, this.id) },
      display: this.display?.number,
      hold: () => this.hold('api'),
    });
    return this.processRunner;
  }

  /** Filesystem watches inside this session; they end with it. */
  get watches(): SessionWatches {
    this.fsWatches ??= new SessionWatches((argv) => this.processes.helper(argv));
    return this.fsWatches;
  }

  /** HTTP requests made by this session's browser (its hidden pages are kept between them). */
  get curl(): BrowserCurl {
    this.browserCurl ??= new BrowserCurl(() => this.chromium.wsUrl);
    return this.browserCurl;
  }

  /** The loopback port of this session's VNC server (headful sessions only). */
  get vncPort(): number | undefined {
    return this.vnc?.port;
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
    await resizeWindows(this.chromium.wsUrl, viewport.width, viewport.height);
    // A restart in place launches the browser at the size it has now.
    this.launchOptions.width = viewport.width;
    this.launchOptions.height = viewport.height;
    if (this.display) {
      this.vnc = await startVncServer({ display: this.display.number, refreshRate: viewport.refresh_rate, env: this.env, spawn: this.deps.spawn });
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
      const url = await currentPageUrl(this.browser.wsUrl);
      for (const [close, kind] of [...this.closers]) if (kind === 'cdp') close();
      await this.browser.close();
      let added: FeatureLaunch[] = [];
      try {
        added = await add();
        this.browser = await boot(this.launchOptions, [...this.features, ...added], url);
        this.features.push(...added);
      } catch (err) {
        // The old browser is closed, and a new one that failed its hooks closed itself (boot).
        await Promise.allSettled(added.map(async (f) => f.release?.()));
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

  /** Applies a PATCH to what the session's features run (a proxy swapped live). */
  async update(body: UpdateBrowserBody): Promise<void> {
    for (const f of this.features) await f.update?.(body);
  }

  /** Resolves whether Chromium closed by itself on Browser.close (else it had to be killed). */
  stop(): Promise<{ graceful: boolean }> {
    this.stopping ??= (async () => {
      // A restart in place finishes first, so the browser closed below is the one it started.
      await this.restarting;
      for (const close of [...this.closers.keys()]) close();
      for (const f of this.features) f.stopping?.();
      this.browserCurl?.close();
      await this.processRunner?.stop();
      const graceful = await this.chromium.close();
      for (const f of this.features) {
        await f.closed?.({ graceful }).catch((err: unknown) => this.deps.log?.('session feature failed at close', { session: this.id, error: String(err) }));
      }
      const vnc = this.vnc;
      this.vnc = undefined;
      await vnc?.stop();
      await this.display?.stop();
      // Xvfb let go of its x11vnc servers' MIT-SHM segments as it exited: now they can go.
      await removeSegmentsOf(this.vncPids);
      // Anything that slipped out of the process groups (crashpad handlers, helpers) goes too. In
      // the sandbox nothing can: everything ran in the session's PID namespace, which the kernel
      // empties when its first process ends; the /proc scan (a few thousand file reads on the
      // event loop) is only needed without one.
      if (!this.deps.sandbox.enabled) await killMarked(this.deps.home, this.id);
      await Promise.allSettled(this.features.map(async (f) => f.release?.()));
      await removeTree(this.dirs.root);
      return { graceful };
    })();
    return this.stopping;
  }
}
