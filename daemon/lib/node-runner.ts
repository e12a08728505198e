import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * A program of the daemon's own that is not bundled (the launcher, the boxes' agent, the runners),
 * in daemon/`dir`/`name`: the path is the same from the sources (daemon/lib/) and from the
 * bundle (dist/).
 */
export function runnerScript(dir: string, name: string): string {
  const candidates = [`../${dir}/${name}`, `../daemon/${dir}/${name}`].map((rel) => fileURLToPath(new URL(rel, import.meta.url)));
  return candidates.find((p) => existsSync(p)) ?? candidates[0]!;
}
