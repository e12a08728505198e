/**
 * Whether launches that someone waits on are under way now (a create's own browser, an action's
 * own box): what is started ahead of demand (spare boxes, an app's spares) waits for them. Each
 * part whose launches are waited on adds itself as it is built.
 */
export class LaunchDemand {
  private readonly sources: (() => boolean)[] = [];

  add(busy: () => boolean): void {
    this.sources.push(busy);
  }

  get busy(): boolean {
    return this.sources.some((busy) => busy());
  }
}
