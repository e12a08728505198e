import { fileURLToPath } from 'node:url';
import { inBox } from '../box/box-runtime.js';
import { BOX_APP, BOX_NODE, BOX_PYTHON_SDK, BOX_RUNTIME } from '../box/box-spec.js';

/** The harnesses as an app's box sees them: rbrowse's runtime is at /opt/rbrowse there. */
export const HARNESS_PATH = `${BOX_RUNTIME}/daemon/apps/harness.mjs`;
const PYTHON_HARNESS_PATH = `${BOX_RUNTIME}/daemon/apps/harness.py`;

// An action's heap is capped so an allocation loop ends in the child, not the machine (its box's memory limit holds too).
export const ACTION_MAX_OLD_SPACE_MB = 1024;

/** Whether an entrypoint is a Python app's (Kernel's `kernel.App` framework) rather than a JavaScript or TypeScript one's. */
export const isPythonEntrypoint = (entrypointRelPath: string): boolean => entrypointRelPath.endsWith('.py');

/**
 * tsx's loader as an app's box sees it: the app's cwd is /app, where a bare `tsx` would not
 * resolve. It lets the child load TypeScript entrypoints as they are.
 */
const tsxLoader = (): string => `file://${inBox(fileURLToPath(import.meta.resolve('tsx')))}`;

/** The file descriptor the harness writes its answer to (see harness.mjs). */
export const RESULT_FD = 3;

/**
 * The command line of one harness run in an app's box, `list <entrypoint>` or `run <entrypoint>
 * <app> <action>`: rbrowse's Node with tsx for JavaScript and TypeScript, the system's python3 for
 * Python.
 */
export function harnessArgv(mode: 'list' | 'run', entrypointRelPath: string, ...rest: string[]): string[] {
  const tail = [mode, `${BOX_APP}/${entrypointRelPath}`, ...rest];
  if (isPythonEntrypoint(entrypointRelPath)) return ['python3', PYTHON_HARNESS_PATH, ...tail];
  return [BOX_NODE, ...(mode === 'run' ? [`--max-old-space-size=${ACTION_MAX_OLD_SPACE_MB}`] : []), '--import', tsxLoader(), HARNESS_PATH, ...tail];
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
    // Python apps: Kernel's SDK as the daemon provides it (an app's own copy comes first), log
    // lines as they are printed, no bytecode written into the read-only code.
    PYTHONPATH: `${BOX_PYTHON_SDK}/shim:${BOX_PYTHON_SDK}/src`,
    PYTHONUNBUFFERED: '1',
    PYTHONDONTWRITEBYTECODE: '1',
  };
}
