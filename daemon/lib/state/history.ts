import { open, readFile, type FileHandle } from 'node:fs/promises';
import { SerialQueue } from '../serial-queue.js';
import { LineBatches } from './line-batches.js';
import { replaceFile } from './replace-file.js';

/** Records serialized between two turns of the event loop while the file is rewritten. */
const COMPACT_SLICE = 500;

export interface Retention {
  /** Records whose time is older than this are dropped. */
  maxAgeMs: number;
  /** At most this many records are kept, the newest. */
  maxCount: number;
}

/**
 * A retention from the environment: `RBROWSE_<name>_DAYS` and `RBROWSE_<name>_MAX`. By default how
 * long ended things stay findable: RBROWSE_HISTORY_DAYS (7) and RBROWSE_HISTORY_MAX (10,000 of each kind).
 */
export function retentionFromEnv(env: NodeJS.ProcessEnv = process.env, name = 'HISTORY', defaults = { days: 7, max: 10_000 }): Retention {
  const days = Number(env[`RBROWSE_${name}_DAYS`] || defaults.days);
  const max = Number(env[`RBROWSE_${name}_MAX`] || defaults.max);
  return {
    maxAgeMs: (Number.isFinite(days) && days > 0 ? days : defaults.days) * 24 * 3600 * 1000,
    maxCount: Number.isInteger(max) && max > 0 ? max : defaults.max,
  };
}

/**
 * Records that are done changing (ended sessions, finished invocations): an append-only JSON-lines
 * file, so keeping one costs a line, not a rewrite of the state document, whatever the history's
 * size. A record written again (a finished invocation PATCHed) is a new line; the last one wins.
 * Held in memory for lookups, oldest first. What the retention drops leaves memory at once and the
 * file when it is next compacted (at open, or once it holds twice the lines it needs).
 */
export class History<T extends { id: string }> {
  private readonly records = new Map<string, T>();
  private lines = 0;
  private torn = false;
  private handle?: FileHandle;
  private readonly queue = new SerialQueue();
  private readonly appends = new LineBatches(this.queue, (lines) => this.append(lines));

  /** Records kept per owner, when the retention's count is each owner's (ownerOf). */
  private readonly perOwner = new Map<string, number>();

  private constructor(
    private readonly file: string,
    private readonly retention: Retention,
    /** The time a record's age is counted from (when it ended), in ms since the epoch. */
    private readonly timeOf: (record: T) => number,
    /** Whose a record is: the count bound holds for each owner apart, so one cannot push out another's records. */
    private readonly ownerOf?: (record: T) => string,
  ) {}

  static async open<T extends { id: string }>(
    file: string,
    retention: Retention,
    timeOf: (record: T) => number,
    ownerOf?: (record: T) => string,
  ): Promise<History<T>> {
    const history = new History<T>(file, retention, timeOf, ownerOf);
    const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? '' : Promise.reject(err)));
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        history.keep(JSON.parse(line) as T);
      } catch {
        // A line cut short by a crash mid-append: only that record's last change is lost.
      }
      history.lines++;
    }
    history.expire();
    if (history.lines > history.records.size) await history.compact();
    return history;
  }

  get(id: string): T | undefined {
    return this.records.get(id);
  }

  /** Every record kept, oldest first. */
  all(): T[] {
    return [...this.records.values()];
  }

  /**
   * The kept records, then those of `live` (the state file's) not among them: a record being
   * retired is in both for a moment (the history takes it before the state file lets it go), and
   * a list must not show it twice.
   */
  allWith(live: readonly T[]): T[] {
    return [...this.records.values(), ...live.filter((r) => !this.records.has(r.id))];
  }

  get size(): number {
    return this.records.size;
  }

  /** Keeps a record (or its new version); resolves once its line is written (batched: LineBatches). */
  put(record: T): Promise<void> {
    this.keep(record);
    this.expire();
    return this.appends.add(`${JSON.stringify(record)}\n`);
  }

  private async append(lines: string[]): Promise<void> {
    // After a failed append (a full disk) the file may end in a partial line: rewrite it whole.
    // A rewrite writes every record kept, these lines' included.
    if (this.torn || this.lines >= 2 * Math.max(this.records.size, 1000)) return this.compactNow();
    this.handle ??= await open(this.file, 'a', 0o600);
    try {
      await this.handle.appendFile(lines.join(''));
    } catch (err) {
      this.torn = true;
      throw err;
    }
    this.lines += lines.length;
  }

  async close(): Promise<void> {
    await this.queue.run(async () => {
      await this.handle?.close();
      this.handle = undefined;
    });
  }

  private compact(): Promise<void> {
    return this.queue.run(() => this.compactNow());
  }

  private async compactNow(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
    // Serialized a slice at a time: 10,000 audit entries at once held the event loop ~20 ms.
    const records = this.all();
    const parts: string[] = [];
    for (let i = 0; i < records.length; i += COMPACT_SLICE) {
      if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      parts.push(
        records
          .slice(i, i + COMPACT_SLICE)
          .map((r) => `${JSON.stringify(r)}\n`)
          .join(''),
      );
    }
    const text = parts.join('');
    await replaceFile(this.file, text);
    // Records put meanwhile are appended after this, each counting its own line.
    this.lines = records.length;
    this.torn = false;
  }

  /** A record (or its new version) kept, newest last. */
  private keep(record: T): void {
    this.forget(record.id);
    this.records.set(record.id, record);
    if (this.ownerOf) {
      const owner = this.ownerOf(record);
      this.perOwner.set(owner, (this.perOwner.get(owner) ?? 0) + 1);
    }
  }

  private forget(id: string): void {
    const old = this.records.get(id);
    if (!old) return;
    this.records.delete(id);
    if (this.ownerOf) {
      const owner = this.ownerOf(old);
      const n = (this.perOwner.get(owner) ?? 1) - 1;
      if (n > 0) this.perOwner.set(owner, n);
      else this.perOwner.delete(owner);
    }
  }

  private expire(): void {
    const cutoff = Date.now() - this.retention.maxAgeMs;
    if (!this.ownerOf) {
      for (const [id, record] of this.records) {
        if (this.records.size <= this.retention.maxCount && this.timeOf(record) >= cutoff) break;
        this.forget(id);
      }
      return;
    }
    // Oldest first: what is past the age goes, and each owner's oldest beyond its count.
    for (const [id, record] of this.records) {
      const over = (this.perOwner.get(this.ownerOf(record)) ?? 0) > this.retention.maxCount;
      if (over || this.timeOf(record) < cutoff) this.forget(id);
      else if (![...this.perOwner.values()].some((n) => n > this.retention.maxCount)) break;
    }
  }
}
