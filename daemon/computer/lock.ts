/**
 * One input action at a time per session: two drags interleaving their moves on one screen would
 * make both meaningless. Keyed by session id, so sessions never wait on each other.
 */
export class InputLocks {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(id: string, action: () => Promise<T>): Promise<T> {
    const before = this.tails.get(id) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((r) => (done = r));
    this.tails.set(id, mine);
    await before;
    try {
      return await action();
    } finally {
      done();
      // The last in line leaves no entry behind.
      if (this.tails.get(id) === mine) this.tails.delete(id);
    }
  }
}
