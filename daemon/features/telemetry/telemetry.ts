import type { BrowserSession, CreateBrowserBody, UpdateBrowserBody } from '../../../src/api/schemas.js';
import type { TelemetryEnvelope, TelemetryEventsQuery } from '../../../src/api/telemetry.js';
import type { OrgRecord } from '../../lib/owned-records.js';
import type { AnsweredRequest } from '../../org/audit/answered-request.js';
import { EventStream } from '../../lib/sse.js';
import type { ListPage } from '../../lib/paging.js';
import type { FeatureLaunch, LaunchContext, SessionFeature } from '../../sessions/features.js';
import type { SessionRecord } from '../../sessions/record.js';
import { configView, resolveCategories, type TelemetryEvent } from './config.js';
import type { TelemetryArchive } from './archive.js';
import { pageOf, SessionTelemetry } from './session-telemetry.js';

/**
 * Kernel's browser telemetry: a session feature holding each running session's SessionTelemetry,
 * configured by the create and PATCH bodies' `telemetry`, and the one place other parts report
 * to (the CDP gateway and live view their connections, the HTTP server the session's API calls).
 * A session's events are kept in memory while it runs, then in the archive.
 */
export class Telemetry implements SessionFeature {
  private readonly sessions = new Map<string, SessionTelemetry>();

  constructor(
    private readonly archive: TelemetryArchive,
    private readonly log: (msg: string, extra?: object) => void,
  ) {}

  /** Reports an event of a running session (dropped unless its category is captured). */
  record(sessionId: string, event: Omit<TelemetryEvent, 'ts'> & { ts?: number }): void {
    this.sessions.get(sessionId)?.record({ ts: Date.now() * 1000, ...event });
  }

  /**
   * control/api_call: an answered request of the session's browser-level API (`/browsers/{id}/...`,
   * telemetry's own reads aside), as Kernel records the calls its in-VM API server handles.
   */
  answered(r: AnsweredRequest, sessionOf: (org: OrgRecord, idOrName: string) => string | undefined): void {
    if (!r.url.startsWith('/browsers/:id/') || r.operationId.startsWith('telemetry')) return;
    // Every browser-level request passes here: the org's session is looked up only when some
    // session captures API calls at all.
    if (![...this.sessions.values()].some((t) => t.categories?.control)) return;
    const id = r.params.id === undefined ? undefined : sessionOf(r.org, r.params.id);
    if (!id) return;
    this.record(id, {
      type: 'api_call',
      category: 'control',
      source: { kind: 'kernel_api' },
      data: { operation_id: r.operationId, status: r.status, duration_ms: r.durationMs, request_id: r.requestId },
    });
  }

  /** A page of a session's events: from memory while it runs, from the archive once it has ended. */
  async events(sessionId: string, q: TelemetryEventsQuery): Promise<ListPage<TelemetryEnvelope>> {
    const live = this.sessions.get(sessionId);
    return live ? live.page(q) : pageOf(await this.archive.read(sessionId), q);
  }

  /** A live stream of a running session's events; it ends when the session does. */
  stream(sessionId: string, from: { afterSeq?: number; all?: boolean }): EventStream {
    const stream = new EventStream({ comments: true });
    const telemetry = this.sessions.get(sessionId);
    if (telemetry) telemetry.follow(stream, from);
    else stream.end();
    return stream;
  }

  // --- SessionFeature ---

  check(_org: OrgRecord, body: CreateBrowserBody): void {
    resolveCategories(body.telemetry, undefined, 'create');
  }

  checkUpdate(_org: OrgRecord, _record: SessionRecord, body: UpdateBrowserBody): void {
    if (body.telemetry !== undefined) resolveCategories(body.telemetry, null, 'update');
  }

  launch(ctx: LaunchContext): Promise<FeatureLaunch> {
    const telemetry = new SessionTelemetry(resolveCategories(ctx.body.telemetry, undefined, 'create'), this.log);
    this.sessions.set(ctx.record.id, telemetry);
    const id = ctx.record.id;
    return Promise.resolve({
      started: ({ browser }) => telemetry.browserStarted(browser),
      update: async (patch) => {
        if (patch.telemetry !== undefined) await telemetry.reconfigure(resolveCategories(patch.telemetry, telemetry.categories, 'update'));
      },
      // The session ended (DELETE answers after this): its events move to the archive.
      stopping: () => this.drop(id, telemetry),
      release: () => this.drop(id, telemetry),
    });
  }

  /** A standby browser (launched with telemetry off) takes the create body's configuration. */
  async handOver(ctx: LaunchContext): Promise<undefined> {
    await this.sessions.get(ctx.record.id)?.reconfigure(resolveCategories(ctx.body.telemetry, undefined, 'create'));
    return undefined;
  }

  private drop(id: string, telemetry: SessionTelemetry): void {
    telemetry.close();
    if (this.sessions.get(id) !== telemetry) return;
    this.sessions.delete(id);
    this.archive.keep(id, telemetry.kept);
  }

  view(record: SessionRecord): Partial<BrowserSession> {
    const categories = this.sessions.get(record.id)?.categories;
    return categories && !record.deleted_at ? { telemetry: configView(categories) } : {};
  }
}
