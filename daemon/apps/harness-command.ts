import { BOX_APP, BOX_RUNTIME } from '../box/box-spec.js';

/** The harness (harness.mjs) as an app's box sees it: rbrowse's runtime is at /opt/rbrowse there. */
export const HARNESS_PATH = `${BOX_RUNTIME}/daemon/apps/harness.mjs`;

/**
 * tsx's loader as an app's box sees it: the app's cwd is /app, where a bare `tsx` would not
 * resolve. It lets the child load TypeScript entrypoints as they are.
 */
export const TSX_LOADER: string = (() => {
  const host = import.meta.resolve('tsx');
  const at = host.lastIndexOf('/node_modules/');
  return `file://${BOX_RUNTIME}${host.slice(at)}`;
})();

/** The file descriptor the harness writes its answer to (see harness.mjs). */
export const RESULT_FD = 3;

/** Arguments of the box's Node for one harness run: `list <entrypoint>` or `run <entrypoint> <app> <action>`. */
export function harnessArgs(mode: 'list' | 'run', entrypointRelPath: string, ...rest: string[]): string[] {
  return ['--import', TSX_LOADER, HARNESS_PATH, mode, `${BOX_APP}/${entrypointRelPath}`, ...rest];
}

/**
 * The environment an app's programs start from, inside its box: its home, /app, rbrowse's Node
 * first on PATH (so npm and its scripts run on Node 24 too), and where the harness answers. Nothing
 * of the daemon's own environment is in it.
 */
export function appBaseEnv(): Record<string, string> {
  return {
    PATH: `${BOX_RUNTIME}/bin:/usr/local/bin:/usr/bin:/bin`,
    HOME: '/home/kernel',
    USER: 'kernel',
    TMPDIR: '/tmp',
    LANG: 'C.UTF-8',
    RBROWSE_RESULT_FD: String(RESULT_FD),
    // npm's cache and logs in the box's home, not a path of the host's.
    npm_config_cache: '/home/kernel/.npm',
    npm_config_update_notifier: 'false',
  };
}
