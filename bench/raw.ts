import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromiumArgs } from '../daemon/browser/chromium.js';
import { killGroup, killMarked, markedEnv, within } from '../daemon/lib/procs.js';

/** A raw Chromium as the baseline runs it: its DevTools URL (on this host's loopback) and its end. */
export interface RawBrowser {
  pid: number;
  wsUrl: string;
  close(): Promise<void>;
}

/** A prepared, not yet started, raw Chromium: its directories and environment exist already. */
export interface RawProfile {
  /** Stands in for the session id in the process markers. */
  name: string;
  root: string;
  userData: string;
  env: Record<string, string>;
  chromium?: RawBrowser;
}

/** The unprivileged user raw browsers run as when the bench is root (sessions' browsers never run as root either). */
const RAW_UID = 65534;

/**
 * Raw Chromium, started the way a headless session's is (same flags, same directory layout and
 * environment, Chromium's own sandbox, an unprivileged user) but without the daemon and without a
 * box, as the baseline every ratio is taken against. Every profile lives below one temporary
 * directory, whose path also marks the processes' environment so that disposeAll() can find
 * anything that escaped its process group.
 */
export class RawChromiums {
  private readonly open = new Set<RawProfile>();
  private count = 0;
  /** Set once disposeAll() begins, so a run still in flight cannot start a browser nobody will close. */
  private closed = false;
  private readonly root = process.getuid?.() === 0;

  private constructor(
    readonly base: string,
    private readonly executable: string,
  ) {}

  static async create(executable: string): Promise<RawChromiums> {
    const base = await mkdtemp(join(tmpdir(), 'rbrowse-bench-raw-'));
    // The browser's user reaches its directories through these.
    await chmod(base, 0o711);
    return new RawChromiums(base, executable);
  }

  /** Directories and environment, set up outside any timed part (a session's are made before its box starts too). */
  async prepare(): Promise<RawProfile> {
    const name = `raw-${++this.count}`;
    const root = join(this.base, name);
    const home = join(root, 'home');
    const dirs = ['user-data', 'Downloads', '.config', '.cache', '.local/share'].map((d) => join(home, d));
    await Promise.all([...dirs, join(root, 'tmp', '.xdg-runtime')].map((d) => mkdir(d, { recursive: true, mode: 0o700 })));
    await chmod(root, 0o711);
    if (this.root) {
      for (const d of [home, ...dirs, join(home, '.local'), join(root, 'tmp'), join(root, 'tmp', '.xdg-runtime')]) await chown(d, RAW_UID, RAW_UID);
    }
    const env = {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      LANG: 'C.UTF-8',
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      XDG_CACHE_HOME: join(home, '.cache'),
      XDG_DATA_HOME: join(home, '.local', 'share'),
      XDG_RUNTIME_DIR: join(root, 'tmp', '.xdg-runtime'),
      TMPDIR: join(root, 'tmp'),
      ...markedEnv(this.base, name),
    };
    const profile: RawProfile = { name, root, userData: join(home, 'user-data'), env };
    this.open.add(profile);
    return profile;
  }

  /** Spawn until "DevTools listening": the part of a create that is Chromium's own. */
  async launch(profile: RawProfile): Promise<RawBrowser> {
    if (this.closed) throw new Error('raw Chromium launch after disposeAll()');
    const args = chromiumArgs({
      executable: this.executable,
      userDataDir: profile.userData,
      env: profile.env,
      headless: true,
      width: 1920,
      height: 1080,
    });
    const argv = this.root
      ? ['setpriv', `--reuid=${RAW_UID}`, `--regid=${RAW_UID}`, '--clear-groups', '--no-new-privs', '--', this.executable, ...args]
      : [this.executable, ...args];
    const child = spawn(argv[0]!, argv.slice(1), { env: profile.env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    let tail = '';
    const wsUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`raw Chromium did not start: ${tail}`)), 20_000);
      child.stderr!.on('data', (d: Buffer) => {
        tail = (tail + d.toString()).slice(-4000);
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(tail);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      void exited.then(() => reject(new Error(`raw Chromium exited: ${tail}`)));
    });
    child.stderr!.resume();
    profile.chromium = {
      pid: child.pid!,
      wsUrl,
      close: async () => {
        // As a session's close: Browser.close, then whatever is left of its group.
        const { cdpClose } = await import('./cdp.js');
        await within(
          5000,
          cdpClose(wsUrl).then(() => exited),
        );
        killGroup(child.pid!, 'SIGKILL');
        await within(2000, exited);
      },
    };
    return profile.chromium;
  }

  /**
   * What a DELETE does to a session: close the browser, kill what left its process group (Debian's
   * Chromium starts crashpad handlers despite --disable-breakpad), then remove its directories.
   */
  async dispose(profile: RawProfile): Promise<void> {
    await profile.chromium?.close();
    await killMarked(this.base, profile.name);
    await rm(profile.root, { recursive: true, force: true });
    this.open.delete(profile);
  }

  /** Closes whatever is still open; returns pids that outlived every dispose() and had to be killed. */
  async disposeAll(): Promise<number[]> {
    this.closed = true;
    await Promise.all([...this.open].map((p) => this.dispose(p)));
    const strays = await killMarked(this.base);
    await rm(this.base, { recursive: true, force: true });
    return strays;
  }
}
