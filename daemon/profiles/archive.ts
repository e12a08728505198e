import { randomUUID } from 'node:crypto';
import type { Stats } from 'node:fs';
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import ignore from 'ignore';
import type { ReadEntry } from 'tar';

/**
 * What a saved profile leaves out (gitignore syntax, at any depth): caches Chromium rebuilds by
 * itself, and lock files, crash dumps and metrics that belong to one browser run and would confuse
 * the next. Cookies, Local Storage, IndexedDB, Service Worker storage and Preferences stay.
 */
const EXCLUDED = ignore().add([
  'Cache/',
  'Code Cache/',
  'GPUCache/',
  'GrShaderCache/',
  'GraphiteDawnCache/',
  'ShaderCache/',
  'DawnCache/',
  'DawnGraphiteCache/',
  'DawnWebGPUCache/',
  'component_crx_cache/',
  'extensions_crx_cache/',
  'Crashpad/',
  'Crash Reports/',
  'BrowserMetrics/',
  '*.pma',
  'Singleton*',
  'DevToolsActivePort',
  'lockfile',
  'LOCK',
]);

const kept = (path: string, isDir: boolean) => !EXCLUDED.ignores(isDir ? `${path}/` : path);
/** Creating, node-tar hands the filter a Stats (a ReadEntry only when it reads an archive). */
const isPlain = (stat: Stats | ReadEntry) => 'isFile' in stat && (stat.isFile() || stat.isDirectory());

/**
 * Writes a tar of `userDataDir` to `archive`, atomically: into a temporary file beside it, synced,
 * then renamed over the old one, so a crash at any moment leaves the previous archive whole.
 * Resolves false (and writes nothing) when the directory is empty.
 */
export async function packUserData(userDataDir: string, archive: string): Promise<boolean> {
  const entries = (await readdir(userDataDir)).filter((name) => kept(name, false));
  if (!entries.length) return false;
  await mkdir(dirname(archive), { recursive: true, mode: 0o700 });
  const temp = `${archive}.${randomUUID()}.tmp`;
  const tar = await import('tar');
  try {
    await tar.c(
      {
        cwd: userDataDir,
        file: temp,
        portable: true,
        // Plain files and directories only: a symlink planted in the user data must not travel.
        filter: (path, stat) => isPlain(stat) && kept(path, (stat as Stats).isDirectory()),
      },
      entries,
    );
    await fsync(temp);
    await rename(temp, archive);
    await fsync(dirname(archive));
    return true;
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/** Unpacks a profile archive into an empty user-data directory; false when there is none yet. */
export async function unpackUserData(archive: string, userDataDir: string): Promise<boolean> {
  const tar = await import('tar');
  try {
    await tar.x({
      file: archive,
      cwd: userDataDir,
      strict: true,
      preserveOwner: false,
      // Only what packUserData writes; node-tar already refuses absolute paths and `..`.
      filter: (_path, entry) => 'type' in entry && (entry.type === 'File' || entry.type === 'Directory'),
    });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && (err as NodeJS.ErrnoException).path === archive) return false;
    throw err;
  }
}

/** Temporary archives a crash left behind (packUserData's names), to be removed. */
export const isLeftoverTemp = (file: string) => file.endsWith('.tmp');

async function fsync(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
