import type { CreateBrowserBody, UpdateBrowserBody } from '../../src/api/schemas.js';
import { NotFoundError } from '../../src/errors.js';
import type { SessionFeature } from '../sessions/features.js';
import type { OrgRecord, SessionRecord, Store } from '../store.js';

export interface ProxyRecord {
  id: string;
  org_id: string;
  name?: string;
  type: string;
  created_at: string;
  config: Record<string, unknown>;
}

/** Upstream proxies, and the local forwarding proxy each session routes through. (Issue 5: to be built.) */
export class Proxies implements SessionFeature {
  constructor(private readonly deps: { store: Store; log: (msg: string, extra?: object) => void }) {}

  check(_org: OrgRecord, body: CreateBrowserBody): void {
    if (body.proxy_id) throw new NotFoundError(`proxy ${body.proxy_id} not found`);
  }

  checkUpdate(_org: OrgRecord, _record: SessionRecord, body: UpdateBrowserBody): void {
    if (body.proxy_id) throw new NotFoundError(`proxy ${body.proxy_id} not found`);
  }
}
