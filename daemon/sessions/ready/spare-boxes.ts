import type { Box } from '../../box/box.js';
import { Refill } from './refill.js';

export interface SpareBoxesDeps {
  /** How many to keep started (RBROWSE_SPARE_BOXES); 0: none, every cold create starts its own. */
  count: number;
  /** Starts an empty session box under this id, which becomes the id of the session that takes it. */
  start: (id: string) => Promise<Box>;
  newId: () => string;
  /** True while creates are launching browsers: a spare's start then waits, so it never competes with them. */
  busy: () => boolean;
  log: (msg: string, extra?: object) => void;
}

/**
 * Session boxes started ahead of a cold create: the namespaces, network and agent a browser runs
 * in, without the browser. Starting one costs ~150 ms here (its agent is a Node process), a
 * fifth of a cold create; a create that finds no standby browser takes a spare box and starts
 * only Chromium. A box knows its session's id from its start (its disk, cgroups and the marks the
 * reaper finds are named by it), so the spare's id becomes the session's. Kept full by the same
 * ready-things mechanism as standby browsers and pools, one start at a time, never while a
 * create launches.
 */
export class SpareBoxes {
  private readonly ready: Box[] = [];
  private readonly refill: Refill<Box>;
  private closed = false;
  private served = 0;

  constructor(private readonly deps: SpareBoxesDeps) {
    this.refill = new Refill<Box>({
      short: () => !this.closed && this.ready.length + this.refill.launching < deps.count,
      mayLaunch: () => !deps.busy(),
      launch: () => deps.start(deps.newId()),
      place: async (box) => {
        if (this.closed || this.ready.length >= deps.count) return box.stop();
        this.ready.push(box);
        // One that ends while it waits (its agent killed) is dropped and replaced.
        void box.exited.then(() => {
          const at = this.ready.indexOf(box);
          if (at >= 0) this.ready.splice(at, 1);
          this.refill.kick();
        });
      },
      failed: (err, failures) => deps.log('spare box failed to start', { failures, error: String((err as Error)?.message ?? err) }),
    });
  }

  /** Starts filling (after the daemon listens). */
  start(): void {
    this.refill.kick();
  }

  /** A started box for a cold create (its id is the session's), or undefined; the next is started once no create launches. */
  take(): Box | undefined {
    let box: Box | undefined;
    while (!box && this.ready.length) {
      const next = this.ready.shift()!;
      // One whose network stopped while it waited would give its session none: a fresh one is better.
      if (next.networkError) void next.stop();
      else if (!next.isStopped) box = next;
    }
    if (box) this.served++;
    this.refill.kick();
    return box;
  }

  /** GET /health: how many are started of how many kept, and how many creates took one since the daemon started. */
  stats(): { ready: number; wanted: number; served: number } {
    return { ready: this.ready.length, wanted: this.deps.count, served: this.served };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.refill.stop();
    await this.refill.inflight;
    await Promise.all(this.ready.splice(0).map((box) => box.stop()));
  }
}
