import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What the daemon needs from the system, and the Debian package that provides each. */
export interface SystemDep {
  name: string;
  why: string;
  apt: string;
  /** Found path, or null when missing. */
  find: () => string | null;
}

export function which(bin: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(delimiter)) {
    const full = join(dir, bin);
    try {
      accessSync(full, constants.X_OK);
      return full;
    } catch {
      // not in this directory
    }
  }
  return null;
}

const CHROMIUM_CANDIDATES = ['/usr/lib/chromium/chromium', '/usr/lib/chromium-browser/chromium-browser'];

/**
 * Debian's /usr/bin/chromium is a wrapper script that adds flags of its own; the real binary sits
 * in /usr/lib/chromium. RBROWSE_CHROMIUM overrides.
 */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.RBROWSE_CHROMIUM) return existsSync(env.RBROWSE_CHROMIUM) ? env.RBROWSE_CHROMIUM : null;
  return CHROMIUM_CANDIDATES.find((p) => existsSync(p)) ?? which('chromium', env) ?? null;
}

export function resolveChromium(): string {
  const found = findChromium();
  if (!found) throw new Error('Chromium not found: run `rbrowse doctor` (apt-get install -y chromium)');
  return found;
}

/** Where Debian's chromium-headless-shell installs the shell. */
const HEADLESS_SHELL = '/usr/lib/chromium/chromium-headless-shell';

/** RBROWSE_HEADLESS_SHELL when it asks for the shell (`on` or a path), else undefined. */
const shellAsked = (env: NodeJS.ProcessEnv = process.env) =>
  env.RBROWSE_HEADLESS_SHELL && env.RBROWSE_HEADLESS_SHELL !== 'off' ? env.RBROWSE_HEADLESS_SHELL : undefined;

/** The shell `asked` names (`on`: Debian's), or null when it is not there. */
function headlessShellAt(asked: string): string | null {
  const path = asked === 'on' ? HEADLESS_SHELL : asked;
  return existsSync(path) ? path : null;
}

/**
 * Chromium's headless shell (Debian's chromium-headless-shell, the build Playwright runs headless
 * by default), which headless sessions run on when RBROWSE_HEADLESS_SHELL is `on` (or names the
 * binary): it starts on a fraction of full Chromium's CPU and memory, but has no extensions, few
 * Chrome policies and no hidden pages (so no browser curl or clipboard). Off (null) by default:
 * Kernel's headless browsers are full Chromium. Asked for and not there, an error.
 */
export function resolveHeadlessShell(env: NodeJS.ProcessEnv = process.env): string | null {
  const asked = shellAsked(env);
  if (!asked) return null;
  const found = headlessShellAt(asked);
  if (!found) throw new Error(`RBROWSE_HEADLESS_SHELL=${asked}: the headless shell is not there (apt-get install -y chromium-headless-shell)`);
  return found;
}

export const HEADLESS_SHELL_DEP: SystemDep = {
  name: 'headless shell',
  why: "headless sessions with RBROWSE_HEADLESS_SHELL=on (a start on a fraction of full Chromium's CPU and memory)",
  apt: 'chromium-headless-shell',
  // Looked for whether or not it is switched on: set-up installs it so that it can be.
  find: () => headlessShellAt(shellAsked() ?? 'on'),
};

const fontDir = (dir: string) => () => (existsSync(dir) ? dir : null);

export const SYSTEM_DEPS: SystemDep[] = [
  { name: 'chromium', why: 'the browser of every session', apt: 'chromium', find: () => findChromium() },
  HEADLESS_SHELL_DEP,
  { name: 'Xvfb', why: 'a display per headful session', apt: 'xvfb', find: () => which('Xvfb') },
  {
    name: 'matchbox',
    why: 'a window manager, so the browser window fills its display',
    apt: 'matchbox-window-manager',
    find: () => which('matchbox-window-manager'),
  },
  { name: 'xrandr', why: 'exact and changeable display sizes', apt: 'x11-xserver-utils', find: () => which('xrandr') },
  { name: 'xprop', why: 'knowing when a display is ready', apt: 'x11-utils', find: () => which('xprop') },
  { name: 'x11vnc', why: 'live view of headful sessions', apt: 'x11vnc', find: () => which('x11vnc') },
  { name: 'xdotool', why: 'mouse and keyboard input', apt: 'xdotool', find: () => which('xdotool') },
  { name: 'maim', why: 'screenshots of headful sessions', apt: 'maim', find: () => which('maim') },
  { name: 'zip', why: 'zips of session directories', apt: 'zip', find: () => which('zip') },
  { name: 'bwrap', why: "each session's and app's namespaces (its box)", apt: 'bubblewrap', find: () => which('bwrap') },
  { name: 'pasta', why: "each session's own network (user-mode, from passt)", apt: 'passt', find: () => which('pasta') },
  { name: 'inotifywait', why: 'filesystem watches inside sessions', apt: 'inotify-tools', find: () => which('inotifywait') },
  { name: 'ffmpeg', why: 'replays (recordings of session screens)', apt: 'ffmpeg', find: () => which('ffmpeg') },
  { name: 'unclutter', why: 'hiding the mouse cursor of headful sessions', apt: 'unclutter-xfixes', find: () => which('unclutter') },
  // A clone's own tests only; an installed package has none.
  ...(existsSync(fileURLToPath(new URL('../test', import.meta.url)))
    ? [{ name: 'tmux', why: 'the tests of rbrowse watch and other terminal output (a real terminal)', apt: 'tmux', find: () => which('tmux') }]
    : []),
  {
    name: 'python3 packages',
    why: "the tests of Kernel's Python SDK against the daemon (test/python), on Debian's python3",
    apt: 'python3-httpx python3-pydantic python3-anyio python3-distro python3-sniffio python3-typing-extensions',
    find: () => {
      const dir = '/usr/lib/python3/dist-packages';
      return ['httpx', 'pydantic', 'anyio', 'distro', 'sniffio', 'typing_extensions.py'].every((m) => existsSync(join(dir, m))) ? dir : null;
    },
  },
  {
    name: 'fonts',
    why: 'legible pages (Liberation fonts)',
    apt: 'fonts-liberation',
    find: fontDir('/usr/share/fonts/truetype/liberation'),
  },
  {
    name: 'emoji font',
    why: 'emoji on pages',
    apt: 'fonts-noto-color-emoji',
    find: fontDir('/usr/share/fonts/truetype/noto'),
  },
];

export interface DepStatus {
  dep: SystemDep;
  path: string | null;
}

export const checkSystemDeps = (): DepStatus[] => SYSTEM_DEPS.map((dep) => ({ dep, path: dep.find() }));

export function installCommand(missing: SystemDep[]): string {
  const pkgs = [...new Set(missing.map((d) => d.apt))].join(' ');
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  return `${sudo}apt-get update -qq && ${sudo}apt-get install -y -qq ${pkgs}`;
}
