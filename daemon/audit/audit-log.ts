import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { AuditLogEntry, ExportAuditLogsQuery, ListAuditLogsQuery } from '../../src/api/audit-logs.js';
import { BadRequestError } from '../../src/errors.js';
import { newId } from '../../src/ids.js';
import type { AnsweredRequest } from '../http/server.js';
import type { Scope } from '../projects.js';
import { History, retentionFromEnv, type Retention } from '../state/history.js';

const gzipAsync = promisify(gzip);

export interface AuditRecord extends AuditLogEntry {
  org_id: string;
}

/** RBROWSE_AUDIT_DAYS (default 30) and RBROWSE_AUDIT_MAX (default 10,000 calls per daemon home). */
export const auditRetentionFromEnv = (env: NodeJS.ProcessEnv = process.env): Retention => retentionFromEnv(env, 'AUDIT', { days: 30, max: 10_000 });

type Filters = Pick<ListAuditLogsQuery, 'start' | 'end' | 'auth_strategy' | 'method' | 'exclude_method' | 'search' | 'search_user_id' | 'service'>;

/** Comma-joined (the SDK's way) or repeated, as one list. */
const list = (values: string[] | undefined) => (values ?? []).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);

/** Where a page or chunk ends: the last entry given. Opaque to clients. */
const token = (e: AuditRecord) => Buffer.from(e.id).toString('base64url');

/** A chunk of the export: its bytes and what the SDK's download checks them against. */
export interface AuditChunk {
  body: Buffer;
  rows: number;
  hasMore: boolean;
  nextCursor?: string;
  sha256: string;
  contentType: string;
}

/**
 * Every state-changing call an organization's key made (who, which key, which project, what,
 * when, the answer): one JSON line each in an append-only file with a retention bound (the
 * history mechanism of ended sessions), read newest first. Reads are not recorded: at thousands
 * a second they would drown the calls that changed something.
 */
export class AuditLog {
  private constructor(private readonly history: History<AuditRecord>) {}

  static async open(file: string, retention: Retention): Promise<AuditLog> {
    return new AuditLog(await History.open<AuditRecord>(file, retention, (r) => Date.parse(r.timestamp)));
  }

  record(r: AnsweredRequest): void {
    if (r.method === 'GET' || r.method === 'HEAD' || r.method === 'OPTIONS') return;
    const entry: AuditRecord = {
      id: newId(),
      org_id: r.org.org_id,
      timestamp: new Date(r.receivedAt).toISOString(),
      method: r.method,
      path: r.path,
      route: r.url.replace(/:(\w+)/g, '{$1}'),
      status: r.status,
      duration_ms: r.durationMs,
      auth_strategy: 'api_key',
      user_id: r.key.id,
      email: r.key.created_by.email,
      api_key_id: r.key.id,
      project_id: r.org.project_id,
      client_ip: r.clientIp,
      user_agent: r.userAgent,
      domain: r.host,
      service: 'api',
    };
    // A failed append (a full disk) loses this line only; the call itself was answered.
    void this.history.put(entry).catch(() => {});
  }

  list(scope: Scope, q: ListAuditLogsQuery): { items: AuditLogEntry[]; nextToken?: string } {
    const { page, more } = this.page(scope, q, q.page_token, q.limit ?? 20);
    return { items: page.map(({ org_id: _org, ...e }) => e), nextToken: more ? token(page.at(-1)!) : undefined };
  }

  async exportChunk(scope: Scope, q: ExportAuditLogsQuery): Promise<AuditChunk> {
    const { page, more } = this.page(scope, q, q.cursor, q.limit ?? 10_000);
    const text = Buffer.from(page.map(({ org_id: _org, ...e }) => `${JSON.stringify(e)}\n`).join(''));
    const body = q.format === 'jsonl.gz' ? await gzipAsync(text) : text;
    return {
      body,
      rows: page.length,
      hasMore: more,
      nextCursor: more ? token(page.at(-1)!) : undefined,
      sha256: createHash('sha256').update(body).digest('hex'),
      contentType: q.format === 'jsonl.gz' ? 'application/gzip' : 'application/x-ndjson',
    };
  }

  close(): Promise<void> {
    return this.history.close();
  }

  /** The scope's entries matching the filters, newest first, after the cursor; and whether more follow. */
  private page(scope: Scope, q: Filters, cursor: string | undefined, limit: number): { page: AuditRecord[]; more: boolean } {
    const start = Date.parse(q.start);
    const end = Date.parse(q.end);
    if (!(start < end)) throw BadRequestError.field('end', 'must be after start');
    const excluded = new Set(list(q.exclude_method).map((m) => m.toUpperCase()));
    const search = q.search?.toLowerCase();
    const users = new Set(list(q.search_user_id));
    const page: AuditRecord[] = [];
    const all = this.history.all();
    // Past the cursor's entry; one the retention has dropped was among the oldest: nothing is left.
    const after = cursor === undefined ? undefined : this.decode(cursor);
    if (after !== undefined && !this.history.get(after)) return { page, more: false };
    let skipping = after !== undefined;
    for (let i = all.length - 1; i >= 0; i--) {
      const e = all[i]!;
      if (skipping) {
        skipping = e.id !== after;
        continue;
      }
      const t = Date.parse(e.timestamp);
      if (e.org_id !== scope.org_id || (scope.key_project_id && e.project_id !== scope.key_project_id)) continue;
      if (t < start || t >= end) continue;
      if (q.auth_strategy && e.auth_strategy !== q.auth_strategy) continue;
      if (q.method && e.method !== q.method.toUpperCase()) continue;
      if (excluded.has(e.method)) continue;
      if (q.service && e.service !== q.service) continue;
      if (search !== undefined || users.size) {
        const text = [e.path, e.user_id, e.email, e.client_ip, String(e.status)].some((f) => search !== undefined && f.toLowerCase().includes(search));
        if (!text && !users.has(e.user_id)) continue;
      }
      if (page.length === limit) return { page, more: true };
      page.push(e);
    }
    return { page, more: false };
  }

  private decode(cursor: string): string {
    const id = Buffer.from(cursor, 'base64url').toString();
    if (!/^[a-z0-9]{1,64}$/.test(id)) throw BadRequestError.field('page_token', 'is not a token this server gave');
    return id;
  }
}
