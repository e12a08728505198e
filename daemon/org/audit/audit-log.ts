import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { AuditLogEntry, ExportAuditLogsQuery, ListAuditLogsQuery } from '../../../src/api/audit-logs.js';
import { BadRequestError } from '../../../src/errors.js';
import { newId } from '../../../src/ids.js';
import type { AnsweredRequest } from './answered-request.js';
import type { Scope } from '../projects.js';
import { createReadStream } from 'node:fs';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { retentionFromEnv, type Retention } from '../../lib/state/history.js';
import { SerialQueue } from '../../lib/serial-queue.js';
import { LineBatches } from '../../lib/state/line-batches.js';

const gzipAsync = promisify(gzip);

export interface AuditRecord extends AuditLogEntry {
  org_id: string;
}

/** RBROWSE_AUDIT_DAYS (default 30) and RBROWSE_AUDIT_MAX (default 10,000 calls per daemon home). */
export const auditRetentionFromEnv = (env: NodeJS.ProcessEnv = process.env): Retention => retentionFromEnv(env, 'AUDIT', { days: 30, max: 10_000 });

type Filters = Pick<ListAuditLogsQuery, 'start' | 'end' | 'auth_strategy' | 'method' | 'exclude_method' | 'search' | 'search_user_id' | 'service'>;

/** Comma-joined (the SDK's way) or repeated, as one list. */
const list = (values: string[] | undefined) =>
  (values ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);

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
 * when, the answer): one JSON line each in an append-only file, read back newest first. Unlike the
 * history of ended sessions, nothing of it is held in memory: under load it gains hundreds of
 * lines a second and is read rarely, so lines are appended in batches (one write per batch, never
 * a queued write per call) and queries stream the file. The retention bound (age and count) is
 * applied by rewriting the file, streamed, once it holds twice the lines it may keep. Reads are
 * not recorded: at thousands a second they would drown the calls that changed something.
 */
export class AuditLog {
  private readonly queue = new SerialQueue();
  private readonly appends = new LineBatches(this.queue, (lines) => this.flush(lines));
  private handle?: FileHandle;
  private lines = 0;
  /** Lines in the file per organization: the retention's count holds for each apart. */
  private readonly perOrg = new Map<string, number>();

  private constructor(
    private readonly file: string,
    private readonly retention: Retention,
  ) {}

  static async open(file: string, retention: Retention): Promise<AuditLog> {
    const log = new AuditLog(file, retention);
    for await (const line of log.linesOf()) log.count(line, 1);
    if ([...log.perOrg.values()].some((n) => n > retention.maxCount)) await log.queue.run(() => log.compact());
    return log;
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
    // A failed append (a full disk) loses those lines only; the calls themselves were answered.
    this.appends.add(`${JSON.stringify(entry)}\n`).catch(() => {});
  }

  async list(scope: Scope, q: ListAuditLogsQuery): Promise<{ items: AuditLogEntry[]; nextToken?: string }> {
    const { page, more } = await this.page(
      scope,
      q,
      q.page_token === undefined ? undefined : { value: q.page_token, field: 'page_token' },
      q.limit ?? 20,
    );
    return { items: page.map(({ org_id: _org, ...e }) => e), nextToken: more ? token(page.at(-1)!) : undefined };
  }

