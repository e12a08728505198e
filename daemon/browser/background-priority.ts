import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';

/** The lowest priority there is: its group gets 15/1024 of a core's time against any normal one. */
const LOWEST = 19;
/**
 * How long a lowered launch may take before it gets its share back. On a machine kept busy by
 * others, 15/1024 of a core starves a launch: a pool of one took over a minute to fill. Past
 * this, finishing the start matters more than keeping out of the way.
 */
const MAX_LOWERED_LAUNCH_MS = 10_000;

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
 * A browser launched ahead of demand (a standby or pool browser) runs at the lowest CPU priority:
 * its start and the second or so of work Chromium does after "DevTools listening" then take only
 * what the creates, pages and requests of live sessions leave over, instead of half the machine
 * (a cold create right after a standby refill took twice as long). It gets its normal priority
 * back when it is handed to someone: restore().
 *
 * Priority is per autogroup (each detached program in a box leads one: the browser, Xvfb, the
 * window manager, x11vnc), so every process of the box is found on the host, below its
 * bubblewrap, and its group lowered.
 */
export class BackgroundPriority {
  private restored = false;
  /** Raised for the rest of a launch that took too long (see MAX_LOWERED_LAUNCH_MS). */
  private raised = false;
  /** The last nice change asked for: each waits for the one before, so they land in order. */
  private changing: Promise<void> = Promise.resolve();
  private starved?: NodeJS.Timeout;

  private constructor(private readonly box: { hostPids(): Promise<number[]> }) {}

  /** Lowers a box's processes, or none where it could not be undone. */
  static forBox(box: { hostPids(): Promise<number[]> }): BackgroundPriority | undefined {
    supported ??= canLowerAndRestore();
    return supported ? new BackgroundPriority(box) : undefined;
  }

  /**
   * Everything in the box now to the lowest priority, until restore(). A launch that has not
   * ended (launched()) within MAX_LOWERED_LAUNCH_MS gets its normal priority for the rest of it.
   */
  lower(): Promise<void> {
    if (this.restored) return Promise.resolve();
    this.starved ??= setTimeout(() => {
      this.raised = true;
      void this.setNice(0);
    }, MAX_LOWERED_LAUNCH_MS);
    this.starved.unref();
    return this.setNice(LOWEST);
  }

  /** The launch is over: the browser waits at the lowest priority until restore(), however long. */
  launched(): void {
    clearTimeout(this.starved);
    if (this.raised && !this.restored) void this.setNice(LOWEST);
    this.raised = false;
  }

  /** Normal priority for everything in the box; nothing is lowered afterwards. */
  async restore(): Promise<void> {
    this.restored = true;
    clearTimeout(this.starved);
    await this.setNice(0, true);
  }

  private setNice(nice: number, restoring = false): Promise<void> {
    // A change that failed (its box gone) does not hold back the ones after it.
    this.changing = this.changing
      .catch(() => {})
      .then(async () => {
        // Handed over while an earlier change waited: only the restore applies.
        if (this.restored && !restoring) return;
        await Promise.all((await this.box.hostPids()).map((pid) => setGroupNice(pid, nice)));
      });
    return this.changing;
  }
}
