import { printError } from './output.js';

/**
 * Deletes each of `ids` in turn, printing each one deleted; a failure is reported and the rest
 * still go, and the command then exits non-zero.
 */
export async function deleteEach(ids: string[], remove: (id: string) => Promise<unknown>): Promise<void> {
  for (const id of ids) {
    try {
      await remove(id);
      process.stdout.write(`${id}\n`);
    } catch (err) {
      printError(err);
      process.exitCode = 1;
    }
  }
}
