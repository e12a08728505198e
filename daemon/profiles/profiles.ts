import type { CreateBrowserBody } from '../../src/api/schemas.js';
import { NotFoundError } from '../../src/errors.js';
import type { SessionFeature } from '../sessions/features.js';
import type { OrgRecord, Store } from '../store.js';

export interface ProfileRecord {
  id: string;
  org_id: string;
  name?: string;
  created_at: string;
  updated_at?: string;
  last_used_at?: string;
}

/** Saved browser user data a session loads, and writes back with save_changes. (Issue 5: to be built.) */
export class Profiles implements SessionFeature {
  constructor(private readonly deps: { store: Store; dir: string; log: (msg: string, extra?: object) => void }) {}

  check(_org: OrgRecord, body: CreateBrowserBody): void {
    if (body.profile) throw new NotFoundError(`profile ${body.profile.id ?? body.profile.name} not found`);
  }
}
