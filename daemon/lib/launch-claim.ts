/**
 * A launch ahead of demand (a standby refill) that a create may claim while it is still under way:
 * once claimed, what made it a background launch (the lowest CPU priority, the wait for Chromium
 * to go quiet) stops at once, since someone is now waiting for it.
 */
export class LaunchClaim {
  private done = false;
  private readonly listeners: (() => void)[] = [];

  get claimed(): boolean {
    return this.done;
  }

  /** Claims it (once); every onClaim listener runs now. */
  claim(): void {
    if (this.done) return;
    this.done = true;
    for (const listener of this.listeners.splice(0)) listener();
  }

  /** Runs `listener` when it is claimed (at once if it already is). */
  onClaim(listener: () => void): void {
    if (this.done) listener();
    else this.listeners.push(listener);
  }
}
