import { randomBytes, randomUUID } from 'node:crypto';
import type {
  CustomToolAddBody,
  CustomToolDefinition,
  WebmcpInvocation,
  WebmcpInvokeBody,
  WebmcpTool,
  WebmcpTools,
} from '../../../src/api/webmcp.js';
import { CUSTOM_TOOL_SOURCE_MAX_BYTES } from '../../../src/api/webmcp.js';
import { ApiError, BadRequestError, NotFoundError, ServiceUnavailableError } from '../../../src/errors.js';
import { CdpClient } from '../../browser/cdp-client.js';
import type { DevToolsEndpoint } from '../../browser/chromium.js';
import { within } from '../../lib/procs.js';
import type { LiveSession, ServiceKind, SessionService } from '../../sessions/live-session.js';
import { replOf } from '../repl/repl.js';
import { type CustomTool, CustomToolSet } from './custom-tools.js';

/** Kernel's cap on a tool's input, as JSON. */
const MAX_INPUT_BYTES = 1024 * 1024;
/** Targets with a document, where pages register tools; nothing else is attached. */
const DOCUMENTS = [{ type: 'page' }, { type: 'iframe' }, { exclude: true }];
/** Events of invocations nobody waits for yet (their answer may follow them in the same read) are kept this many at most. */
const EARLY_EVENTS = 64;
/** How long a list waits for a tab to report its tools. */
const SETUP_MS = 3000;
/** Kernel's cap on a CDP-backed custom tool's output, as JSON: beyond it the call is an error, not a cut result. */
const MAX_CDP_TOOL_OUTPUT_BYTES = 240 * 1024;

/** A custom tool offered on one tab's document: stale once that document is replaced. */
interface CustomOffer {
  toolId: string;
  tabTargetId: string;
  document: number;
}

/** The tool started but no result came (its tab or frame went, or time ran out): 504, and the SDK must not retry it. */
export class OutcomeUnknownError extends ApiError {
  override readonly retryable = false;
  constructor(
    message: string,
    readonly invocationId: string,
  ) {
    super(504, 'outcome_unknown', message);
  }

  override toBody() {
    return { ...super.toBody(), ...(this.invocationId ? { invocation_id: this.invocationId } : {}) };
  }
}

interface CdpTool {
  name: string;
  description: string;
  inputSchema?: Record<string, unknown>;
  annotations?: { readOnly?: boolean; untrustedContent?: boolean; consequential?: boolean; autosubmit?: boolean };
  frameId: string;
  backendNodeId?: number;
}

interface Registration {
  ref: string;
  tool: CdpTool;
  /** The CDP session the tool's frame is reached through. */
  sessionId: string;
}

interface Attached {
  targetId: string;
  /** The tab this target is part of (its own id for a tab). */
  tabTargetId: string;
}

type ToolEvent = { kind: 'invoked' } | { kind: 'responded'; status: string; output?: unknown; errorText?: string };

interface ToolResponded {
  invocationId: string;
  status: string;
  output?: unknown;
  errorText?: string;
  /** A tool that threw: errorText is empty then. */
  exception?: { description?: string };
}

/**
 * One browser's WebMCP tools as Chromium reports them: a DevTools connection attached to every tab
 * and out-of-process frame, with the WebMCP domain enabled in each, keeps the registrations current
 * (tools come with toolsAdded and go with toolsRemoved or their target). Made on first use; a new
 * browser (a restart in place) gets a new one, and the old tool_refs name nothing.
 */
class ToolRegistry {
  private readonly byRef = new Map<string, Registration>();
  private readonly refByTool = new Map<string, string>();
  private readonly attached = new Map<string, Attached>();
  private readonly setups = new Set<Promise<void>>();
  private readonly tabIds = new Map<string, number>();
  private readonly frameIds = new Map<string, number>();
  private readonly waiters = new Map<string, (e: ToolEvent) => void>();
  private readonly early = new Map<string, ToolEvent[]>();
  private readonly detachWaiters = new Map<string, Set<() => void>>();
  /** Each tab's document, counted: a top-level navigation makes a new one. */
  private readonly documents = new Map<string, number>();
  private readonly offers = new Map<string, CustomOffer>();
  /** The ref of each tool's offer on each tab, for its current document only: older ones are dropped, so this stays bounded. */
  private readonly offerRefs = new Map<string, { ref: string; document: number }>();