  async exportChunk(scope: Scope, q: ExportAuditLogsQuery): Promise<AuditChunk> {
    const { page, more } = await this.page(scope, q, q.cursor === undefined ? undefined : { value: q.cursor, field: 'cursor' }, q.limit ?? 10_000);
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

  async close(): Promise<void> {
    await this.appends.drained();
    await this.queue.run(async () => {
      await this.handle?.close();
      this.handle = undefined;
    });
  }

  /** The organization a line is of (its org_id sits at a fixed place: no parse needed). */
  private orgOf(line: string): string {
    return /"org_id":"([^"]+)"/.exec(line)?.[1] ?? '';
  }

  private count(line: string, n: number): void {
    const org = this.orgOf(line);
    this.perOrg.set(org, (this.perOrg.get(org) ?? 0) + n);
    this.lines += n;
  }

  /** Appends what was recorded since the last write, in one write; compacts once an organization has twice its bound. */
  private async flush(lines: string[]): Promise<void> {
    this.handle ??= await open(this.file, 'a', 0o600);
    await this.handle.appendFile(lines.join(''));
    for (const line of lines) this.count(line, 1);
    if ([...this.perOrg.values()].some((n) => n >= 2 * this.retention.maxCount)) await this.compact();
  }

  /** How many of each organization's oldest lines are past its bound (left out of reads, dropped by a compaction). */
  private skips(): Map<string, number> {
    return new Map([...this.perOrg].map(([org, n]) => [org, Math.max(0, n - this.retention.maxCount)]));
  }

  /** Rewrites the file with each organization's newest maxCount lines younger than the age bound, streamed. */
  private async compact(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
    const cutoff = new Date(Date.now() - this.retention.maxAgeMs).toISOString();
    const skip = this.skips();
    const temp = `${this.file}.${process.pid}.compact`;
    const out = await open(temp, 'w', 0o600);
    const keptPerOrg = new Map<string, number>();
    let kept = 0;
    try {
      let batch: string[] = [];
      for await (const line of this.linesOf()) {
        const org = this.orgOf(line);
        const left = skip.get(org) ?? 0;
        if (left > 0) {
          skip.set(org, left - 1);
          continue;
        }
        // Lines are appended in time order: the timestamp sits at a fixed place, no parse needed.
        const at = /"timestamp":"([^"]+)"/.exec(line)?.[1];
        if (!at || at < cutoff) continue;
        batch.push(`${line}\n`);
        kept++;
        keptPerOrg.set(org, (keptPerOrg.get(org) ?? 0) + 1);
        if (batch.length >= 500) {
          await out.appendFile(batch.join(''));
          batch = [];
        }
      }
      await out.appendFile(batch.join(''));
      await out.sync();
    } catch (err) {
      await out.close();
      await unlink(temp).catch(() => {});
      throw err;
    }
    await out.close();
    await rename(temp, this.file);
    this.lines = kept;
    this.perOrg.clear();
    for (const [org, n] of keptPerOrg) this.perOrg.set(org, n);
  }

  /** The file's lines, oldest first, read as a stream (nothing when there is no file yet). */
  /** The kept records, oldest first: the file may hold up to twice the bound between compactions, and only the newest lines count. */
  private async *records(): AsyncGenerator<AuditRecord> {
    const skip = this.skips();
    for await (const line of this.linesOf()) {
      const org = this.orgOf(line);
      const left = skip.get(org) ?? 0;
      if (left > 0) {
        skip.set(org, left - 1);
        continue;
      }
      try {
        yield JSON.parse(line) as AuditRecord;
      } catch {
        // a line cut short by a crash mid-append
      }
    }
  }

  private async *linesOf(): AsyncGenerator<string> {
    const input = createReadStream(this.file, { encoding: 'utf8' });
    const opened = await new Promise<boolean>((resolve, reject) => {
      input.once('open', () => resolve(true));
      input.once('error', (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? resolve(false) : reject(err)));
    });
    if (!opened) return;
    for await (const line of createInterface({ input, crlfDelay: Infinity })) if (line) yield line;
  }

  /**
   * The scope's entries matching the filters, newest first, after the cursor; and whether more
   * follow. The file is streamed oldest first, up to the cursor's entry.
   */
  private async page(
    scope: Scope,
    q: Filters,
    cursor: { value: string; field: string } | undefined,
    limit: number,
  ): Promise<{ page: AuditRecord[]; more: boolean }> {
    const start = Date.parse(q.start);
    const end = Date.parse(q.end);
    if (!(start < end)) throw BadRequestError.field('end', 'must be after start');
    const after = cursor ? this.decode(cursor.value, cursor.field) : undefined;
    const excluded = new Set(list(q.exclude_method).map((m) => m.toUpperCase()));
    const search = q.search?.toLowerCase();
    const users = new Set(list(q.search_user_id));
    const cutoff = Date.now() - this.retention.maxAgeMs;
    // Read between two writes, so the file and its line count agree; what was recorded a moment
    // ago is written first and part of the answer. Writes meanwhile wait, batched.
    return this.queue.run(async () => {
      // The newest limit + 1 matches seen so far (older ones are dropped as the scan goes on): a
      // page costs memory for its own size, not the file's.
      let window: AuditRecord[] = [];
      let cursorSeen = false;
      for await (const e of this.records()) {
        // Past the cursor's entry everything is newer than the page asked for.
        if (after !== undefined && e.id === after) {
          cursorSeen = true;
          break;
        }
        if (e.org_id !== scope.org_id || (scope.key_project_id && e.project_id !== scope.key_project_id)) continue;
        const t = Date.parse(e.timestamp);
        if (t < start || t >= end || t < cutoff) continue;
        if (q.auth_strategy && e.auth_strategy !== q.auth_strategy) continue;
        if (q.method && e.method !== q.method.toUpperCase()) continue;
        if (excluded.has(e.method)) continue;
        if (q.service && e.service !== q.service) continue;
        if (search !== undefined || users.size) {
          const text =
            search !== undefined && [e.path, e.user_id, e.email, e.client_ip, String(e.status)].some((f) => f.toLowerCase().includes(search));
          if (!text && !users.has(e.user_id)) continue;
        }
        window.push(e);
        if (window.length > 2 * (limit + 1)) window = window.slice(-(limit + 1));
      }
      // A cursor whose entry the retention has dropped was among the oldest: nothing is left.
      if (after !== undefined && !cursorSeen) return { page: [], more: false };
      const newest = window.slice(-(limit + 1));
      return { page: newest.slice(-limit).reverse(), more: newest.length > limit };
    });
  }

  /** An organization's entries received in [from, to) (ms since the epoch), oldest first: what an export destination delivers. */
  async between(orgId: string, from: number, to: number): Promise<AuditRecord[]> {
    const cutoff = Date.now() - this.retention.maxAgeMs;
    return this.queue.run(async () => {
      const rows: AuditRecord[] = [];
      for await (const e of this.records()) {
        const t = Date.parse(e.timestamp);
        if (e.org_id === orgId && t >= from && t < to && t >= cutoff) rows.push(e);
      }
      return rows.sort((a, b) => a.timestamp.localeCompare(b.timestamp) || a.id.localeCompare(b.id));
    });
  }

  /** A cursor's entry id; a 400 naming the field the request sent it in otherwise. */
  private decode(cursor: string, field: string): string {
    const id = Buffer.from(cursor, 'base64url').toString();
    if (!/^[a-z0-9]{1,64}$/.test(id)) throw BadRequestError.field(field, 'is not a token this server gave');
    return id;
  }
}
