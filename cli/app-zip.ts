import { readdir, readFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import type { Ignore } from 'ignore';

/** Never uploaded: the daemon installs dependencies itself, and history is not app code. */
const ALWAYS_SKIPPED = new Set(['.git', 'node_modules']);

export interface AppFiles {
  files: string[];
  /** Symbolic links left out: the daemon refuses them in a deploy's zip. */
  skippedLinks: string[];
}

/**
 * The files of an app directory a deploy uploads, as relative paths: everything but what its
 * .gitignore files exclude (each applying below its own directory, as in git), .git and node_modules.
 */
export async function appFiles(root: string): Promise<AppFiles> {
  // Loaded by the commands that upload, not by every command at start-up.
  const { default: ignore } = await import('ignore');
  const files: string[] = [];
  const skippedLinks: string[] = [];
  const walk = async (rel: string, rules: { base: string; ig: Ignore }[]): Promise<void> => {
    const entries = await readdir(join(root, rel), { withFileTypes: true });
    if (entries.some((e) => e.name === '.gitignore' && e.isFile())) {
      rules = [...rules, { base: rel, ig: ignore().add(await readFile(join(root, rel, '.gitignore'), 'utf8')) }];
    }
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      const isDir = e.isDirectory();
      if (isDir && ALWAYS_SKIPPED.has(e.name)) continue;
      if (rules.some((r) => r.ig.ignores(posix.relative(r.base, path) + (isDir ? '/' : '')))) continue;
      if (isDir) await walk(path, rules);
      else if (e.isFile()) files.push(path);
      else if (e.isSymbolicLink()) skippedLinks.push(path);
    }
  };
  await walk('', []);
  return { files, skippedLinks };
}

/** A zip of those files, in memory: an app's sources are small, and the upload needs the whole. */
export async function zipFiles(root: string, files: string[]): Promise<Buffer> {
  const { ZipArchive } = await import('archiver');
  const archive = new ZipArchive({ zlib: { level: 9 } });
  const chunks: Buffer[] = [];
  archive.on('data', (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise<void>((resolve, reject) => {
    archive.on('end', resolve);
    archive.on('error', reject);
  });
  for (const f of files) archive.file(join(root, f), { name: f });
  await archive.finalize();
  await done;
  return Buffer.concat(chunks);
}
