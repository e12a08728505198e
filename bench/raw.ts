import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchChromium, type ChromiumProcess } from '../daemon/browser/chromium.js';
import { killMarked } from '../daemon/browser/procs.js';
import { prepareSessionDirs } from '../daemon/sessions/live-session.js';
import { Sandbox } from '../daemon/sandbox/sandbox.js';

/** A prepared, not yet started, raw Chromium: its directories and environment exist already. */
export interface RawProfile {
  /** Stands in for the session id in the process markers. */
  name: string;
  root: string;
  userData: string;
  env: Record<string, string>;
  chromium?: ChromiumProcess;
}

/**
 * Raw Chromium, started the way a headless session's is (same flags, same directory layout and
 * environment) but without the daemon, as the baseline every ratio is taken against. Every profile
 * lives below one temporary directory, whose path also marks the processes' environment so that
 * disposeAll() can find anything that escaped its process group.
 */
export class RawChromiums {
  private readonly open = new Set<RawProfile>();
  private count = 0;
  /** Set once disposeAll() begins, so a run still in flight cannot start a browser nobody will close. */
  private closed = false;

  private constructor(
    readonly base: string,
    private readonly executable: string,
    /** Sessions' browsers run as an unprivileged user with Chromium's own sandbox; so does this baseline. */
    private readonly sandbox: Sandbox,
  ) {}

  static async create(executable: string): Promise<RawChromiums> {
    const sandbox = Sandbox.detect({ hide: [], log: () => {} });
    const base = await mkdtemp(join(tmpdir(), 'rbrowse-bench-raw-'));
    // Without the namespace the browser's user reaches its directories through these.
    await chmod(base, 0o711);
    return new RawChromiums(base, executable, sandbox);
  }

  /** Directories and environment, set up outside any timed part (the daemon's mkdirs are inside its). */
  async prepare(): Promise<RawProfile> {
    const name = `raw-${++this.count}`;
    // The same directories and variables a session gets, so both sides pay the same first-run
    // costs (fontconfig cache, profile creation) and the ratio shows what the daemon adds.
    const { dirs, env } = await prepareSessionDirs(this.base, this.base, name);
    await chmod(dirs.root, 0o711);
    await this.sandbox.own({ home: dirs.home, tmp: dirs.tmp });
    const profile: RawProfile = { name, root: dirs.root, userData: dirs.userData, env };
    this.open.add(profile);
    return profile;
  }

  /** Spawn until "DevTools listening": the part of a create that is Chromium's own. */
  async launch(profile: RawProfile): Promise<ChromiumProcess> {
    if (this.closed) throw new Error('raw Chromium launch after disposeAll()');
    profile.chromium = await launchChromium({
      executable: this.executable,
      userDataDir: profile.userData,
      env: profile.env,
      headless: true,
      width: 1920,
      height: 1080,
      // Chromium's own sandbox (about 45 ms of its start here) is on as in a session; only the
      // session's bubblewrap namespace is left out, so the ratio shows what the daemon adds.
      wrapper: this.sandbox.chromiumSandbox.on ? this.sandbox.userPrefix() : [],
      noSandbox: !this.sandbox.chromiumSandbox.on,
    });
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
