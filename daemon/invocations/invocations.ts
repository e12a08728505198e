import type { CreateBrowserBody } from '../../src/api/schemas.js';
import { NotFoundError } from '../../src/errors.js';
import type { SessionFeature } from '../sessions/features.js';
import type { OrgRecord, Store } from '../store.js';

export interface InvocationRecord {
  id: string;
  org_id: string;
  app_name: string;
  version: string;
  action_name: string;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  started_at: string;
}

/** Invocations of deployed apps' actions, each run in a child process. (Issue 7: to be built.) */
export class Invocations implements SessionFeature {
  constructor(private readonly deps: { store: Store; dir: string; log: (msg: string, extra?: object) => void }) {}

  check(_org: OrgRecord, body: CreateBrowserBody): void {
    if (body.invocation_id) throw new NotFoundError(`invocation ${body.invocation_id} not found`);
  }
}
