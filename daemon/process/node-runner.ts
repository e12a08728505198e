import { existsSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_BINARY } from '../apps/harness-command.js';

/**
 * A Node program of the daemon's own that runs in a session's namespace (the Playwright runner,
 * the WebDriver BiDi mapper), in daemon/`dir`/`name`. Such .mjs files are not bundled: the path is
 * the same from the sources (daemon/process/) and from the bundle (dist/).
 */
export function runnerScript(dir: string, name: string): string {
  const candidates = [`../${dir}/${name}`, `../daemon/${dir}/${name}`].map((rel) => fileURLToPath(new URL(rel, import.meta.url)));
  return candidates.find((p) => existsSync(p)) ?? candidates[0]!;
}

/**
 * What such a program needs from the host inside the namespace, read-only: rbrowse's package
 * (its scripts and node_modules) and its Node, wherever they are installed.
 */
export const RUNNER_FILES: string[] = (() => {
  const root = resolve(dirname(runnerScript('process', 'node-runner.ts')), '../..');
  const node = realpathSync(NODE_BINARY);
  return node.startsWith(`${root}/`) ? [root] : [root, node];
})();
