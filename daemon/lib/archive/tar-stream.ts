import type { Readable } from 'node:stream';

/**
 * A tar stream of a directory's contents, for unpacking inside a session's namespace. node-tar is
 * loaded on first use: most daemons never pack anything, and it is resident memory once loaded.
 */
export async function tarOf(dir: string): Promise<Readable> {
  const tar = await import('tar');
  return tar.create({ cwd: dir, portable: true }, ['.']) as unknown as Readable;
}
