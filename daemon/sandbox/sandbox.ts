import { execFileSync } from 'node:child_process';
import { lchown, readdir } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative } from 'node:path';

/** The paths a session's browser (and the filesystem API) sees as its own, writable ones. */
export const SANDBOX_HOME = '/home/kernel';
export const SANDBOX_TMP = '/tmp';

export interface SessionRoots {
  /** Host directory mounted at /home/kernel. */
  home: string;
  /** Host directory mounted at /tmp. */
  tmp: string;
}

/** Whom a session's programs run as when the daemon is root (RBROWSE_BROWSER_UID; default nobody). */
export interface BrowserUser {
  uid: number;
  gid: number;
}

/** Whether Chromium runs with its own sandbox, and if not, why (doctor and the daemon's start say it). */
export interface ChromiumSandbox {
  on: boolean;
  why?: string;
  fix?: string;
}

/** Inside-path -> host-path pairs, most specific first. */
export const writableRoots = (roots: SessionRoots) => [
  { inside: SANDBOX_HOME, host: roots.home },
  { inside: SANDBOX_TMP, host: roots.tmp },
];

/** The host twin of a path below /home/kernel or /tmp (what it means without a namespace); undefined elsewhere. */
export function hostTwin(roots: SessionRoots, inside: string): string | undefined {
  const root = writableRoots(roots).find((r) => inside === r.inside || inside.startsWith(`${r.inside}/`));
  return root && root.host + inside.slice(root.inside.length);
}

/**
 * The mount namespace of a session, built with bubblewrap: the host's system read-only, the
 * places where other sessions, users and the daemon keep their files hidden, and a private,
 * writable /home/kernel and /tmp. Chromium runs in it, and so does every filesystem operation of
 * the API, so a symlink planted by the page resolves inside the session too. Where bubblewrap
 * cannot run, `enabled` is false and commands run unwrapped on the host paths.
 */
export class Sandbox {
  private constructor(
    readonly enabled: boolean,
    private readonly bwrap: string,
    /** Host directories to hide (RBROWSE_HOME and the like) when they are not already under a hidden one. */
    private readonly hidden: string[],
    /** Set when the daemon runs as root: inside the namespace, programs drop to this user. */
    readonly user: BrowserUser | undefined,
    readonly chromiumSandbox: ChromiumSandbox,
  ) {}

  /**
   * Probes once whether bubblewrap works here (it needs root or unprivileged user namespaces), and
   * whether Chromium's own sandbox can run in it: as an unprivileged user (the daemon drops to
   * one when it is root) that may create the user, PID and network namespaces Chromium's sandbox
   * puts renderers in. Without them Chromium must run with --no-sandbox: an explicit fallback that
   * RBROWSE_CHROMIUM_SANDBOX=off also chooses, and that the daemon's start and doctor announce.
   */
  static detect(opts: {
    bwrap?: string;
    hide: string[];
    log: (msg: string, extra?: object) => void;
    disabled?: boolean;
    env?: NodeJS.ProcessEnv;
  }): Sandbox {
    const bwrap = opts.bwrap ?? 'bwrap';
    const env = opts.env ?? process.env;
    const user = process.getuid?.() === 0 ? browserUser(env) : undefined;
    const off = (why: string, fix: string) => ({ on: false, why, fix });
    let enabled = false;
    if (!opts.disabled) {
      try {
        execFileSync(bwrap, ['--ro-bind', '/', '/', '--unshare-pid', '--proc', '/proc', '--dev', '/dev', 'true'], { stdio: 'ignore', timeout: 10_000 });
        enabled = true;
      } catch (err) {
        opts.log('bubblewrap cannot run here: sessions use a per-session root without a mount namespace', { error: String(err) });
      }
    }
    let chromium: ChromiumSandbox;
    if (env.RBROWSE_CHROMIUM_SANDBOX === 'off') {
      chromium = off('RBROWSE_CHROMIUM_SANDBOX=off', 'unset RBROWSE_CHROMIUM_SANDBOX to run Chromium with its own sandbox');
    } else if (!enabled && user) {
      chromium = off('the daemon runs as root and bubblewrap cannot run, so Chromium cannot drop to an unprivileged user', 'install bubblewrap (apt-get install bubblewrap), or run the daemon as an unprivileged user');
    } else {
      const probe = [...(enabled ? [bwrap, '--ro-bind', '/', '/', '--dev', '/dev', '--unshare-pid', '--proc', '/proc', '--'] : []), ...dropTo(user), 'unshare', '--user', '--pid', '--net', '--fork', 'true'];
      try {
        execFileSync(probe[0]!, probe.slice(1), { stdio: 'ignore', timeout: 10_000 });
        chromium = { on: true };
      } catch {
        chromium = off(
          `an unprivileged user cannot create user namespaces here (Chromium's sandbox needs them)`,
          'allow unprivileged user namespaces: sysctl -w kernel.unprivileged_userns_clone=1 (Debian), or kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04+)',
        );
      }
    }
    if (!chromium.on && env.RBROWSE_CHROMIUM_SANDBOX !== 'off') {
      opts.log(`CHROMIUM SANDBOX OFF: ${chromium.why}; browsers run with --no-sandbox. Fix: ${chromium.fix}`);
    }
    return new Sandbox(enabled, bwrap, opts.hide, enabled ? user : undefined, chromium);
  }

