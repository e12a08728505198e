import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessLauncher } from '../../daemon/box/launcher.js';
import type { Box } from '../../daemon/box/box.js';
import { outputOf } from '../../daemon/box/box-process.js';
import { Boxes } from '../../daemon/box/boxes.js';
import { FileOps } from '../../daemon/box/box-files.js';

/** A box of a session's kind, made as the daemon makes them, without a daemon: for tests of what runs in boxes. */
export async function standaloneBox(): Promise<{
  box: Box;
  files: FileOps;
  sh(script: string): Promise<{ code: number | null; stdout: string; stderr: string }>;
  close(): Promise<void>;
}> {
  const home = await mkdtemp(join(tmpdir(), 'rbrowse-box-'));
  const log = () => {};
  const launcher = new ProcessLauncher({ home, log });
  const boxes = await Boxes.create({ home, dir: join(home, 'boxes'), host: launcher, log });
  const box = await boxes.start({ kind: 'session', id: `test-${Date.now()}` });
  return {
    box,
    files: new FileOps(box),
    async sh(script) {
      const r = await outputOf(box.spawn(['sh', '-c', script]));
      return { code: r.code, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
    },
    async close() {
      await box.stop();
      await boxes.close();
      launcher.close();
      await rm(home, { recursive: true, force: true });
    },
  };
}

/** A session's disk on the host (its home and /tmp below it), as /proc/mounts shows it to anyone. */
export async function diskOf(id: string): Promise<string> {
  const mounts = await readFile('/proc/mounts', 'utf8');
  const dir = mounts
    .split('\n')
    .map((l) => l.split(' ')[1]!)
    .find((m) => m?.endsWith(`-${id}`));
  if (!dir) throw new Error(`the disk of ${id} is not mounted`);
  return dir;
}
