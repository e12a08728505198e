import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';

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

/** Whether the change landed: false for a process already gone, or a kernel without autogroups. */
function setGroupNice(pid: number, nice: number): Promise<boolean> {
  return writeFile(`/proc/${pid}/autogroup`, String(nice)).then(
    () => true,
    () => false,
  );
}

/** One process of each autogroup among pids, the first found (the group's oldest, as hostPids() lists them). */
async function oneOfEachGroup(pids: number[]): Promise<number[]> {
  const groups = await Promise.all(
    pids.map(async (pid) => ({ pid, group: (await readFile(`/proc/${pid}/autogroup`, 'utf8').catch(() => '')).split(' ')[0] })),
  );
  const leaders = new Map<string, number>();
  for (const { pid, group } of groups) if (group && !leaders.has(group)) leaders.set(group, pid);
  return [...leaders.values()];
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
  /**
   * One process of each group lowered last. A change applies to a whole group, so giving the
   * priority back needs only these: a hand-over waits for a few writes, not for a walk of every
   * thread of the box (~100 reads, 11-14 ms of a 25 ms create).
   */
  private lowered: number[] = [];

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
        // A group whose known process has gone may live on in others: then every process is looked at.
        const known = nice === 0 && this.lowered.length ? await Promise.all(this.lowered.map((pid) => setGroupNice(pid, 0))) : [false];
        if (known.every(Boolean)) return;
        const groups = await oneOfEachGroup(await this.box.hostPids());
        await Promise.all(groups.map((pid) => setGroupNice(pid, nice)));
        this.lowered = nice === 0 ? [] : groups;
      });
    return this.changing;
  }
}