  private constructor(readonly cdp: CdpClient) {}

  static async open(browser: DevToolsEndpoint): Promise<ToolRegistry> {
    const cdp = await CdpClient.connect(browser);
    const registry = new ToolRegistry(cdp);
    try {
      cdp.on('Target.attachedToTarget', (p, parent) => registry.track(registry.setUp(p, parent)));
      cdp.on('Target.detachedFromTarget', ({ sessionId }) => registry.detached(sessionId));
      cdp.on('WebMCP.toolsAdded', ({ tools }: { tools: CdpTool[] }, sessionId) => sessionId && registry.added(tools, sessionId));
      cdp.on('WebMCP.toolsRemoved', ({ tools }: { tools: { name: string; frameId: string }[] }, sessionId) => {
        for (const t of tools) registry.removed(sessionId ?? '', t.frameId, t.name);
      });
      cdp.on('WebMCP.toolInvoked', ({ invocationId }) => registry.event(invocationId, { kind: 'invoked' }));
      cdp.on('WebMCP.toolResponded', ({ invocationId, status, output, errorText, exception }: ToolResponded) =>
        registry.event(invocationId, { kind: 'responded', status, output, errorText: errorText || exception?.description?.split('\n')[0] }),
      );
      // A document's tools go with it: a frame that navigates (not within its document) or goes
      // away takes them, whether or not Chromium reports their removal. Only those that came
      // through the session reporting it: a frame moving to a process of its own is reported
      // detached (a swap) by its parent's renderer, which may be slower than the new process
      // registering the frame's new tools through the frame's own session.
      cdp.on('Page.frameNavigated', ({ frame }: { frame: { id: string } }, sessionId) => sessionId && registry.navigated(frame.id, sessionId));
      cdp.on('Page.frameDetached', ({ frameId }: { frameId: string }, sessionId) => sessionId && registry.frameGone(frameId, sessionId));
      // The tabs open now attach before this answers; their setups are awaited by settled().
      await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: true, filter: DOCUMENTS });
      await registry.settled();
      return registry;
    } catch (err) {
      cdp.close();
      throw err;
    }
  }

  /** Waits for the setups under way: every tool registered before this call is known after it. */
  async settled(): Promise<void> {
    while (this.setups.size) await Promise.all([...this.setups]);
  }

  find(ref: string): Registration | undefined {
    return this.byRef.get(ref);
  }

  async snapshot(): Promise<WebmcpTool[]> {
    await this.settled();
    const { targetInfos } = (await this.cdp.send('Target.getTargets')) as { targetInfos: { targetId: string; url: string; title: string }[] };
    const targets = new Map(targetInfos.map((t) => [t.targetId, t]));
    const frameUrls = new Map<string, Promise<Map<string, string>>>();
    const windows = new Map<string, Promise<number>>();
    const tools: WebmcpTool[] = [];
    for (const reg of this.byRef.values()) {
      const at = this.attached.get(reg.sessionId);
      if (!at) continue;
      const tab = targets.get(at.tabTargetId);
      if (!tab) continue;
      // The frames of the target the tool came through: one no longer there took its tools along.
      if (!frameUrls.has(reg.sessionId)) frameUrls.set(reg.sessionId, this.frameUrls(reg.sessionId));
      const frames = await frameUrls.get(reg.sessionId)!;
      if (frames.size && !frames.has(reg.tool.frameId)) {
        this.removed(reg.sessionId, reg.tool.frameId, reg.tool.name);
        continue;
      }
      let frame: WebmcpTool['source']['frame'] = null;
      if (reg.tool.frameId !== at.tabTargetId) {
        const url = frames.get(reg.tool.frameId) ?? targets.get(reg.tool.frameId)?.url ?? '';
        frame = { frame_id: this.numberOf(this.frameIds, reg.tool.frameId), url: withoutFragment(url) };
      }
      if (!windows.has(at.tabTargetId)) windows.set(at.tabTargetId, this.windowOf(at.tabTargetId));
      tools.push({
        tool_ref: reg.ref,
        tool: metadata(reg.tool),
        source: {
          frame,
          page_title: tab.title,
          page_url: withoutFragment(tab.url),
          tab_id: this.numberOf(this.tabIds, at.tabTargetId),
          window_id: await windows.get(at.tabTargetId)!,
        },
      });
    }
    return tools;
  }

  /** Invokes a registration; resolves with its terminal result (or, for a form that waits for its submit, once it is filled in). */
  invoke(reg: Registration, input: Record<string, unknown>, timeoutMs: number): Promise<WebmcpInvocation> {
    const declarativeForm = reg.tool.backendNodeId !== undefined && !reg.tool.annotations?.autosubmit;
    return new Promise<WebmcpInvocation>((resolve, reject) => {
      let invocationId = '';
      let settled = false;
      const finish = (settle: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.waiters.delete(invocationId);
        this.detachWaiters.get(reg.sessionId)?.delete(onDetach);
        settle();
      };
      const unknown = (why: string) =>
        finish(() =>
          reject(
            new OutcomeUnknownError(
              `${why}${invocationId ? ` (invocation ${invocationId})` : ''}; check what it did before invoking it again`,
              invocationId,
            ),
          ),
        );
      // The clock runs from the request: a page too busy to even start the tool counts against it too.
      const timer = setTimeout(() => unknown(`the tool gave no result within ${timeoutMs / 1000} s`), timeoutMs);
      const onDetach = () => unknown('the tab or frame of the tool went away while it ran');
      const onEvent = (e: ToolEvent) => {
        if (e.kind === 'responded') {
          finish(() =>
            resolve({
              invocation_id: invocationId,
              status: e.status === 'Completed' ? 'completed' : e.status === 'Canceled' ? 'canceled' : 'error',
              ...(e.output !== undefined ? { output: e.output } : {}),
              ...(e.errorText ? { error_text: e.errorText } : {}),
            }),
          );
        } else if (declarativeForm) {
          // Its fields are filled in when it starts; a result that was coming at once (a refusal) still wins.
          void this.cdp
            .send('Runtime.evaluate', { expression: '0' }, reg.sessionId)
            .catch(() => {})
            .then(() => finish(() => resolve({ invocation_id: invocationId, status: 'awaiting_submission' })));
        }
      };
      if (!this.attached.has(reg.sessionId)) return finish(() => reject(staleRef(reg.ref)));
      let waiting = this.detachWaiters.get(reg.sessionId);
      if (!waiting) this.detachWaiters.set(reg.sessionId, (waiting = new Set()));
      waiting.add(onDetach);
      this.cdp.send<{ invocationId: string }>('WebMCP.invokeTool', { frameId: reg.tool.frameId, toolName: reg.tool.name, input }, reg.sessionId).then(
        (answer) => {
          if (settled) return;
          invocationId = answer.invocationId;
          this.waiters.set(invocationId, onEvent);
          // Events of this invocation that came in the same read as its answer.
          for (const e of this.early.get(invocationId) ?? []) onEvent(e);
          this.early.delete(invocationId);
        },
        (err: unknown) => {
          // Refused before it started: nothing ran. A tool Chromium no longer has went with its document.
          const message = err instanceof Error ? err.message : String(err);
          if (/Tool not found/i.test(message)) this.removed(reg.sessionId, reg.tool.frameId, reg.tool.name);
          finish(() =>
            reject(this.byRef.has(reg.ref) ? new ServiceUnavailableError(`the browser refused the invocation: ${message}`) : staleRef(reg.ref)),
          );
        },
      );
    });
  }

  /**
   * The custom tools offered now: each tool on every tab whose document or frames match its
   * patterns, once per tab, on its top-level document.
   */
  async customSnapshot(tools: CustomToolSet): Promise<WebmcpTool[]> {
    await this.settled();
    const { targetInfos } = (await this.cdp.send('Target.getTargets')) as {
      targetInfos: { targetId: string; type: string; url: string; title: string }[];
    };
    const offered: WebmcpTool[] = [];
    const tabs = new Set([...this.attached.values()].map((a) => a.tabTargetId));
    for (const [ref, offer] of this.offers) {
      // Offers of a tab that closed or a tool that was removed name nothing any more.
      if (tabs.has(offer.tabTargetId) && tools.get(offer.toolId)) continue;
      this.offers.delete(ref);
      this.offerRefs.delete(`${offer.toolId}\n${offer.tabTargetId}`);
    }
    for (const [sessionId, at] of this.attached) {
      if (at.targetId !== at.tabTargetId) continue;
      const tab = targetInfos.find((t) => t.targetId === at.tabTargetId);
      if (!tab) continue;
      const frames = targetInfos.filter(
        (t) => t.type === 'iframe' && [...this.attached.values()].some((a) => a.targetId === t.targetId && a.tabTargetId === at.tabTargetId),
      );
      const urls = [tab.url, ...(await this.frameUrls(sessionId)).values(), ...frames.map((f) => f.url)];
      const matching = tools.matching(urls);
      if (!matching.length) continue;
      const window_id = await this.windowOf(at.tabTargetId);
      for (const tool of matching) {
        offered.push({
          tool_ref: this.offerRef({ toolId: tool.id, tabTargetId: at.tabTargetId, document: this.documents.get(at.tabTargetId) ?? 0 }),
          tool: tool.tool,
          source: {
            frame: null,
            page_title: tab.title,
            page_url: withoutFragment(tab.url),
            tab_id: this.numberOf(this.tabIds, at.tabTargetId),
            window_id,
            custom: { id: tool.id, namespace: tool.namespace },
            target_id: at.tabTargetId,
          },
        });
      }
    }
    return offered;
  }

  /** A custom tool's offer that is still live: its tab open, on the same document; and the tab's DevTools session. */
  liveOffer(ref: string): (CustomOffer & { sessionId: string }) | undefined {
    const offer = this.offers.get(ref);
    if (!offer || (this.documents.get(offer.tabTargetId) ?? 0) !== offer.document) return undefined;
    for (const [sessionId, at] of this.attached) if (at.targetId === offer.tabTargetId) return { ...offer, sessionId };
    return undefined;
  }

  /** Runs a page-backed custom tool's execute in its tab's page, given the input; its result or its error. */
  async runInPage(sessionId: string, execute: string, input: unknown): Promise<{ output?: unknown; error?: string }> {
    const { result: global } = await this.cdp.send('Runtime.evaluate', { expression: 'globalThis' }, sessionId);
    const r = await this.cdp.send(
      'Runtime.callFunctionOn',
      { functionDeclaration: execute, objectId: global.objectId, arguments: [{ value: input }], awaitPromise: true, returnByValue: true },
      sessionId,
    );
    if (r.exceptionDetails) return { error: String(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text).split('\n')[0] };
    return { output: r.result.value ?? null };
  }

  close(): void {
    this.cdp.close();
  }

  private offerRef(offer: CustomOffer): string {
    const key = `${offer.toolId}\n${offer.tabTargetId}`;
    const known = this.offerRefs.get(key);
    if (known?.document === offer.document) return known.ref;
    if (known) this.offers.delete(known.ref);
    const ref = `wmt_${randomBytes(12).toString('base64url')}`;
    this.offerRefs.set(key, { ref, document: offer.document });
    this.offers.set(ref, offer);
    return ref;
  }

  private track(setup: Promise<void>): void {
    this.setups.add(setup);
    void setup.finally(() => this.setups.delete(setup));
  }

  private async setUp(
    { sessionId, targetInfo }: { sessionId: string; targetInfo: { targetId: string; type: string } },
    parent: string | undefined,
  ): Promise<void> {
    const tabTargetId = (parent && this.attached.get(parent)?.tabTargetId) || targetInfo.targetId;
    this.attached.set(sessionId, { targetId: targetInfo.targetId, tabTargetId });
    const send = (method: string, params: object = {}) => this.cdp.send(method, params, sessionId);
    const setUp = async () => {
      // Out-of-process frames of this document attach as they come, each set up the same way.
      await send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: true, filter: DOCUMENTS });
      await send('Page.enable');
      // Enabling reports the tools registered so far; the round trip after it lets those reports arrive first.
      await send('WebMCP.enable');
      await send('Runtime.evaluate', { expression: '0' });
    };
    // A target that closed meanwhile has no tools to report; one too busy to answer (a script in a
    // loop) reports them when it can, but no list waits for it longer than SETUP_MS.
    await within(
      SETUP_MS,
      setUp().catch(() => {}),
    );
  }

  private added(tools: CdpTool[], sessionId: string): void {
    for (const tool of tools) {
      const key = toolKey(sessionId, tool.frameId, tool.name);
      const old = this.refByTool.get(key);
      if (old) this.byRef.delete(old);
      const ref = `wmt_${randomBytes(12).toString('base64url')}`;
      this.refByTool.set(key, ref);
      this.byRef.set(ref, { ref, tool, sessionId });
    }
  }

  private removed(sessionId: string, frameId: string, name: string): void {
    const key = toolKey(sessionId, frameId, name);
    const ref = this.refByTool.get(key);
    this.refByTool.delete(key);
    if (ref) this.byRef.delete(ref);
  }

  /** A frame's document was replaced: its tools go, and with a target's own frame, those of every frame in it. */
  navigated(frameId: string, sessionId: string): void {
    const at = this.attached.get(sessionId);
    if (at?.targetId !== frameId) return this.frameGone(frameId, sessionId);
    if (at.tabTargetId === frameId) this.documents.set(frameId, (this.documents.get(frameId) ?? 0) + 1);
    for (const reg of [...this.byRef.values()]) if (reg.sessionId === sessionId) this.removed(sessionId, reg.tool.frameId, reg.tool.name);
  }

  /** A frame's document was removed, as one DevTools session reports it: the tools that came through that session name nothing any more. */
  frameGone(frameId: string, sessionId: string): void {
    for (const reg of [...this.byRef.values()]) {
      if (reg.tool.frameId === frameId && reg.sessionId === sessionId) this.removed(sessionId, frameId, reg.tool.name);
    }
  }

  private detached(sessionId: string): void {
    this.attached.delete(sessionId);
    for (const reg of [...this.byRef.values()]) if (reg.sessionId === sessionId) this.removed(sessionId, reg.tool.frameId, reg.tool.name);
    for (const wake of this.detachWaiters.get(sessionId) ?? []) wake();
    this.detachWaiters.delete(sessionId);
  }

  private event(invocationId: string, e: ToolEvent): void {
    const waiter = this.waiters.get(invocationId);
    if (waiter) return waiter(e);
    this.early.set(invocationId, [...(this.early.get(invocationId) ?? []), e]);
    if (this.early.size > EARLY_EVENTS) this.early.delete(this.early.keys().next().value!);
  }

  private async frameUrls(sessionId: string): Promise<Map<string, string>> {
    const urls = new Map<string, string>();
    type FrameTree = { frame: { id: string; url: string }; childFrames?: FrameTree[] };
    const walk = (t: FrameTree) => {
      urls.set(t.frame.id, t.frame.url);
      for (const c of t.childFrames ?? []) walk(c);
    };
    let tree: { frameTree: FrameTree } | undefined;
    await within(
      SETUP_MS,
      this.cdp.send<{ frameTree: FrameTree }>('Page.getFrameTree', {}, sessionId).then(
        (t) => void (tree = t),
        () => {},
      ),
    );
    if (tree) walk(tree.frameTree);
    return urls;
  }

  private async windowOf(targetId: string): Promise<number> {
    const answer = await this.cdp.send<{ windowId: number }>('Browser.getWindowForTarget', { targetId }).catch(() => undefined);
    return answer?.windowId ?? 0;
  }

  private numberOf(numbers: Map<string, number>, id: string): number {
    let n = numbers.get(id);
    if (n === undefined) numbers.set(id, (n = numbers.size + 1));
    return n;
  }
}

