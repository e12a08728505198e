import { open, rename, unlink } from 'node:fs/promises';

let serial = 0;

/**
 * Replaces `file` with `text` atomically: a temporary file beside it (mode 0600), written whole,
 * fsynced, then renamed over it; on any failure the temporary file goes and `file` is untouched.
 * Not write-file-atomic: it issues one write() and ignores a short count, so on a full disk it
 * renamed a truncated document into place (seen in test/faults.test.ts). FileHandle.writeFile
 * writes until everything is written or a write fails.
 */
export async function replaceFile(file: string, text: string): Promise<void> {
  const temp = `${file}.${process.pid}.${++serial}.tmp`;
  const fh = await open(temp, 'wx', 0o600);
  try {
    try {
      await fh.writeFile(text);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(temp, file);
  } catch (err) {
    await unlink(temp).catch(() => {});
    throw err;
  }
}
