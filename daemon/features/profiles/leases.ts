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
  /** Profile id -> resolves when its ending writer has saved and let go. */
  private readonly ending = new Map<string, { done: Promise<void>; resolve: () => void }>();

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

  /** Resolves once no ended session is still saving the profile (at once when none is). */
  async saved(profileId: string): Promise<void> {
    while (this.ending.has(profileId)) await this.ending.get(profileId)!.done;
  }

  /** The sessions using a profile now. */
  sessionsOf(profileId: string): string[] {
    return [...(this.users.get(profileId) ?? [])];
  }
}
