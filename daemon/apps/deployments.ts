import type { Store } from '../store.js';

export interface DeploymentRecord {
  id: string;
  org_id: string;
  created_at: string;
}

/** Deployed app code: unpacked, installed, its apps and actions read. (Issue 7: to be built.) */
export class Deployments {
  constructor(private readonly deps: { store: Store; dir: string; log: (msg: string, extra?: object) => void }) {}
}
