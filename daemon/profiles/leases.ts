import { ConflictError } from '../../src/errors.js';

/**
 * Which sessions, launching or live, use each profile, and the one that may write it back. Taken
 * synchronously when a launch begins, so two concurrent creates can never both become the writer.
 */
export class ProfileLeases {
  private readonly users = new Map<string, Set<string>>();
  private readonly writers = new Map<string, string>();

  /** Registers a session's use; with write, refuses (409) while another session holds the profile for writing. */
  take(profileId: string, sessionId: string, write: boolean, label: string): () => void {
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
    return () => {
      if (given) return;
      given = true;
      if (this.writers.get(profileId) === sessionId) this.writers.delete(profileId);
      users.delete(sessionId);
      if (!users.size) this.users.delete(profileId);
    };
  }

  /** The sessions using a profile now. */
  sessionsOf(profileId: string): string[] {
    return [...(this.users.get(profileId) ?? [])];
  }
}
