import type { DevToolsEndpoint } from '../../browser/chromium.js';
import { CdpClient } from '../../browser/cdp-client.js';
import type { Categories, TelemetryEvent } from './config.js';

/** A console argument or an event's text, kept short: telemetry is a trail, not a dump. */
const TEXT_MAX = 4096;

interface RemoteObject {
  type: string;
  value?: unknown;
  description?: string;
  unserializableValue?: string;
}

interface AttachedToTarget {
  sessionId: string;
  targetInfo: { targetId: string; type: string; url: string };
}

const clip = (text: string) => (text.length > TEXT_MAX ? text.slice(0, TEXT_MAX) : text);

function argText(arg: RemoteObject): string {
  if (arg.type === 'string') return clip(String(arg.value));
  if (arg.value !== undefined) return clip(JSON.stringify(arg.value) ?? String(arg.value));
  return clip(arg.unserializableValue ?? arg.description ?? arg.type);
}

const TARGET_TYPES = new Set(['page', 'background_page', 'service_worker', 'shared_worker']);

/**
 * The daemon's own CDP connection to a session's browser for the CDP telemetry categories
 * (console, network, page): it attaches to every page and worker, enables only the domains the
 * categories need, and turns their events into telemetry events. Straight to the browser, not
 * through the gateway: an observer must not keep the session alive, nor count as a client.
 */
export class CdpMonitor {
  /** The pages and workers attached (only TARGET_TYPES), by CDP session. */
  private readonly targets = new Map<string, { targetId: string; type: string; url: string; navSeq: number }>();

  private constructor(
    private readonly cdp: CdpClient,
    private readonly categories: Categories,
    private readonly emit: (event: TelemetryEvent) => void,
  ) {}

