import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { FileOps } from '../../box/box-files.js';

/**
 * What a saved profile leaves out, at any depth: caches Chromium rebuilds by itself, and lock
 * files, crash dumps and metrics that belong to one browser run and would confuse the next.
 * Cookies, Local Storage, IndexedDB, Service Worker storage and Preferences stay.
 */
const EXCLUDED_DIRS = [
  'Cache',
  'Code Cache',
  'GPUCache',
  'GrShaderCache',
  'GraphiteDawnCache',
  'ShaderCache',
  'DawnCache',
  'DawnGraphiteCache',
  'DawnWebGPUCache',
  'component_crx_cache',
  'extensions_crx_cache',
  'Crashpad',
  'Crash Reports',
  'BrowserMetrics',
];
const EXCLUDED_FILES = ['*.pma', 'Singleton*', 'DevToolsActivePort', 'lockfile', 'LOCK'];

/**
 * Inside the box, as its user: the plain files and directories of the user data (a symlink the
 * session planted is not followed and does not travel), without the excluded ones, as a tar on
 * stdout; nothing at all (exit 3) when the directory is empty or missing.
 */
const PACK_SCRIPT = [
  '[ -d "$1" ] || exit 3',
  'cd -- "$1" || exit 4',
  'shift',
  '[ -n "$(ls -A)" ] || exit 3',
  'find . -mindepth 1 "$@" | tar --null --no-recursion --numeric-owner --owner=0 --group=0 -c -f - -T -',
].join('\n');

function findExpression(): string[] {
  const dirs = EXCLUDED_DIRS.flatMap((d, i) => [...(i ? ['-o'] : []), '-name', d]);
  const files = EXCLUDED_FILES.flatMap((f, i) => [...(i ? ['-o'] : []), '-name', f]);
  // Excluded directories are pruned whole; excluded files skipped; of the rest, files and directories printed.
  // %P: the path below the directory, as the archive names it (no "./").
  return [
    '-type',
    'd',
    '(',
    ...dirs,
    ')',
    '-prune',
    '-o',
    '-type',
    'f',
    '(',
    ...files,
    ')',
    '-o',
    '(',
    '-type',
    'f',
    '-o',
    '-type',
    'd',
    ')',
    '-printf',
    '%P\\0',
  ];
}

/**
 * Writes a tar of a box's user data to `archive`, atomically: into a temporary file beside it,
 * synced, then renamed over the old one, so a crash at any moment leaves the previous archive
 * whole. Resolves false (and writes nothing) when the directory is empty. The tar is made inside
 * the box, as its user: the daemon never walks the session's files on the host.
 */
export async function packUserData(files: FileOps, userDataDir: string, archive: string): Promise<boolean> {
  await mkdir(dirname(archive), { recursive: true, mode: 0o700 });
  const temp = `${archive}.${randomUUID()}.tmp`;
  // find's expression goes in as arguments after the directory.
  const packed = files.pack(PACK_SCRIPT, [userDataDir, ...findExpression()]);
  try {
    await pipeline(packed.stream, createWriteStream(temp, { mode: 0o600 }));
    const empty = await packed.done.then(
      () => false,
      (err: Error) => {
        if (/\(3\)/.test(err.message)) return true;
        throw err;
      },
    );
    if (empty || (await stat(temp)).size === 0) {
      await rm(temp, { force: true });
      return false;
    }
    await fsync(temp);
    await rename(temp, archive);
    await fsync(dirname(archive));
    return true;
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

/** Unpacks a profile archive into a box's user-data directory (inside the box, as its user); false when there is none yet. */
export async function unpackUserData(archive: string, files: FileOps, userDataDir: string): Promise<boolean> {
  const exists = await stat(archive).then(
    () => true,
    () => false,
  );
  if (!exists) return false;
  await files.unpack(userDataDir, createReadStream(archive));
  return true;
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
