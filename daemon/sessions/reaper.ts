import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { findMarkedProcesses, killMarked, waitGone } from '../lib/procs.js';
import type { Boxes } from '../box/boxes.js';
import { removeTree } from '../lib/fs-util.js';
import type { SessionRecord } from './record.js';
import type { History } from '../lib/state/history.js';
import type { Store } from '../lib/state/store.js';

/** How long a crashed daemon's launcher may take to let its boxes' browsers close (launcher.mjs gives them 17 s; each agent gives its browser 15 s). */
const LAUNCHER_GRACE_MS = 20_000;

/**
 * Run once at start, before anything is launched: nothing of this home can legitimately be
 * running yet, so every marked process is a leftover of a crashed daemon. Its sessions end.
 */
export async function reapLeftovers(opts: {
  home: string;
  sessionsDir: string;
  store: Store;
  history: History<SessionRecord>;
  boxes: Boxes;
  log: (msg: string, extra?: object) => void;
  /** Runs once the orphans' boxes have ended: a feature keeps what they wrote on their disks (a profile saved with save_changes). */
  salvage?: (orphans: SessionRecord[]) => Promise<void>;
  /** Box disks that outlive a daemon (running deployments' images). */
  keepDisk?: (id: string) => boolean;
}): Promise<void> {
  // A session still has its runtime while its processes may run: live ones, and deleted ones whose
  // background teardown (a profile's save among it) the crash interrupted.
  const orphaned = opts.store.collection('sessions').filter((s) => !s.deleted_at || s.runtime);
  // A crashed daemon's launcher closes its boxes' browsers as on a normal end (cookies flushed),
  // then exits: waited for, before anything of its is killed.
  const launchers = await findMarkedProcesses(opts.home, 'launcher');
  if (launchers.length) await waitGone(launchers, LAUNCHER_GRACE_MS);
  const killed = await killMarked(opts.home);
  await opts.boxes.reap();
  await opts.salvage?.(orphaned).catch((err: unknown) => opts.log('salvage of orphaned sessions failed', { error: String(err) }));
  const disks = (await opts.boxes.leftoverDisks()).filter((id) => !opts.keepDisk?.(id));
  await Promise.all(disks.map((id) => opts.boxes.dropDisk(id)));
  if (orphaned.length) {
    const now = new Date().toISOString();
    await opts.store.update(() => {
      for (const s of orphaned) {
        if (!s.deleted_at) {
          s.deleted_at = now;
          s.end_reason = 'daemon_restart';
        }
        delete s.runtime;
      }
    });
  }
  // Nothing of the old daemon runs any more: every session it left is history now (a state file
  // from before the history existed holds all its ended ones too).
  const ended = [...opts.store.data.sessions];
  for (const s of ended) {
    // State files from before jwts were derived kept them; they stay behind.
    const old = s as SessionRecord & { jwt?: string; live_jwt?: string };
    delete old.jwt;
    delete old.live_jwt;
  }
  await opts.store.retire('sessions', ended, opts.history);
  // Once more, so the last good copy is this document too, not one that held them (and old jwts).
  if (ended.length) await opts.store.update(() => {});
  const dirs = await readdir(opts.sessionsDir).catch(() => [] as string[]);
  await Promise.all(dirs.map((d) => removeTree(join(opts.sessionsDir, d), opts.log)));
  if (killed.length || orphaned.length || dirs.length || disks.length) {
    opts.log('reaped leftovers of a previous daemon', {
      processes: killed.length,
      sessions: orphaned.length,
      directories: dirs.length,
      disks: disks.length,
    });
  }
}
