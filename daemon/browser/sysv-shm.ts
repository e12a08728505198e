import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';

/**
 * Removes the System V shared memory segments that `pids` created and nobody attaches any more.
 * x11vnc shares scanlines and tiles with Xvfb through MIT-SHM and removes its segments only when
 * it exits cleanly: one killed (SIGKILL, a crashed daemon's leftovers reaped) leaves them in the
 * kernel for good, and a few thousand such sessions later no x11vnc can start on the machine
 * ("shmget: No space left on device", kernel.shmmni is 4096).
 */
export async function removeSegmentsOf(pids: Iterable<number>): Promise<number> {
  const wanted = new Set(pids);
  if (!wanted.size) return 0;
  const table = await readFile('/proc/sysvipc/shm', 'utf8').catch(() => '');
  const [header, ...rows] = table.trim().split('\n');
  const columns = (header ?? '').trim().split(/\s+/);
  const [idAt, cpidAt, attachedAt] = ['shmid', 'cpid', 'nattch'].map((c) => columns.indexOf(c));
  if (idAt! < 0 || cpidAt! < 0 || attachedAt! < 0) return 0;
  const ids = rows
    .map((row) => row.trim().split(/\s+/))
    .filter((f) => wanted.has(Number(f[cpidAt!])) && Number(f[attachedAt!]) === 0)
    .map((f) => f[idAt!]!);
  if (!ids.length) return 0;
  await new Promise<void>((resolve) => execFile('ipcrm', ids.flatMap((id) => ['-m', id]), () => resolve()));
  return ids.length;
}
