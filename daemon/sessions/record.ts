import type { Viewport } from '../../src/viewport.js';

/** What a live session's box holds, so a restarted daemon can deal with what a crashed one left. */
export interface SessionRuntimeRecord {
  /** Pids inside the session's box. */
  chromium_pid?: number;
  xvfb_pid?: number;
  display?: number;
  /** The uid slot of its box: the owner of its disk's files (a profile saved after a crash is read with it). */
  uid_slot?: number;
}

/**
 * A session as stored: in the state document while it runs or its teardown is unfinished, then in
 * the sessions history. Its jwts are never stored: they are derived from the signing key.
 */
export interface SessionRecord {
  id: string;
  org_id: string;
  created_at: string;
  deleted_at?: string;
  end_reason?: string;
  headless: boolean;
  stealth: boolean;
  kiosk_mode: boolean;
  timeout_seconds: number;
  viewport: Viewport;
  name?: string;
  tags?: Record<string, string>;
  start_url?: string;
  proxy_id?: string;
  /** Kernel's region and memory size, as asked for on create (see MachineSize). */
  region?: string;
  memory?: string;
  network?: { private_hosts?: string[] };
  /** Kernel's chrome_policy: the managed Chrome policies its browser was launched with. */
  chrome_policy?: Record<string, unknown>;
  /** A stealth session that goes direct instead of through the default stealth proxy (RBROWSE_STEALTH_PROXY). */
  disable_default_proxy?: boolean;
  invocation_id?: string;
  persistence?: { id: string };
  /** The profile the session loaded; save_changes: its user data is written back when it ends (saved_at: done). */
  profile?: { id: string; save_changes: boolean; saved_at?: string };
  runtime?: SessionRuntimeRecord;
  /** Set on a pool's browsers, idle or acquired. */
  pool?: { id: string; name?: string };
}

declare module '../lib/state/store.js' {
  interface State {
    sessions: SessionRecord[];
  }
}