/**
 * A session's WebMCP: the tools its pages register (`document.modelContext.registerTool`, or forms
 * declared with `toolname`), listed across tabs and frames and invoked through Chromium's WebMCP
 * DevTools domain, as Kernel's browsers.webmcp does. Chromium runs with WebMCPTesting and
 * DevToolsWebMCPSupport for it (BASE_FLAGS).
 */
export class SessionWebmcp implements SessionService {
  private registry?: { browser: DevToolsEndpoint; opened: Promise<ToolRegistry> };
  private stopped = false;
  private readonly custom = new CustomToolSet();

  constructor(private readonly session: LiveSession) {}

  async list(excludeCustom = false): Promise<WebmcpTools> {
    const registry = await this.current();
    const own = await registry.snapshot();
    return { tools: excludeCustom ? own : [...own, ...(await registry.customSnapshot(this.custom))] };
  }

  /** `cdpUrl`: the session's CDP URL as its box reaches it, for a CDP-backed custom tool's REPL. */
  async invoke(body: WebmcpInvokeBody, cdpUrl: string): Promise<WebmcpInvocation> {
    if (Buffer.byteLength(JSON.stringify(body.input)) > MAX_INPUT_BYTES) throw BadRequestError.field('input', 'at most 1 MiB as JSON');
    const registry = await this.current();
    await registry.settled();
    const timeoutMs = (body.timeout_sec ?? 60) * 1000;
    const offer = registry.liveOffer(body.tool_ref);
    if (offer) {
      const tool = this.custom.get(offer.toolId);
      if (!tool) throw staleRef(body.tool_ref);
      return this.invokeCustom(registry, tool, offer, body.input, timeoutMs, cdpUrl);
    }
    const reg = registry.find(body.tool_ref);
    if (!reg) throw staleRef(body.tool_ref);
    return registry.invoke(reg, body.input, timeoutMs);
  }

