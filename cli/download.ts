import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { downloadWithProgress } from './progress.js';

/**
 * Streams a download into `output` with a bar on a terminal, then names the file written; "-"
 * writes the bytes to standard output with nothing else there. A failed download leaves no
 * partial file behind.
 */
export async function saveDownload(label: string, res: Response, output: string): Promise<void> {
  if (output === '-') {
    // A reader that stops early (`| head`) makes stdout fail with EPIPE: an error, not a crash or a hang.
    const failed = new Promise<never>((_, reject) => process.stdout.once('error', reject));
    await Promise.race([downloadWithProgress(label, res, process.stdout, { quiet: true }), failed]);
    return;
  }
  const out = createWriteStream(output);
  try {
    await downloadWithProgress(label, res, out);
    out.end();
    await finished(out);
  } catch (err) {
    out.destroy();
    await rm(output, { force: true });
    throw err;
  }
  process.stdout.write(`${output}\n`);
}
