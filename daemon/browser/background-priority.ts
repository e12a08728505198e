import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import type { Spawner } from './launcher.js';

/** The lowest priority there is: its group gets 15/1024 of a core's time against any normal one. */
const LOWEST = 19;

/**
 * Whether a lowered browser can be given its share back: the kernel schedules by autogroup (each
 * detached child's session is one), and raising a group's priority again needs root or an
 * RLIMIT_NICE of 20. Where it cannot, nothing is lowered: a browser handed over must never stay
 * slow.
 */
function canLowerAndRestore(): boolean {
  try {
    if (readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() !== '1') return false;
    if (process.getuid?.() === 0) return true;
    const limit = /^Max nice priority\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return Number(limit?.[1] ?? 0) >= 20;
  } catch {
    return false;
  }
}

let supported: boolean | undefined;

async function setGroupNice(pid: number, nice: number): Promise<void> {
  // A process already gone, or a kernel without autogroups: nothing to change.
  await writeFile(`/proc/${pid}/autogroup`, String(nice)).catch(() => {});
}

/**
 * A browser launched ahead of demand (a standby or pool browser) starts at the lowest CPU
 * priority: its start and the second or so of work Chromium does after "DevTools listening"
 * then take only what the creates, pages and requests of live sessions leave over, instead of
 * half the machine (a cold create right after a standby refill took twice as long). It gets its
 * normal priority back when it is handed to someone: restore().
 */
export class BackgroundPriority {
  private readonly groups = new Set<number>();
  private restored = false;

  private constructor(private readonly inner: Spawner) {}

  /** A lowering spawner for one browser's processes, or none where it could not be undone. */
  static for(spawn: Spawner): BackgroundPriority | undefined {
    supported ??= canLowerAndRestore();
    return supported ? new BackgroundPriority(spawn) : undefined;
  }

  /** Starts a process as `inner` does, in its own autogroup at the lowest priority (until restore()). */
  readonly spawn: Spawner = async (command, args, env, opts) => {
    const child = await this.inner(command, args, env, opts);
    if (!this.restored) {
      this.groups.add(child.pid);
      await setGroupNice(child.pid, LOWEST);
    }
    return child;
  };

  /** Normal priority for everything started so far; later starts are not lowered. */
  async restore(): Promise<void> {
    this.restored = true;
    await Promise.all([...this.groups].map((pid) => setGroupNice(pid, 0)));
    this.groups.clear();
  }
}
