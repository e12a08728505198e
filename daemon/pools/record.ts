import type { BrowserPoolConfig } from '../../src/api/pools.js';

/** A pool definition; its browsers and counts live only in the running daemon. */
export interface PoolRecord {
  id: string;
  org_id: string;
  created_at: string;
  config: BrowserPoolConfig;
}

declare module '../lib/state/store.js' {
  interface State {
    pools: PoolRecord[];
  }
}
