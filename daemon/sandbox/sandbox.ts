import { execFileSync } from 'node:child_process';
import { isAbsolute, join, relative } from 'node:path';

/** The paths a session's browser (and the filesystem API) sees as its own, writable ones. */
export const SANDBOX_HOME = '/home/kernel';
export const SANDBOX_TMP = '/tmp';

export interface SessionRoots {
  /** Host directory mounted at /home/kernel. */
  home: string;
  /** Host directory mounted at /tmp. */
  tmp: string;
}

/** Inside-path -> host-path pairs, most specific first. */
export const writableRoots = (roots: SessionRoots) => [
  { inside: SANDBOX_HOME, host: roots.home },
  { inside: SANDBOX_TMP, host: roots.tmp },
];

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
  ) {}

  /** Probes once whether bubblewrap works here (it needs root or unprivileged user namespaces). */
  static detect(opts: {
    bwrap?: string;
    hide: string[];
    log: (msg: string, extra?: object) => void;
    disabled?: boolean;
  }): Sandbox {
    const bwrap = opts.bwrap ?? 'bwrap';
    if (opts.disabled) return new Sandbox(false, bwrap, opts.hide);
    try {
      execFileSync(bwrap, ['--ro-bind', '/', '/', '--unshare-pid', '--proc', '/proc', '--dev', '/dev', 'true'], {
        stdio: 'ignore',
        timeout: 10_000,
      });
      return new Sandbox(true, bwrap, opts.hide);
    } catch (err) {
      opts.log('bubblewrap cannot run here: sessions use a per-session root without a mount namespace', {
        error: String(err),
      });
      return new Sandbox(false, bwrap, opts.hide);
    }
  }

  /** The command prefix that runs a program inside the session's namespace ([] without bubblewrap). */
  wrap(roots: SessionRoots, opts: { display?: number } = {}): string[] {
    if (!this.enabled) return [];
    const masked = ['/root', '/home', '/tmp', '/run', '/var/tmp'];
    const extraMasks = this.hidden.filter((h) => !masked.some((m) => h === m || h.startsWith(`${m}/`)));
    const x11 = opts.display === undefined ? [] : [`/tmp/.X11-unix/X${opts.display}`];
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
      '--chdir', SANDBOX_HOME,
      '--',
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
