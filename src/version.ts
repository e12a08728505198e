import { readFileSync } from 'node:fs';

/** Read at run time from package.json, so a version bump needs no code change. */
export const VERSION: string = (() => {
  for (const rel of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8'));
      if (pkg.name === 'rbrowse') return String(pkg.version);
    } catch {
      // try the next candidate: the bundle and the sources sit at different depths
    }
  }
  return '0.0.0';
})();
