import type { CreateBrowserBody } from '../../src/api/schemas.js';
import { NotFoundError } from '../../src/errors.js';
import type { SessionFeature } from '../sessions/features.js';
import type { OrgRecord, Store } from '../store.js';

export interface ExtensionRecord {
  id: string;
  org_id: string;
  name?: string;
  created_at: string;
  size_bytes: number;
}

/** Uploaded unpacked extensions, loaded into sessions with --load-extension. (Issue 5: to be built.) */
export class Extensions implements SessionFeature {
  constructor(private readonly deps: { store: Store; dir: string; log: (msg: string, extra?: object) => void }) {}

  check(_org: OrgRecord, body: CreateBrowserBody): void {
    const first = body.extensions?.[0];
    if (first) throw new NotFoundError(`extension ${first.id ?? first.name} not found`);
  }
}