  static async start(browser: DevToolsEndpoint, categories: Categories, emit: (event: TelemetryEvent) => void): Promise<CdpMonitor> {
    const cdp = await CdpClient.connect(browser);
    const monitor = new CdpMonitor(cdp, categories, emit);
    monitor.listen();
    await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: true });
    return monitor;
  }

  get closed(): boolean {
    return this.cdp.closed;
  }

  close(): void {
    this.cdp.close();
  }

  private listen(): void {
    const { cdp } = this;
    cdp.on('Target.attachedToTarget', (params: AttachedToTarget) => void this.setUp(params));
    cdp.on('Target.detachedFromTarget', ({ sessionId }: { sessionId: string }) => this.targets.delete(sessionId));
    cdp.on('Runtime.consoleAPICalled', (p, sessionId) => {
      const args = (p.args as RemoteObject[]).map(argText);
      const level = String(p.type);
      this.cdpEvent(level === 'error' ? 'console_error' : 'console_log', 'console', 'Runtime.consoleAPICalled', sessionId, {
        level,
        text: args[0] ?? '',
        args,
        ...(p.stackTrace ? { stack_trace: p.stackTrace } : {}),
      });
    });
    cdp.on('Runtime.exceptionThrown', (p, sessionId) => {
      const d = p.exceptionDetails;
      this.cdpEvent('console_error', 'console', 'Runtime.exceptionThrown', sessionId, {
        text: clip(String(d.exception?.description ?? d.text ?? 'exception')),
        line: d.lineNumber,
        column: d.columnNumber,
        ...(d.url ? { source_url: d.url } : {}),
        ...(d.stackTrace ? { stack_trace: d.stackTrace } : {}),
      });
    });
    cdp.on('Network.requestWillBeSent', (p, sessionId) => {
      this.cdpEvent('network_request', 'network', 'Network.requestWillBeSent', sessionId, {
        url: p.request.url,
        method: p.request.method,
        headers: p.request.headers,
        request_id: p.requestId,
        resource_type: p.type,
        document_url: p.documentURL,
        initiator_type: p.initiator?.type,
        is_redirect: p.redirectResponse !== undefined,
        ...(p.request.postData ? { post_data: clip(p.request.postData) } : {}),
        ...(p.frameId ? { frame_id: p.frameId } : {}),
        ...(p.loaderId ? { loader_id: p.loaderId } : {}),
      });
    });
    cdp.on('Network.responseReceived', (p, sessionId) => {
      this.cdpEvent('network_response', 'network', 'Network.responseReceived', sessionId, {
        url: p.response.url,
        status: p.response.status,
        status_text: p.response.statusText,
        mime_type: p.response.mimeType,
        headers: p.response.headers,
        request_id: p.requestId,
        resource_type: p.type,
        ...(p.frameId ? { frame_id: p.frameId } : {}),
      });
    });
    cdp.on('Network.loadingFailed', (p, sessionId) => {
      this.cdpEvent('network_loading_failed', 'network', 'Network.loadingFailed', sessionId, {
        request_id: p.requestId,
        resource_type: p.type,
        error_text: p.errorText,
        canceled: p.canceled === true,
        ...(p.blockedReason ? { blocked_reason: p.blockedReason } : {}),
      });
    });
    cdp.on('Page.frameNavigated', (p, sessionId) => {
      const target = sessionId ? this.targets.get(sessionId) : undefined;
      if (p.frame.parentId === undefined && target) {
        target.navSeq++;
        target.url = p.frame.url;
      }
      this.cdpEvent('page_navigation', 'page', 'Page.frameNavigated', sessionId, {
        url: p.frame.url,
        frame_id: p.frame.id,
        loader_id: p.frame.loaderId,
        ...(p.frame.parentId ? { parent_frame_id: p.frame.parentId } : {}),
      });
    });
    cdp.on('Page.domContentEventFired', (p, sessionId) =>
      this.cdpEvent('page_dom_content_loaded', 'page', 'Page.domContentEventFired', sessionId, { cdp_timestamp: p.timestamp }),
    );
    cdp.on('Page.loadEventFired', (p, sessionId) =>
      this.cdpEvent('page_load', 'page', 'Page.loadEventFired', sessionId, { cdp_timestamp: p.timestamp }),
    );
  }

  /** Enables what the categories need on a new target; a target that goes meanwhile is no error. */
  private async setUp({ sessionId, targetInfo }: AttachedToTarget): Promise<void> {
    if (!TARGET_TYPES.has(targetInfo.type)) {
      await this.cdp.send('Runtime.runIfWaitingForDebugger', {}, sessionId).catch(() => {});
      return;
    }
    this.targets.set(sessionId, { targetId: targetInfo.targetId, type: targetInfo.type, url: targetInfo.url, navSeq: 0 });
    if (targetInfo.type === 'page' && this.categories.page) {
      this.cdpEvent('page_tab_opened', 'page', 'Target.attachedToTarget', sessionId, { url: targetInfo.url });
    }
    const page = targetInfo.type === 'page' || targetInfo.type === 'background_page';
    const enable = [
      ...(this.categories.console ? ['Runtime.enable'] : []),
      ...(this.categories.network ? ['Network.enable'] : []),
      ...(this.categories.page && page ? ['Page.enable'] : []),
    ];
    await Promise.all(enable.map((method) => this.cdp.send(method, {}, sessionId))).catch(() => {});
  }

  private cdpEvent(type: string, category: keyof Categories, cdpEvent: string, sessionId: string | undefined, data: Record<string, unknown>): void {
    if (!this.categories[category]) return;
    const target = sessionId ? this.targets.get(sessionId) : undefined;
    this.emit({
      type,
      category,
      ts: Date.now() * 1000,
      source: { kind: 'cdp', event: cdpEvent },
      data: {
        ...(target ? { target_id: target.targetId, target_type: target.type, nav_seq: target.navSeq, url: target.url } : {}),
        ...(sessionId ? { session_id: sessionId } : {}),
        ...data,
      },
    });
  }
}