  listCustom(): { tools: CustomToolDefinition[] } {
    return { tools: this.custom.list() };
  }

  /** Evaluates the batch's source in the session's REPL runtime (it is the caller's code), then adds it. */
  async addCustom(body: CustomToolAddBody, cdpUrl: string): Promise<{ tools: CustomToolDefinition[] }> {
    if (Buffer.byteLength(body.source) > CUSTOM_TOOL_SOURCE_MAX_BYTES) throw BadRequestError.field('source', 'at most 8,000,000 bytes as UTF-8');
    const definitions = await replOf(this.session).define(cdpUrl, body.source);
    return { tools: this.custom.add(body.namespace, definitions, body.force_overwrite_namespace === true) };
  }

  removeCustom(id: string): void {
    this.custom.remove(id);
  }

  /**
   * A custom tool on the tab it was offered on: a page one in the page, over the WebMCP
   * connection; a CDP one in the REPL runtime. No answer in time, or the tab gone meanwhile:
   * outcome unknown, as for the pages' own tools.
   */
  private async invokeCustom(
    registry: ToolRegistry,
    tool: CustomTool,
    offer: { tabTargetId: string; sessionId: string },
    input: Record<string, unknown>,
    timeoutMs: number,
    cdpUrl: string,
  ): Promise<WebmcpInvocation> {
    const invocationId = randomUUID();
    const unknown = (why: string) =>
      new OutcomeUnknownError(`${why} (invocation ${invocationId}); check what it did before invoking it again`, invocationId);
    let result: { output?: unknown; error?: string } | undefined;
    if (tool.kind === 'page') {
      const run = registry.runInPage(offer.sessionId, tool.execute, input).then(
        (r) => r,
        () => undefined,
      );
      const answered = await within(
        timeoutMs,
        run.then((r) => void (result = r)),
      );
      if (!answered) throw unknown(`the tool gave no result within ${timeoutMs / 1000} s`);
      if (!result) throw unknown('the tab of the tool went away while it ran');
    } else {
      const answer = await replOf(this.session).callTool(cdpUrl, { execute: tool.execute, input, targetId: offer.tabTargetId }, timeoutMs);
      if (!answer) throw unknown(`the tool gave no result within ${timeoutMs / 1000} s (the REPL running it was stopped)`);
      result = answer.success ? { output: answer.output ?? null } : { error: answer.error ?? 'failed' };
      if (result.output !== undefined && Buffer.byteLength(JSON.stringify(result.output)) > MAX_CDP_TOOL_OUTPUT_BYTES) {
        result = { error: `the tool's output is larger than ${MAX_CDP_TOOL_OUTPUT_BYTES / 1024} KiB as JSON` };
      }
    }
    if (result.error !== undefined) return { invocation_id: invocationId, status: 'error', error_text: result.error };
    return { invocation_id: invocationId, status: 'completed', output: result.output };
  }

