import type { TelemetryEnvelope, TelemetryEventsQuery } from '../../../src/api/telemetry.js';
import { sinceTime } from '../../../src/since-time.js';
import type { EventStream } from '../../lib/sse.js';
import type { ListPage } from '../../lib/paging.js';
import type { DevToolsEndpoint } from '../../browser/chromium.js';
import { CdpMonitor } from './cdp-monitor.js';
import type { OtlpExport } from './otlp-export.js';
import { CDP_CATEGORIES, type Categories, type TelemetryEvent } from './config.js';

/** Events kept per session, by count and by size (the oldest go first); a gap in seq tells a reader some went. */
const MAX_EVENTS = 10_000;
const MAX_BYTES = 16 * 1024 ** 2;
/** One event, as JSON, at most: bigger is cut to its context and marked truncated. */
const MAX_DATA_CHARS = 64 * 1024;
const DEFAULT_WINDOW_MS = 5 * 60_000;

/**
 * One session's telemetry: the categories it captures, its events (seq-numbered, bounded), their
 * live readers, and the CDP monitor when a CDP category is on. The monitor follows the browser:
 * it is started again on each (re)start of Chromium.
 */
export class SessionTelemetry {
  private readonly events: TelemetryEnvelope[] = [];
  /** The JSON size of each kept event, in order, and their sum. */
  private readonly sizes: number[] = [];
  private bytes = 0;
  private seq = 0;
  private readonly readers = new Set<EventStream>();
  private monitor?: CdpMonitor;
  private browser?: DevToolsEndpoint;
  /** Where its events also go (telemetry.export.otlp), if anywhere. */
  private exporter?: OtlpExport;
  /** CDP methods whose commands give no cdp_command event (telemetry.browser.control.cdp). */
  excludedMethods: string[] = [];

  constructor(
    public categories: Categories | null,
    private readonly log: (msg: string, extra?: object) => void,
  ) {}

  /** Records an event if its category is captured (`monitor`: whenever a CDP category is). */
  record(event: TelemetryEvent): void {
    const c = this.categories;
    if (!c) return;
    const captured = event.category === 'monitor' ? CDP_CATEGORIES.some((k) => c[k]) : c[event.category as keyof Categories] === true;
    if (!captured) return;
    let envelope = { seq: ++this.seq, event };
    let json = JSON.stringify(envelope);
    if (json.length > MAX_DATA_CHARS) {
      envelope = { seq: envelope.seq, event: truncated(event) };
      json = JSON.stringify(envelope);
    }
    const size = json.length;
    this.events.push(envelope);
    this.sizes.push(size);
    this.bytes += size;
    let drop = 0;
    while (this.events.length - drop > MAX_EVENTS || this.bytes > MAX_BYTES) this.bytes -= this.sizes[drop++]!;
    if (drop) {
      this.events.splice(0, drop);
      this.sizes.splice(0, drop);
    }
    for (const reader of this.readers) reader.sendRecord(envelope.seq, json);
    this.exporter?.emit(envelope);
  }

  /** The OTLP export it feeds now (undefined: none); the one before sends what it holds and stops. */
  exportTo(exporter: OtlpExport | undefined): void {
    if (this.exporter === exporter) return;
    void this.exporter?.close();
    this.exporter = exporter;
  }

  /** The OTLP destination it exports to now. */
  get exportDestination(): string | undefined {
    return this.exporter?.destinationId;
  }

  /** The browser is up (again): the monitor attaches to it if a CDP category is on. */
  async browserStarted(browser: DevToolsEndpoint): Promise<void> {
    this.browser = browser;
    await this.restartMonitor();
  }

  /** A PATCH changed the categories: the monitor starts, stops or changes what it enables. */
  async reconfigure(categories: Categories | null): Promise<void> {
    this.categories = categories;
    await this.restartMonitor();
  }

  /** A page of the events kept (see pageOf). */
  page(q: TelemetryEventsQuery): ListPage<TelemetryEnvelope> {
    return pageOf(this.events, q);
  }

  /** The events kept, oldest first (what the archive keeps once the session has ended). */
  get kept(): readonly TelemetryEnvelope[] {
    return this.events;
  }

  /** A live reader: after `afterSeq` (Last-Event-ID), from the oldest kept (`replay=all`), or new events only. */
  follow(stream: EventStream, from: { afterSeq?: number; all?: boolean }): void {
    const after = from.afterSeq ?? (from.all ? 0 : this.seq);
    for (const e of this.events) if (e.seq > after) stream.sendRecord(e.seq, e);
    this.readers.add(stream);
    stream.onClose(() => this.readers.delete(stream));
  }

  /** The session ended: readers are told by the end of their stream, and the monitor goes. */
  close(): void {
    for (const reader of [...this.readers]) reader.end();
    this.exportTo(undefined);
    this.monitor?.close();
    this.monitor = undefined;
    this.browser = undefined;
  }

  private async restartMonitor(): Promise<void> {
    this.monitor?.close();
    this.monitor = undefined;
    const c = this.categories;
    if (!this.browser || !c || !CDP_CATEGORIES.some((k) => c[k])) return;
    const at = Date.now() * 1000;
    try {
      this.monitor = await CdpMonitor.start(this.browser, c, (e) => this.record(e));
    } catch (err) {
      this.log('telemetry monitor failed to start', { error: String(err) });
      this.record({ type: 'monitor_init_failed', category: 'monitor', ts: at, source: { kind: 'local_process' }, data: { error: String(err) } });
    }
  }
}

/** An event too large keeps only its context fields, marked truncated. */
function truncated(event: TelemetryEvent): TelemetryEvent {
  const keep = ['target_id', 'target_type', 'session_id', 'frame_id', 'loader_id', 'nav_seq', 'url', 'request_id', 'status', 'method', 'level'];
  const data = Object.fromEntries(
    Object.entries(event.data ?? {}).filter(([k, v]) => keep.includes(k) && (typeof v !== 'string' || v.length < 8192)),
  );
  return { ...event, data, truncated: true };
}

/**
 * A page of events (oldest first): asc from `since` (default the last 5 minutes; after the
 * `offset` seq instead when given), desc back from `until` (or before `offset`). The category
 * filter applies within the page, as Kernel's does, so a filtered page may be empty while more follow.
 */
export function pageOf(events: readonly TelemetryEnvelope[], q: TelemetryEventsQuery, now = Date.now()): ListPage<TelemetryEnvelope> {
  const limit = q.limit ?? 100;
  const wanted = q.category?.length ? new Set<string>(q.category) : undefined;
  const untilMs = q.until === undefined ? Infinity : sinceTime(q.until, now, 'until')!;
  let items: TelemetryEnvelope[];
  if (q.order === 'desc') {
    const before = q.offset ?? Infinity;
    items = events.filter((e) => e.seq < before && e.event.ts / 1000 < untilMs).reverse();
  } else {
    const sinceMs = q.offset === undefined ? (sinceTime(q.since, now) ?? now - DEFAULT_WINDOW_MS) : -Infinity;
    items = events.filter((e) => e.seq > (q.offset ?? 0) && e.event.ts / 1000 >= sinceMs && e.event.ts / 1000 < untilMs);
  }
  const page = items.slice(0, limit);
  const hasMore = items.length > limit;
  return { items: wanted ? page.filter((e) => wanted.has(e.event.category)) : page, hasMore, nextOffset: hasMore ? page.at(-1)!.seq : 0 };
}
