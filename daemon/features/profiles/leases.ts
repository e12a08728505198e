import { ConflictError } from '../../../src/errors.js';

/**
 * Which sessions, launching or live, use each profile, and the one that may write it back. Taken
 * synchronously when a launch begins, so two concurrent creates can never both become the writer.
 * A writer whose session has ended but is still saving is "ending": loads of the profile wait for
 * it (saved()), so the next session sees what the last one wrote.
 */
export class ProfileLeases {
  private readonly users = new Map<string, Set<string>>();
  private readonly writers = new Map<string, string>();
  /** Profile id -> resolves when its ending writer has saved and let go (or its save failed). */
  private readonly ending = new Map<string, { done: Promise<void>; resolve: () => void }>();
  /** Profile id -> why its ending writer's save fails, while it tries again. */
  private readonly failures = new Map<string, string>();

  /** Registers a session's use; with write, refuses (409) while another session holds the profile for writing. */
  take(profileId: string, sessionId: string, write: boolean, label: string): { release: () => void; ending: () => void } {
    const writer = this.writers.get(profileId);
    if (write && writer) {
      throw new ConflictError(
        `profile ${label} is already loaded with save_changes by session ${writer}; one session at a time may save to a profile (load it without save_changes to read it)`,
      );
    }
    if (write) this.writers.set(profileId, sessionId);
    const users = this.users.get(profileId) ?? new Set<string>();
    users.add(sessionId);
    this.users.set(profileId, users);
    let given = false;
    const release = () => {
      if (given) return;
      given = true;
      if (this.writers.get(profileId) === sessionId) {
        this.writers.delete(profileId);
        this.failures.delete(profileId);
        const end = this.ending.get(profileId);
        this.ending.delete(profileId);
        end?.resolve();
      }
      users.delete(sessionId);
      if (!users.size && this.users.get(profileId) === users) this.users.delete(profileId);
    };
    const ending = () => {
      if (given) return;
      // A reader writes nothing back: it stops counting as a user at once.
      if (this.writers.get(profileId) !== sessionId) {
        users.delete(sessionId);
        if (!users.size && this.users.get(profileId) === users) this.users.delete(profileId);
        return;
      }
      if (this.ending.has(profileId)) return;
      let resolve!: () => void;
      const done = new Promise<void>((r) => (resolve = r));
      this.ending.set(profileId, { done, resolve });
    };
    return { release, ending };
  }

  /**
   * Resolves once no ended session is still saving the profile (at once when none is), or once
   * its save has failed and is tried again (`failure` then says why): nobody waits on that.
   */
  async saved(profileId: string): Promise<void> {
    while (this.ending.has(profileId) && !this.failures.has(profileId)) await this.ending.get(profileId)!.done;
  }

  /** The ending writer's save failed and will be tried again: those waiting on saved() go on. */
  failing(profileId: string, reason: string): void {
    if (!this.ending.has(profileId)) return;
    this.failures.set(profileId, reason);
    this.ending.get(profileId)!.resolve();
  }

  /** Why the profile's last session cannot save it yet, while it tries again. */
  failure(profileId: string): string | undefined {
    return this.failures.get(profileId);
  }

  /** The sessions using a profile now. */
  sessionsOf(profileId: string): string[] {
    return [...(this.users.get(profileId) ?? [])];
  }
}
