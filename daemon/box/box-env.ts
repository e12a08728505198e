import { BOX_USER } from './box-spec.js';

/**
 * The environment every program of a session's box starts from: its user's home and XDG
 * directories, its /tmp, and its display when it has one. Nothing of the daemon's own
 * environment (its home, its settings) is in it.
 */
export function boxEnv(display?: number): Record<string, string> {
  const home = BOX_USER.home;
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    LANG: process.env.LANG && /^[\w.@-]+$/.test(process.env.LANG) ? process.env.LANG : 'C.UTF-8',
    ...(process.env.TZ && /^[\w/+-]+$/.test(process.env.TZ) ? { TZ: process.env.TZ } : {}),
    HOME: home,
    USER: BOX_USER.name,
    LOGNAME: BOX_USER.name,
    XDG_CONFIG_HOME: `${home}/.config`,
    XDG_CACHE_HOME: `${home}/.cache`,
    XDG_DATA_HOME: `${home}/.local/share`,
    XDG_RUNTIME_DIR: '/tmp/.xdg-runtime',
    TMPDIR: '/tmp',
    ...(display === undefined ? {} : { DISPLAY: `:${display}` }),
  };
}
