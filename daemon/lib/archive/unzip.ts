import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';
import { ApiError, BadRequestError, ServiceUnavailableError } from '../../../src/errors.js';

export interface UnzipLimits {
  /** Uncompressed bytes of all entries together. */
  maxBytes: number;
  maxEntries: number;
  /** Uncompressed to compressed size, per entry above 1 MiB: beyond it an entry reads as a bomb. */
  maxRatio: number;
  /** The room its owner has left on the disk (smaller than maxBytes), refused in its own words past it. */
  room?: { bytes: number; refusal: () => ApiError };
}

export const DEFAULT_UNZIP_LIMITS: UnzipLimits = { maxBytes: 512 * 1024 ** 2, maxEntries: 20_000, maxRatio: 200 };

export interface Unzipped {
  files: string[];
  bytes: number;
}

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

/**
 * Extracts an uploaded zip into `dest` (which must not exist yet), refusing with a 400 anything
 * that could write outside it or exhaust the disk: absolute or `..` paths (yauzl refuses them),
 * symlinks, encrypted entries, too many entries, too many bytes, and compression ratios of a
 * bomb. Sizes are counted as the bytes come out, not as the headers claim. On any refusal `dest`
 * is removed, so nothing is left written. `field` names the form field in the error.
 */
export async function extractZip(zipPath: string, dest: string, field = 'file', limits = DEFAULT_UNZIP_LIMITS): Promise<Unzipped> {
  const refuse = (why: string) => BadRequestError.field(field, why);
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.openPromise(zipPath, { lazyEntries: true, validateEntrySizes: true, strictFileNames: true });
  } catch (err) {
    throw refuse(`not a readable zip archive: ${(err as Error).message}`);
  }
  await mkdir(dest, { recursive: false, mode: 0o700 });
  const files: string[] = [];
  let bytes = 0;
  try {
    if (zip.entryCount > limits.maxEntries) throw refuse(`more than ${limits.maxEntries} entries`);
    for await (const entry of zip.eachEntry()) {
      const name = entry.fileName;
      if (name.includes('\\')) throw refuse(`entry ${JSON.stringify(name)} has a backslash in its path`);
      const mode = (entry.externalFileAttributes >>> 16) & S_IFMT;
      if (mode === S_IFLNK) throw refuse(`entry ${JSON.stringify(name)} is a symbolic link`);
      if (entry.isEncrypted()) throw refuse(`entry ${JSON.stringify(name)} is encrypted`);
      const target = join(dest, name);
      if (name.endsWith('/')) {
        await mkdir(target, { recursive: true, mode: 0o755 });
        continue;
      }
      if (limits.room && bytes + entry.uncompressedSize > limits.room.bytes) throw limits.room.refusal();
      if (bytes + entry.uncompressedSize > limits.maxBytes) throw refuse(`more than ${limits.maxBytes} bytes uncompressed`);
      if (entry.uncompressedSize > 1024 ** 2 && entry.uncompressedSize > entry.compressedSize * limits.maxRatio) {
        throw refuse(
          `entry ${JSON.stringify(name)} expands ${Math.round(entry.uncompressedSize / Math.max(1, entry.compressedSize))}-fold (a zip bomb?)`,
        );
      }
      await mkdir(dirname(target), { recursive: true, mode: 0o755 });
      const counter = new Transform({
        transform(chunk: Buffer, _enc, done) {
          bytes += chunk.length;
          if (limits.room && bytes > limits.room.bytes) done(limits.room.refusal());
          else if (bytes > limits.maxBytes) done(refuse(`more than ${limits.maxBytes} bytes uncompressed`));
          else done(null, chunk);
        },
      });
      try {
        await pipeline(await zip.openReadStreamPromise(entry), counter, createWriteStream(target, { flags: 'wx', mode: 0o644 }));
      } catch (err) {
        if (err instanceof ApiError) throw err;
        // A disk that filled meanwhile is the machine's condition, not a fault of the zip: retryable.
        if ((err as NodeJS.ErrnoException).code === 'ENOSPC') throw new ServiceUnavailableError('no space left on the disk for the unpacked files');
        throw refuse(`entry ${JSON.stringify(name)} could not be extracted: ${(err as Error).message}`);
      }
      files.push(name);
    }
    return { files, bytes };
  } catch (err) {
    await rm(dest, { recursive: true, force: true });
    if (err instanceof ApiError) throw err;
    // yauzl's own refusals (invalid relative path, bad sizes) arrive here.
    throw refuse((err as Error).message);
  } finally {
    zip.close();
  }
}
