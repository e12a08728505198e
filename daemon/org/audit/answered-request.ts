import type { OperationId } from '../../../src/api/routes.js';
import type { ApiKeyRecord } from '../key-record.js';
import type { Scope } from '../projects.js';

/** One answered request of an organization's route, for those who keep a trail of them (telemetry). */
export interface AnsweredRequest {
  operationId: OperationId;
  url: string;
  params: Record<string, string>;
  org: Scope;
  /** The key that made it. */
  key: ApiKeyRecord;
  method: string;
  /** The path asked for, without its query. */
  path: string;
  receivedAt: number;
  clientIp: string;
  userAgent: string;
  host: string;
  status: number;
  durationMs: number;
  requestId: string;
}
