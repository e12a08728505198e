import { mkdir, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Low } from 'lowdb';
import { JSONFile } from 'lowdb/node';
import type { BrowserPoolConfig } from '../src/api/schemas.js';
import type { Viewport } from '../src/viewport.js';
import type { ExtensionRecord } from './extensions/extensions.js';
import type { DeploymentRecord } from './apps/deployments.js';
import type { InvocationRecord } from './invocations/invocations.js';
import type { ProfileRecord } from './profiles/profiles.js';
import type { ProxyRecord } from './proxies/proxies.js';

export interface OrgRecord {
  id: string;
  name: string;
  created_at: string;
}

export interface ApiKeyRecord {
  id: string;
  org_id: string;
  /** sha256 of the key; the key itself is shown once and never stored here. */
  sha256: string;
  created_at: string;
}

/** Where a live session's processes are, so a restarted daemon can find what a crashed one left. */
export interface SessionRuntimeRecord {
  chromium_pid?: number;
  xvfb_pid?: number;
  display?: number;
}

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
  /** The jwt of cdp_ws_url. */
  jwt: string;
  /** The jwt of browser_live_view_url (headful sessions only). */
  live_jwt?: string;
  name?: string;
  tags?: Record<string, string>;
  start_url?: string;
  proxy_id?: string;
  invocation_id?: string;
  persistence?: { id: string };
  /** The profile the session loaded; save_changes: its user data is written back when it ends (saved_at: done). */
  profile?: { id: string; save_changes: boolean; saved_at?: string };
  runtime?: SessionRuntimeRecord;
  /** Set on a pool's browsers, idle or acquired. */
  pool?: { id: string; name?: string };
}

/** A pool definition; its browsers and counts live only in the running daemon. */
export interface PoolRecord {
  id: string;
  org_id: string;
  created_at: string;
  config: BrowserPoolConfig;
}

export interface State {
  version: 1;
  orgs: OrgRecord[];
  api_keys: ApiKeyRecord[];
  sessions: SessionRecord[];
  pools: PoolRecord[];
  profiles: ProfileRecord[];
  extensions: ExtensionRecord[];
  proxies: ProxyRecord[];
  deployments: DeploymentRecord[];
  invocations: InvocationRecord[];
}

const emptyState = (): State => ({
  version: 1,
  orgs: [],
  api_keys: [],
  sessions: [],
  pools: [],
  profiles: [],
  extensions: [],
  proxies: [],
  deployments: [],
  invocations: [],
});

/**
 * The JSON state file. lowdb's steno writer replaces the file by rename, so a kill -9 at any
 * moment leaves either the old or the new document, never half of one; concurrent writes coalesce.
 */
export class Store {
  private constructor(private readonly db: Low<State>) {}

  static async open(file: string, log: (msg: string) => void = () => {}): Promise<Store> {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    const db = new Low<State>(new JSONFile<State>(file), emptyState());
    try {
      await db.read();
    } catch (err) {
      // Never silently discard state: keep the unreadable file beside the new one.
      const kept = `${file}.corrupt-${Date.now()}`;
      await rename(file, kept);
      log(`state file could not be parsed (${(err as Error).message}); kept as ${kept}, starting empty`);
      db.data = emptyState();
    }
    db.data ??= emptyState();
    db.data = { ...emptyState(), ...db.data };
    await db.write();
    return new Store(db);
  }

  get data(): State {
    return this.db.data;
  }

  /** Applies a change to the state and persists it before resolving. */
  async update<T>(change: (state: State) => T): Promise<T> {
    const result = change(this.db.data);
    await this.db.write();
    return result;
  }
}