  /** The command prefix that runs a program as the sessions' user, without the namespace (benchmarks' raw Chromium). */
  userPrefix(): string[] {
    return dropTo(this.user);
  }

  /** Hands a session's directories to the user its programs run as (after the daemon wrote into them). */
  async own(roots: SessionRoots): Promise<void> {
    const user = this.user;
    if (!user) return;
    // In-process rather than `chown -R`: forking the daemon for it stalled the event loop (and
    // every API client) for milliseconds per create under load; these are thread-pool calls.
    for (const root of [roots.home, roots.tmp]) await this.ownTree(root);
  }

  /**
   * One tree of a session's (what the daemon wrote there as root) becomes the session user's.
   * Symbolic links are neither followed nor listed into: lchown, and a listing that does not
   * descend through them, so a session cannot point it at the host.
   */
  async ownTree(root: string): Promise<void> {
    const user = this.user;
    if (!user) return;
    const entries = await readdir(root, { recursive: true });
    const paths = [root, ...entries.map((e) => join(root, e))];
    for (let i = 0; i < paths.length; i += 64) {
      await Promise.all(paths.slice(i, i + 64).map((p) => lchown(p, user.uid, user.gid)));
    }
  }

  /** The command prefix that runs a program inside the session's namespace ([] without bubblewrap). */
  wrap(roots: SessionRoots, opts: { display?: number; chdir?: string; readOnly?: string[] } = {}): string[] {
    if (!this.enabled) return [];
    const masked = ['/root', '/home', '/tmp', '/run', '/var/tmp'];
    const extraMasks = this.hidden.filter((h) => !masked.some((m) => h === m || h.startsWith(`${m}/`)));
    const x11 = opts.display === undefined ? [] : [`/tmp/.X11-unix/X${opts.display}`];
    // Host directories a daemon-run program needs (rbrowse's own Node and packages, which may live
    // under a masked place such as /root), read-only; the daemon's hidden ones below them stay hidden.
    const readOnly = opts.readOnly ?? [];
    const hiddenBelow = this.hidden.filter((h) => readOnly.some((r) => h === r || h.startsWith(`${r}/`)));
    return [
      this.bwrap,
      '--ro-bind', '/', '/',
      '--dev', '/dev',
      '--tmpfs', '/dev/shm',
      '--unshare-pid',
      '--proc', '/proc',
      ...masked.flatMap((m) => ['--tmpfs', m]),
      ...extraMasks.flatMap((m) => ['--tmpfs', m]),
      '--bind', roots.home, SANDBOX_HOME,
      '--bind', roots.tmp, SANDBOX_TMP,
      ...x11.flatMap((sock) => ['--ro-bind', sock, sock]),
      // bwrap would make a missing parent (under the session's /tmp, say) 0700 and root's: made 0755 first.
      ...readOnly.flatMap((dir) => [...ancestors(dir).flatMap((p) => ['--perms', '0755', '--dir', p]), '--ro-bind', dir, dir]),
      ...hiddenBelow.flatMap((m) => ['--tmpfs', m]),
      '--chdir', opts.chdir ?? SANDBOX_HOME,
      '--',
      ...dropTo(this.user),
    ];
  }

  /** The environment paths a program in the session sees, for the session's own directories. */
  insideEnv(roots: SessionRoots): Record<string, string> {
    const home = this.enabled ? SANDBOX_HOME : roots.home;
    const tmp = this.enabled ? SANDBOX_TMP : roots.tmp;
    return {
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      XDG_CACHE_HOME: join(home, '.cache'),
      XDG_DATA_HOME: join(home, '.local', 'share'),
      XDG_RUNTIME_DIR: join(tmp, '.xdg-runtime'),
      TMPDIR: tmp,
    };
  }

  /** Where a program in the session sees a path below the session's home or tmp directory. */
  insidePath(roots: SessionRoots, hostPath: string): string {
    if (!this.enabled) return hostPath;
    for (const [root, inside] of [[roots.home, SANDBOX_HOME], [roots.tmp, SANDBOX_TMP]] as const) {
      const rel = relative(root, hostPath);
      if (rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))) return join(inside, rel);
    }
    throw new Error(`${hostPath} is outside the session's directories`);
  }

  /** Where the browser sees a path of its home directory. */
  homePath(roots: SessionRoots, ...parts: string[]): string {
    return join(this.enabled ? SANDBOX_HOME : roots.home, ...parts);
  }
}

/** /a/b/c -> [/a, /a/b]. */
function ancestors(dir: string): string[] {
  const out: string[] = [];
  for (let p = dirname(dir); p !== '/' && p !== '.'; p = dirname(p)) out.unshift(p);
  return out;
}

function browserUser(env: NodeJS.ProcessEnv): BrowserUser {
  const raw = env.RBROWSE_BROWSER_UID;
  const uid = raw === undefined || raw === '' ? 65534 : Number(raw);
  if (!Number.isInteger(uid) || uid <= 0 || uid > 0xfffffffe) throw new Error(`RBROWSE_BROWSER_UID is not an unprivileged uid: ${raw}`);
  return { uid, gid: uid };
}

/** The prefix that becomes `user` for good: no groups, no capabilities, no way back through setuid binaries. */
function dropTo(user: BrowserUser | undefined): string[] {
  if (!user) return [];
  return ['setpriv', `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--'];
}
