import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** A secret kept in a 0600 file: read it, or make it once (two racing processes end up with the same one). */
export async function readOrCreateSecret(file: string, make: () => string): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const value = make();
  // wx: if two processes race, one loses with EEXIST instead of both writing different secrets.
  await writeFile(file, `${value}\n`, { mode: 0o600, flag: 'wx' }).catch(async (err) => {
    if (err.code !== 'EEXIST') throw err;
  });
  await chmod(file, 0o600);
  return (await readFile(file, 'utf8')).trim();
}
