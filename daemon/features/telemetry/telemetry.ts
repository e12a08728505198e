import type { BrowserSession, CreateBrowserBody, UpdateBrowserBody } from '../../../src/api/browsers.js';
import {
  TELEMETRY_CATEGORIES,
  type TelemetryConfig,
  type TelemetryEnvelope,
  type TelemetryEventsQuery,
  type TelemetryRequest,
} from '../../../src/api/telemetry.js';
import { BadRequestError } from '../../../src/errors.js';
import type { OrgRecord } from '../../lib/owned-records.js';
import type { AnsweredRequest } from '../../org/audit/answered-request.js';
import { EventStream } from '../../lib/sse.js';
import type { ListPage } from '../../lib/paging.js';
import type { FeatureLaunch, LaunchContext, SessionFeature } from '../../sessions/features.js';
import type { SessionRecord } from '../../sessions/record.js';
import { type Categories, configView, resolveCategories, resolveExcludedMethods, type TelemetryEvent } from './config.js';
import type { TelemetryArchive } from './archive.js';
import type { TelemetryDestinations } from './destinations.js';
import { pageOf, SessionTelemetry } from './session-telemetry.js';

/** Browser-level routes that manage the session's machine rather than drive its browser (Kernel's platform category). */
const PLATFORM_ROUTE = /^\/browsers\/:id\/(fs|process|replays|logs|extensions)(\/|$)/;

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
    /** Where sessions export to; it asks this feature which destinations are in use. */
    private readonly destinations?: TelemetryDestinations,
  ) {
    destinations?.exportedBy(this);
  }

  /** The running sessions exporting to a destination. */
  exportingTo(destinationId: string): string[] {
    return [...this.sessions].filter(([, t]) => t.exportDestination === destinationId).map(([id]) => id);
  }

  /** A destination's endpoint changed: the sessions exporting to it send their next batches there. */
  async endpointChanged(destinationId: string): Promise<void> {
    for (const [id, telemetry] of this.sessions) {
      if (telemetry.exportDestination !== destinationId) continue;
      telemetry.exportTo(undefined);
      await this.applyExport(id, telemetry, destinationId);
    }
  }

  /** Whether a session leaves this CDP method out of its cdp_command events (telemetry.browser.control.cdp.excluded_methods). */
  excludes(sessionId: string, method: string): boolean {
    const t = this.sessions.get(sessionId);
    return t?.categories?.control === true && t.excludedMethods.includes(method);
  }

  /** Reports an event of a running session (dropped unless its category is captured). */
  record(sessionId: string, event: Omit<TelemetryEvent, 'ts'> & { ts?: number }): void {
    this.sessions.get(sessionId)?.record({ ts: Date.now() * 1000, ...event });
  }

  /**
   * An answered request of the session's browser-level API (`/browsers/{id}/...`, telemetry's own
   * reads aside), as Kernel records the calls its in-VM API server handles: the ones that drive
   * the browser (computer, Playwright, curl...) as control/api_call, the ones that manage its
   * machine (files, processes, replays, logs, extensions) as platform/platform_api_call.
   */
  answered(r: AnsweredRequest, sessionOf: (org: OrgRecord, idOrName: string) => string | undefined): void {
    if (!r.url.startsWith('/browsers/:id/') || r.operationId.startsWith('telemetry')) return;
    const platform = PLATFORM_ROUTE.test(r.url);
    const category = platform ? 'platform' : 'control';
    // Every browser-level request passes here: the org's session is looked up only when some
    // session captures this category at all.
    if (![...this.sessions.values()].some((t) => t.categories?.[category])) return;
    const id = r.params.id === undefined ? undefined : sessionOf(r.org, r.params.id);
    if (!id) return;
    this.record(id, {
      type: platform ? 'platform_api_call' : 'api_call',
      category,
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

  /**
   * A pool's telemetry, resolved as a session's would be from the same request (on create, or
   * onto the pool's current one on update): what the pool shows and gives its browsers.
   */
  resolveFor(org: OrgRecord, request: TelemetryRequest | null | undefined, current: TelemetryConfig | undefined, mode: 'create' | 'update') {
    const currentCategories = current
      ? (Object.fromEntries(TELEMETRY_CATEGORIES.map((c) => [c, current.browser[c]?.enabled === true])) as Categories)
      : null;
    const categories = resolveCategories(request, currentCategories, mode);
    if (!categories) return undefined;
    const currentExcluded = current?.browser.control.cdp?.excluded_methods ?? [];
    const wanted = this.exportWanted(org, request, true);
    const destination = wanted === undefined ? (current?.export?.otlp.enabled ? current.export.otlp.destination : undefined) : wanted;
    return {
      ...configView(categories, resolveExcludedMethods(request, currentExcluded)),
      export: { otlp: { enabled: Boolean(destination), ...(destination ? { destination } : {}) } },
    };
  }

  // --- SessionFeature ---

  check(org: OrgRecord, body: CreateBrowserBody): void {
    const categories = resolveCategories(body.telemetry, undefined, 'create');
    this.exportWanted(org, body.telemetry, categories !== null);
  }

  checkUpdate(org: OrgRecord, record: SessionRecord, body: UpdateBrowserBody): void {
    if (body.telemetry === undefined) return;
    const current = this.sessions.get(record.id)?.categories ?? null;
    const categories = resolveCategories(body.telemetry, current, 'update');
    this.exportWanted(org, body.telemetry, categories !== null);
  }

  /**
   * The OTLP destination a create or PATCH asks to export to: its id, null to stop exporting,
   * undefined when it says nothing of export. Export needs capture on, and a destination of the
   * organization; `enabled: false` with a destination is refused, as Kernel does.
   */
  private exportWanted(org: OrgRecord, request: TelemetryRequest | null | undefined, capturing: boolean): string | null | undefined {
    const otlp = request?.export?.otlp;
    if (request?.enabled === false) return null;
    if (!otlp) return undefined;
    if (otlp.enabled === false) {
      if (otlp.destination) throw BadRequestError.field('telemetry.export.otlp', 'enabled: false cannot name a destination');
      return null;
    }
    const { id, name } = otlp.destination ?? {};
    if ((id === undefined) === (name === undefined)) throw BadRequestError.field('telemetry.export.otlp.destination', 'give its id or its name');
    if (!capturing) throw BadRequestError.field('telemetry.export', 'needs telemetry capture on (telemetry.enabled or categories)');
    if (!this.destinations) throw BadRequestError.field('telemetry.export', 'no destinations here');
    return this.destinations.find(org, (id ?? name)!).id;
  }

  /**
   * The export of a session being launched: checked on create already, but a pool's browsers are
   * launched long after its configuration was, and its destination may have gone since: such a
   * browser captures without exporting rather than failing.
   */
  private exportAtLaunch(ctx: LaunchContext, capturing: boolean): string | null | undefined {
    try {
      return this.exportWanted(ctx.org, ctx.body.telemetry, capturing);
    } catch (err) {
      this.log('telemetry export not started', { session: ctx.record.id, error: String(err) });
      return undefined;
    }
  }

  /** Starts, changes or stops a session's export as `wanted` says (see exportWanted). */
  private async applyExport(id: string, telemetry: SessionTelemetry, wanted: string | null | undefined): Promise<void> {
    if (wanted === undefined || wanted === telemetry.exportDestination) return;
    const destinations = this.destinations;
    const record = wanted === null ? undefined : destinations?.byId(wanted);
    if (!record || !destinations) return telemetry.exportTo(undefined);
    // OpenTelemetry's SDK is loaded by the first export, so a daemon that exports nothing does not carry it.
    const { OtlpExport } = await import('./otlp-export.js');
    telemetry.exportTo(new OtlpExport(record.id, record.endpoint, () => destinations.headersOf(record.id), id));
  }

  async launch(ctx: LaunchContext): Promise<FeatureLaunch> {
    const categories = resolveCategories(ctx.body.telemetry, undefined, 'create');
    const telemetry = new SessionTelemetry(categories, this.log);
    telemetry.excludedMethods = resolveExcludedMethods(ctx.body.telemetry, []);
    this.sessions.set(ctx.record.id, telemetry);
    const id = ctx.record.id;
    await this.applyExport(id, telemetry, this.exportAtLaunch(ctx, categories !== null));
    return {
      started: ({ browser }) => telemetry.browserStarted(browser),
      update: async (patch) => {
        if (patch.telemetry === undefined) return;
        telemetry.excludedMethods = resolveExcludedMethods(patch.telemetry, telemetry.excludedMethods);
        await telemetry.reconfigure(resolveCategories(patch.telemetry, telemetry.categories, 'update'));
        await this.applyExport(id, telemetry, telemetry.categories ? this.exportWanted(ctx.org, patch.telemetry, true) : null);
      },
      // The session ended (DELETE answers after this): its events move to the archive.
      stopping: () => this.drop(id, telemetry),
      release: () => this.drop(id, telemetry),
    };
  }

  /** A standby browser (launched with telemetry off) takes the create body's configuration. */
  async handOver(ctx: LaunchContext): Promise<undefined> {
    const telemetry = this.sessions.get(ctx.record.id);
    if (!telemetry) return undefined;
    const categories = resolveCategories(ctx.body.telemetry, undefined, 'create');
    telemetry.excludedMethods = resolveExcludedMethods(ctx.body.telemetry, []);
    await telemetry.reconfigure(categories);
    await this.applyExport(ctx.record.id, telemetry, this.exportAtLaunch(ctx, categories !== null));
    return undefined;
  }

  private drop(id: string, telemetry: SessionTelemetry): void {
    telemetry.close();
    if (this.sessions.get(id) !== telemetry) return;
    this.sessions.delete(id);
    this.archive.keep(id, telemetry.kept);
  }

  view(record: SessionRecord): Partial<BrowserSession> {
    const telemetry = this.sessions.get(record.id);
    const categories = telemetry?.categories;
    if (!categories || record.deleted_at) return {};
    const destination = telemetry.exportDestination;
    return {
      telemetry: {
        ...configView(categories, telemetry.excludedMethods),
        export: { otlp: { enabled: destination !== undefined, ...(destination ? { destination } : {}) } },
      },
    };
  }
}
