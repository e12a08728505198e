import { join } from 'node:path';

/**
 * A session's directory on the daemon's side, never seen by the session: its Chromium's log and
 * what an upload is unpacked in before it goes into the box. Everything the session itself writes
 * is on its box's disk.
 */
export function sessionDirs(sessionsDir: string, id: string) {
  const root = join(sessionsDir, id);
  return {
    root,
    // Chromium's log: GET .../logs/stream?source=supervisor.
    chromiumLog: join(root, 'chromium.log'),
  };
}

export type SessionDirs = ReturnType<typeof sessionDirs>;
