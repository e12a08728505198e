import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * harness.mjs is not bundled: from the sources it sits beside this module, from the bundle
 * (dist/*.js) in daemon/apps/ of the package.
 */
export const HARNESS_PATH: string = (() => {
  const candidates = ['./harness.mjs', '../daemon/apps/harness.mjs'].map((rel) => fileURLToPath(new URL(rel, import.meta.url)));
  return candidates.find((p) => existsSync(p)) ?? candidates[0]!;
})();

/**
 * tsx's loader as an absolute URL: the child's cwd is the app's directory, where a bare `tsx`
 * would not resolve. It lets the child load TypeScript entrypoints as they are.
 */
export const TSX_LOADER: string = import.meta.resolve('tsx');

/** The daemon's own Node (24), whatever `node` the app's PATH would find. */
export const NODE_BINARY = process.execPath;

/** Arguments of `NODE_BINARY` for one harness run: `list <entrypoint>` or `run <entrypoint> <app> <action>`. */
export function harnessArgs(mode: 'list' | 'run', entrypoint: string, ...rest: string[]): string[] {
  return ['--import', TSX_LOADER, HARNESS_PATH, mode, entrypoint, ...rest];
}

/**
 * The environment an app's processes start from: the daemon's, without its own settings
 * (RBROWSE_*) or a Kernel target the daemon's user happened to export (KERNEL_*), with the daemon's
 * Node first on PATH so npm and its scripts run on Node 24 too.
 */
export function appBaseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith('RBROWSE_') && !k.startsWith('KERNEL_')) env[k] = v;
  }
  env.PATH = [dirname(NODE_BINARY), env.PATH].filter(Boolean).join(':');
  return env;
}
