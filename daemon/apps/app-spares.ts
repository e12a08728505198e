import type { Box } from '../box/box.js';
import { Refill } from '../sessions/ready/refill.js';

export interface AppSparesDeps {
  /** Boxes kept started per deployment invoked lately (RBROWSE_APP_SPARE_BOXES); 0: none. */
  count: number;
  /** A deployment not invoked for this long has its boxes stopped (RBROWSE_APP_SPARE_IDLE_SECONDS). */
  idleMs: number;
  /** Starts a box for the deployment's code under the id of the invocation it will serve. */
  start: (deploymentId: string, invocationId: string) => Promise<Box>;
  /** Whether the deployment can still be invoked (a stopped one's code is about to go). */
  running: (deploymentId: string) => boolean;
  /** Subscribes to deployments that stop: their spares go. */
  onStopped: (listener: (deploymentId: string) => void) => void;
  newId: () => string;
  /** True while something more urgent starts (an action's own box, a browser): a spare's start waits. */
  busy: () => boolean;
  log: (msg: string, extra?: object) => void;
}

/** A started box and the invocation id it was started for (its id, its processes' mark). */
export interface AppSpare {
  invocationId: string;
  box: Box;
}

interface Kept {
  ready: AppSpare[];
  refill: Refill<AppSpare>;
  idle?: NodeJS.Timeout;
  dropped: boolean;
}

/**
 * App boxes started ahead of an invocation: the namespaces, network and agent an action runs in,
 * with its deployment's code bound at /app, without the action. Starting one costs ~130 ms here
 * (its agent is a Node process), a third of a trivial invocation; an invocation that finds one
 * starts only its action. Kept for deployments invoked lately, from their first invocation on,
 * until they go idle or stop running. A box knows its invocation's id from its start (its disk,
 * cgroups and the marks the reaper finds are named by it), so the spare's id becomes the
 * invocation's. Filled by the ready-things mechanism standby browsers and spare session boxes use.
 */
export class AppSpares {
  private readonly kept = new Map<string, Kept>();
  private served = 0;
  private closed = false;

  constructor(private readonly deps: AppSparesDeps) {
    deps.onStopped((id) => this.forget(id));
  }

  /**
   * A started box for an invocation of the deployment, or undefined. The next one is started once
   * the caller says its action has started (refill), so the two never start at once.
   */
  take(deploymentId: string): AppSpare | undefined {
    if (this.closed || this.deps.count === 0) return undefined;
    const kept = this.kept.get(deploymentId) ?? this.keep(deploymentId);
    let spare: AppSpare | undefined;
    while (!spare && kept.ready.length) {
      const next = kept.ready.shift()!;
      // One whose network stopped while it waited would give its action none: a fresh one is better.
      if (next.box.networkError) void next.box.stop();
      else if (!next.box.isStopped) spare = next;
    }
    if (spare) this.served++;
    this.touch(deploymentId, kept);
    return spare;
  }

  /** An invocation of the deployment has started its action: the box for its next one may start. */
  refill(deploymentId: string): void {
    this.kept.get(deploymentId)?.refill.kick();
  }

  /** GET /health: boxes ready in all, the deployments they are kept for, and how many invocations took one since the daemon started. */
  stats(): { ready: number; deployments: number; served: number } {
    let ready = 0;
    for (const kept of this.kept.values()) ready += kept.ready.length;
    return { ready, deployments: this.kept.size, served: this.served };
  }

  /** The deployment stopped: its boxes go. */
  forget(deploymentId: string): void {
    void this.drop(deploymentId).catch((err: unknown) =>
      this.deps.log('app spare boxes failed to stop', { deployment: deploymentId, error: String(err) }),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.kept.keys()].map((id) => this.drop(id)));
  }

  private keep(deploymentId: string): Kept {
    const kept: Kept = {
      ready: [],
      dropped: false,
      refill: new Refill<AppSpare>({
        short: () => !kept.dropped && kept.ready.length + kept.refill.launching < this.deps.count && this.deps.running(deploymentId),
        mayLaunch: () => !this.deps.busy(),
        launch: async () => {
          const invocationId = this.deps.newId();
          return { invocationId, box: await this.deps.start(deploymentId, invocationId) };
        },
        place: async (spare) => {
          if (kept.dropped || !this.deps.running(deploymentId) || kept.ready.length >= this.deps.count) return spare.box.stop();
          kept.ready.push(spare);
          void spare.box.exited.then(() => {
            const at = kept.ready.indexOf(spare);
            if (at >= 0) kept.ready.splice(at, 1);
            kept.refill.kick();
          });
        },
        failed: (err, failures) =>
          this.deps.log('app spare box failed to start', { deployment: deploymentId, failures, error: String((err as Error)?.message ?? err) }),
      }),
    };
    this.kept.set(deploymentId, kept);
    return kept;
  }

  /** Stops the deployment's boxes once it goes a while without an invocation. */
  private touch(deploymentId: string, kept: Kept): void {
    clearTimeout(kept.idle);
    kept.idle = setTimeout(() => void this.drop(deploymentId), this.deps.idleMs);
    kept.idle.unref();
  }

  private async drop(deploymentId: string): Promise<void> {
    const kept = this.kept.get(deploymentId);
    if (!kept) return;
    this.kept.delete(deploymentId);
    kept.dropped = true;
    clearTimeout(kept.idle);
    kept.refill.stop();
    // A start under way is placed (and so stopped, dropped) before this resolves.
    await kept.refill.inflight;
    await Promise.all(kept.ready.splice(0).map((spare) => spare.box.stop()));
  }
}
