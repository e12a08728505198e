import { createHash, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type {
  AuditLogExportDestination,
  AuditLogExportDestinationTestResult,
  CreateAuditLogExportDestinationBody,
  UpdateAuditLogExportDestinationBody,
} from '../../../src/api/audit-export-destinations.js';

import { ForbiddenError, NotFoundError } from '../../../src/errors.js';
import { newId } from '../../../src/ids.js';
import { paginate, type ListPage } from '../../lib/paging.js';
import { KeyedSerialQueue } from '../../lib/serial-queue.js';
import type { Store } from '../../lib/state/store.js';
import type { Scope } from '../projects.js';
import type { AuditLog, AuditRecord } from './audit-log.js';
import { type S3Target, S3Writer } from './s3-writer.js';

/** A destination as kept: the API's fields and where delivery stands. */
export interface AuditExportDestinationRecord extends Omit<AuditLogExportDestination, 'kernel_role_arn'> {
  org_id: string;
  /** Events from here (ms since the epoch) are delivered next: the activation, a resume, or the last committed window's end. */
  cursor_ms: number;
}

declare module '../../lib/state/store.js' {
  interface State {
    audit_export_destinations: AuditExportDestinationRecord[];
  }
}

export interface AuditExportSettings {
  /** The principal that assumes the organizations' roles (kernel_role_arn); its credentials are the AWS ones of the daemon's environment. */
  principalArn: string;
  /** How long an event-time window is held before it is delivered, so late rows make it in (Kernel's: ten minutes). */
  commitDelayMs: number;
  /** How often destinations are looked at. */
  intervalMs: number;
  /** Endpoints other than AWS's (an S3- or STS-compatible service), if any. */
  stsEndpoint?: string;
  s3Endpoint?: string;
}

export const auditExportSettingsFromEnv = (env: NodeJS.ProcessEnv = process.env): AuditExportSettings => ({
  principalArn: env.RBROWSE_AUDIT_EXPORT_PRINCIPAL_ARN || 'arn:aws:iam::000000000000:user/rbrowse',
  commitDelayMs: Number(env.RBROWSE_AUDIT_EXPORT_DELAY_SECONDS ?? 600) * 1000,
  intervalMs: Number(env.RBROWSE_AUDIT_EXPORT_INTERVAL_SECONDS ?? 30) * 1000,
  stsEndpoint: env.RBROWSE_AUDIT_EXPORT_STS_ENDPOINT || undefined,
  s3Endpoint: env.RBROWSE_AUDIT_EXPORT_S3_ENDPOINT || undefined,
});

/** Rows per object; a window with more is written in chunks. */
const ROWS_PER_OBJECT = 10_000;
/** Retries back off up to this. */
const MAX_BACKOFF_MS = 15 * 60 * 1000;
/**
 * An empty window leaves a healthy destination's stored cursor where it is (the next window starts
 * there and finds the same nothing), so an idle destination does not rewrite the state file at
 * every tick; the cursor is still moved when it falls this far behind.
 */
const IDLE_CURSOR_WRITE_MS = 60 * 60 * 1000;
const gzipped = promisify(gzip);

/**
 * Kernel's audit-log export destinations: each organization's audit log delivered to its S3
 * bucket, continuously, as gzipped JSON lines, through a role in its account that rbrowse assumes
 * (with the external id the destination was given). Delivery starts when a destination is
 * created or resumed; each event-time window is held commitDelayMs, then written as one object
 * per UTC hour it covers (chunked), named after its rows so a retry rewrites the same object;
 * failures back off. Events recorded while a destination is paused are never delivered.
 */
export class AuditExportDestinations {
  private readonly deliveries = new KeyedSerialQueue();
  /** Destinations with a delivery under way: a slow one is not queued again at every tick. */
  private readonly delivering = new Set<string>();
  private timer?: NodeJS.Timeout;
  private readonly s3: S3Writer;

  constructor(
    private readonly deps: {
      store: Store;
      audit: AuditLog;
      settings: AuditExportSettings;
      log?: (message: string, fields?: object) => void;
    },
  ) {
    deps.store.collection('audit_export_destinations');
    this.s3 = new S3Writer({ principal: 'rbrowse-audit-export', stsEndpoint: deps.settings.stsEndpoint, s3Endpoint: deps.settings.s3Endpoint });
  }

  start(): void {
    this.timer = setInterval(() => void this.deliverDue(), this.deps.settings.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all(this.records.map((r) => this.deliveries.run(r.id, async () => {})));
  }

  async create(scope: Scope, body: CreateAuditLogExportDestinationBody): Promise<AuditLogExportDestination> {
    const org = orgOf(scope);
    const now = new Date();
    const record: AuditExportDestinationRecord = {
      id: newId(),
      org_id: org,
      type: 's3',
      bucket: body.bucket,
      prefix: trimSlashes(body.prefix),
      region: body.region,
      role_arn: body.role_arn,
      kms_key_id: body.kms_key_id || null,
      format: 'jsonl.gz',
      status: 'active',
      external_id: randomUUID(),
      consecutive_failures: 0,
      last_error: null,
      last_error_at: null,
      last_success_at: null,
      last_exported_cursor: null,
      next_attempt_at: null,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      // After the creating call: its own entry (received in this millisecond or before) is not delivered.
      cursor_ms: now.getTime() + 1,
    };
    await this.deps.store.update((s) => void s.audit_export_destinations.push(record));
    return this.view(record);
  }

  list(scope: Scope, q: { offset?: number; limit?: number }): ListPage<AuditLogExportDestination> {
    const org = orgOf(scope);
    return paginate(
      this.records.filter((r) => r.org_id === org),
      q,
      (r) => this.view(r),
    );
  }

  get(scope: Scope, id: string): AuditLogExportDestination {
    return this.view(this.find(scope, id));
  }

  async update(scope: Scope, id: string, body: UpdateAuditLogExportDestinationBody): Promise<AuditLogExportDestination> {
    const current = this.find(scope, id);
    const now = new Date();
    await this.deps.store.update((s) => {
      const r = s.audit_export_destinations.find((x) => x.id === current.id)!;
      if (body.bucket !== undefined) r.bucket = body.bucket;
      if (body.prefix !== undefined) r.prefix = trimSlashes(body.prefix);
      if (body.region !== undefined) r.region = body.region;
      if (body.role_arn !== undefined) r.role_arn = body.role_arn;
      if (body.kms_key_id !== undefined && body.kms_key_id !== null) r.kms_key_id = body.kms_key_id || null;
      if (body.status !== undefined && body.status !== r.status) {
        r.status = body.status;
        // Resuming delivers from now on: what was recorded while paused is never exported.
        if (body.status === 'active') {
          r.cursor_ms = now.getTime() + 1;
          r.consecutive_failures = 0;
          r.next_attempt_at = null;
        }
      }
      r.updated_at = now.toISOString();
    });
    return this.get(scope, id);
  }

  async delete(scope: Scope, id: string): Promise<void> {
    const record = this.find(scope, id);
    await this.deliveries.run(record.id, async () => {
      await this.deps.store.update((s) => {
        s.audit_export_destinations = s.audit_export_destinations.filter((r) => r.id !== record.id);
      });
    });
  }

  /** Assumes the role and writes a small object under the destination's prefix: how far it got. */
  async test(scope: Scope, id: string): Promise<AuditLogExportDestinationTestResult> {
    const record = this.find(scope, id);
    const target = this.targetOf(record);
    const credentials = await this.s3.assumeRole(target).catch((err: unknown) => ({ failed: awsError(err) }));
    if ('failed' in credentials) return { stage: 'assume_role', success: false, error: { code: 'assume_role_failed', message: credentials.failed } };
    const key = `${this.base(record)}/_test/${new Date().toISOString().replace(/[:.]/g, '-')}.txt`;
    const written = await this.s3
      .put(target, credentials, key, Buffer.from(`rbrowse audit-log export test for destination ${record.id}\n`), 'text/plain')
      .then(
        () => undefined,
        (err: unknown) => awsError(err),
      );
    if (written !== undefined) return { stage: 'put_object', success: false, error: { code: 'put_object_failed', message: written } };
    return { stage: 'complete', success: true, error: null };
  }

  /** Delivers every active destination that is due (each one at a time; a slow one holds no other). */
  async deliverDue(now = Date.now()): Promise<void> {
    await Promise.all(
      this.records
        .filter((r) => r.status === 'active' && (!r.next_attempt_at || Date.parse(r.next_attempt_at) <= now) && !this.delivering.has(r.id))
        .map(async (r) => {
          this.delivering.add(r.id);
          try {
            await this.deliveries.run(r.id, () => this.deliver(r.id));
          } finally {
            this.delivering.delete(r.id);
          }
        }),
    );
  }

  /** One delivery: the committed window since the cursor, object by object; the cursor moves only when all were written. */
  private async deliver(id: string): Promise<void> {
    const record = this.records.find((r) => r.id === id);
    if (record?.status !== 'active') return;
    const windowEnd = Date.now() - this.deps.settings.commitDelayMs;
    if (windowEnd <= record.cursor_ms) return;
    const from = record.cursor_ms;
    try {
      const rows = await this.deps.audit.between(record.org_id, from, windowEnd);
      const healthy = record.consecutive_failures === 0 && record.next_attempt_at === null;
      if (!rows.length && healthy && windowEnd - from < IDLE_CURSOR_WRITE_MS) return;
      if (rows.length) {
        const target = this.targetOf(record);
        const credentials = await this.s3.assumeRole(target);
        for (const [key, body] of await this.objects(record, rows)) {
          await this.s3.put(target, credentials, key, body, 'application/x-ndjson', 'gzip');
        }
      }
      await this.settle(id, from, (r) => {
        r.cursor_ms = windowEnd;
        r.last_exported_cursor = `v1.${windowEnd}`;
        if (rows.length) r.last_success_at = new Date().toISOString();
        r.consecutive_failures = 0;
        r.next_attempt_at = null;
      });
    } catch (err) {
      const message = awsError(err);
      this.deps.log?.('audit export failed', { destination: id, error: message });
      await this.settle(id, from, (r) => {
        r.consecutive_failures += 1;
        r.last_error = message;
        r.last_error_at = new Date().toISOString();
        const backoff = Math.min(this.deps.settings.intervalMs * 2 ** (r.consecutive_failures - 1), MAX_BACKOFF_MS);
        r.next_attempt_at = new Date(Date.now() + backoff).toISOString();
      });
    }
  }

  /** Records a delivery's outcome, unless the destination was paused, resumed or deleted meanwhile. */
  private async settle(id: string, from: number, change: (r: AuditExportDestinationRecord) => void): Promise<void> {
    await this.deps.store.update((s) => {
      const r = s.audit_export_destinations.find((x) => x.id === id);
      if (r && r.status === 'active' && r.cursor_ms === from) change(r);
    });
  }

  /**
   * The window's rows as objects: one per UTC hour (so the hour partition holds every row of its
   * objects), chunked, each named after its first and last rows, so a retry writes the same keys.
   */
  private async objects(record: AuditExportDestinationRecord, rows: AuditRecord[]): Promise<[string, Buffer][]> {
    const byHour = new Map<string, AuditRecord[]>();
    for (const row of rows) {
      const hour = row.timestamp.slice(0, 13);
      byHour.set(hour, [...(byHour.get(hour) ?? []), row]);
    }
    const objects: [string, Buffer][] = [];
    for (const [hour, hourRows] of byHour) {
      const [date, hh] = hour.split('T') as [string, string];
      for (let i = 0; i < hourRows.length; i += ROWS_PER_OBJECT) {
        const chunk = hourRows.slice(i, i + ROWS_PER_OBJECT);
        const name = createHash('sha256')
          .update(chunk.map((r) => r.id).join('\n'))
          .digest('hex')
          .slice(0, 16);
        const lines = chunk.map(({ org_id: _org, ...entry }) => `${JSON.stringify({ event_id: entry.id, ...entry })}\n`).join('');
        const key = `${this.base(record)}/date=${date}/hour=${hh}/${compactTime(chunk[0]!.timestamp)}-${name}-${String(i / ROWS_PER_OBJECT).padStart(4, '0')}.jsonl.gz`;
        objects.push([key, await gzipped(lines)]);
      }
    }
    return objects;
  }

  private base(record: AuditExportDestinationRecord): string {
    return [record.prefix, `destination_id=${record.id}`, `org_id=${record.org_id}`].filter(Boolean).join('/');
  }

  private targetOf(record: AuditExportDestinationRecord): S3Target {
    return {
      bucket: record.bucket,
      region: record.region,
      roleArn: record.role_arn,
      externalId: record.external_id,
      kmsKeyId: record.kms_key_id ?? undefined,
    };
  }

  private find(scope: Scope, id: string): AuditExportDestinationRecord {
    const org = orgOf(scope);
    const record = this.records.find((r) => r.id === id && r.org_id === org);
    if (!record) throw new NotFoundError(`audit-log export destination ${id} not found`);
    return record;
  }

  private view({ org_id: _org, cursor_ms: _cursor, ...r }: AuditExportDestinationRecord): AuditLogExportDestination {
    return { ...r, kernel_role_arn: this.deps.settings.principalArn };
  }

  private get records(): AuditExportDestinationRecord[] {
    return this.deps.store.data.audit_export_destinations;
  }
}

/** Destinations are the organization's: a key bound to one project does not manage them. */
function orgOf(scope: Scope): string {
  if (scope.key_project_id) throw new ForbiddenError('audit-log export destinations belong to the organization: use an organization-wide key');
  return scope.org_id;
}

function trimSlashes(prefix: string): string {
  return prefix.replace(/^\/+|\/+$/g, '');
}

function compactTime(iso: string): string {
  return iso.replace(/[-:]/g, '').replace(/\.\d+/, '');
}

/** An AWS failure as the API reports it: its name and message, nothing of the credentials. */
function awsError(err: unknown): string {
  const e = err as { name?: string; message?: string; Code?: string };
  const text = `${e.Code ?? e.name ?? 'Error'}: ${e.message ?? String(err)}`;
  return text.replace(/(AKIA|ASIA)[A-Z0-9]{12,}/g, '[key]').slice(0, 500);
}