  stop(): void {
    this.stopped = true;
    void this.registry?.opened.then(
      (r) => r.close(),
      () => {},
    );
  }

  /** The registry of the browser running now: a lost connection or a new browser opens a new one. */
  private async current(): Promise<ToolRegistry> {
    if (this.stopped) throw new ServiceUnavailableError('the session is ending');
    const browser = this.session.chromium;
    if (this.registry?.browser === browser) {
      const open = await this.registry.opened.catch(() => undefined);
      if (open && !open.cdp.closed) return open;
    }
    const opened = ToolRegistry.open(browser);
    this.registry = { browser, opened };
    return opened.catch((err: unknown) => {
      throw new ServiceUnavailableError(`the browser's WebMCP could not be reached: ${err instanceof Error ? err.message : String(err)}`);
    });
  }
}

function metadata(tool: CdpTool): WebmcpTool['tool'] {
  const a = tool.annotations;
  const annotations = {
    ...(a?.readOnly !== undefined ? { readOnlyHint: a.readOnly } : {}),
    ...(a?.untrustedContent !== undefined ? { untrustedContentHint: a.untrustedContent } : {}),
    ...(a?.consequential !== undefined ? { consequentialHint: a.consequential } : {}),
    ...(a?.autosubmit !== undefined ? { autosubmit: a.autosubmit } : {}),
  };
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema ?? { type: 'object', properties: {} },
    ...(Object.keys(annotations).length ? { annotations } : {}),
  };
}

function staleRef(ref: string): NotFoundError {
  return new NotFoundError(`tool_ref ${ref} names no live tool: its document or browser was replaced, or it was never listed (list the tools again)`);
}

/** A tool as one DevTools session reports it: a frame's id stays the same when it moves to another process, its session does not. */
function toolKey(sessionId: string, frameId: string, name: string): string {
  return `${sessionId}\n${frameId}\n${name}`;
}

function withoutFragment(url: string): string {
  const hash = url.indexOf('#');
  return hash < 0 ? url : url.slice(0, hash);
}

const newWebmcp: ServiceKind<SessionWebmcp> = (session) => new SessionWebmcp(session);

/** The session's WebMCP; it ends with the session. */
export const webmcpOf = (session: LiveSession): SessionWebmcp => session.service(newWebmcp);
