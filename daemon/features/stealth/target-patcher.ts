import { within } from '../../lib/procs.js';
import type { DevToolsEndpoint } from '../../browser/chromium.js';
import { CdpClient } from '../../browser/cdp-client.js';
import type { BrowserIdentity } from './identity.js';

interface AttachedToTarget {
  sessionId: string;
  targetInfo: { targetId: string; type: string; url: string };
  waitingForDebugger: boolean;
}

/** Targets with a document: the user agent override and the init script go to each. */
const FRAMES = new Set(['page', 'iframe']);
/** Targets that run one script of their own; shared and service workers are also reported to the pages that use them. */
const WORKERS = new Set(['worker', 'shared_worker', 'service_worker']);

/** A target is let run after this even if its setup is not done: a paused page must never hang a client. */
const SETUP_MS = 15_000;
/** How long a create waits for a stealth session's start page to load. */
const LOAD_MS = 10_000;
/** A target that went away while being set up is no failure. */
const GONE = /No target|No session|not found|closed|detached|Target crashed/i;

/** Debugger.paused, as far as read here: an instrumentation pause names the script about to run. */
interface PausedParams {
  reason: string;
  data?: { url?: string };
}

/**
 * The daemon's own CDP connection to one stealth browser. It auto-attaches to every target
 * (pages, popups, out-of-process iframes, dedicated, shared and service workers), each paused
 * before its first script, and sets it up before letting it run:
 * - pages and iframes: Emulation.setUserAgentOverride (the user agent with its full client hints,
 *   which dedicated workers inherit) and the init script (Page.addScriptToEvaluateOnNewDocument);
 * - workers: the init script, evaluated at an instrumentation breakpoint before their first
 *   script (a worker answers commands only once it runs, so it cannot be awaited while paused).
 * A target paused for several clients waits for each to resume it, so clients that auto-attach
 * themselves (Playwright, Puppeteer) never see a target run before it is set up. A service worker
 * that stopped when idle and starts again (same session, not paused) stops at that breakpoint
 * again (see breakBeforeFirstScript). The connection does not enable Runtime, whose side effects
 * pages can observe.
 */
export class TargetPatcher {
  /** Sessions of top-level pages. */
  private readonly pages = new Set<string>();
  /** Sessions of the workers this patcher sets up: the URL of each one's own script, and whether it is a service worker. */
  private readonly workers = new Map<string, { url: string; restarts: boolean }>();
  /** Worker sessions waiting at the breakpoint for their first init script. */
  private readonly pendingWorkers = new Set<string>();
  private readonly setups = new Set<Promise<void>>();

  private constructor(
    private readonly cdp: CdpClient,
    private readonly identity: BrowserIdentity,
    private readonly script: string,
    private readonly log: (msg: string, extra?: object) => void,
  ) {}

  /** Connects to the browser and sets up every target there is; resolves once they are. */
  static async attach(
    browser: DevToolsEndpoint,
    identity: BrowserIdentity,
    script: string,
    log: (msg: string, extra?: object) => void,
  ): Promise<TargetPatcher> {
    const cdp = await CdpClient.connect(browser);
    const patcher = new TargetPatcher(cdp, identity, script, log);
    try {
      cdp.on('Target.attachedToTarget', (params, parent) => patcher.track(patcher.setUp(params, parent)));
      cdp.on('Target.detachedFromTarget', ({ sessionId }) => {
        patcher.pendingWorkers.delete(sessionId);
        patcher.workers.delete(sessionId);
        patcher.pages.delete(sessionId);
      });
      cdp.on('Debugger.paused', (params, sessionId) => patcher.paused(params as PausedParams, sessionId));
      // Existing targets attach before this answers; their setups are awaited below.
      await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true });
      await patcher.settled();
      return patcher;
    } catch (err) {
      cdp.close();
      throw err;
    }
  }

  /** Waits for the setups under way (those of targets that attached so far). */
  async settled(): Promise<void> {
    while (this.setups.size) await Promise.all([...this.setups]);
  }

  /**
   * Opens a URL in the browser's page (navigate does it) and waits for its load event, at most
   * LOAD_MS: Chromium cancels the navigation of an out-of-process iframe that waits for this
   * patcher when a client auto-attaches meanwhile (the frame stays empty, with no error), and a
   * client connects as soon as the create answers.
   */
  async open(url: string, navigate: () => Promise<void>): Promise<void> {
    const [page] = this.pages;
    const loaded = page ? this.cdp.once('Page.loadEventFired', page) : Promise.resolve();
    await navigate();
    if (!(await within(LOAD_MS, loaded))) this.log('stealth: the start page did not load in time; handed out loading', { url, ms: LOAD_MS });
  }

  /** Ends the connection, and with it every override it made (they live as long as their CDP session). */
  close(): void {
    this.cdp.close();
  }

  private track(setup: Promise<void>): void {
    this.setups.add(setup);
    void setup.finally(() => this.setups.delete(setup));
  }

  private async setUp({ sessionId, targetInfo, waitingForDebugger }: AttachedToTarget, parent?: string): Promise<void> {
    const send = (method: string, params: object = {}) => this.cdp.send(method, params, sessionId);
    const { type } = targetInfo;
    try {
      if (FRAMES.has(type)) {
        if (type === 'page') this.pages.add(sessionId);
        const done = await within(
          SETUP_MS,
          Promise.all([
            send('Page.enable'),
            send('Page.addScriptToEvaluateOnNewDocument', { source: this.script, runImmediately: true }),
            send('Emulation.setUserAgentOverride', { userAgent: this.identity.userAgent, userAgentMetadata: this.identity.metadata }),
            // Its out-of-process iframes and dedicated workers attach to this session, paused alike.
            send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true }),
          ]),
        );
        if (!done) this.log('stealth setup of a target took too long; it runs unpatched', { type, url: targetInfo.url });
      } else if (WORKERS.has(type) && (type === 'worker' || parent === undefined)) {
        // Shared and service workers attach twice (to the browser and to each page using them): set up once.
        if (waitingForDebugger) return this.breakBeforeFirstScript(sessionId, targetInfo.url, type === 'service_worker');
        await send('Runtime.evaluate', { expression: this.script });
      }
      if (waitingForDebugger) await send('Runtime.runIfWaitingForDebugger');
    } catch (err) {
      if (this.cdp.closed || GONE.test(String(err))) return;
      this.log('stealth setup of a target failed', { type, url: targetInfo.url, error: String(err) });
      if (waitingForDebugger) await send('Runtime.runIfWaitingForDebugger').catch(() => {});
    }
  }

  /**
   * Pipelined, not awaited: a paused worker answers only after it was told to run. In a service
   * worker the breakpoint (and the debugger) stay on after its first script: one stopped when idle
   * starts again in the same session, not paused, and Chromium gives the new instance the
   * session's state, this breakpoint with it, so it stops before its own script again instead of
   * racing the daemon to it (re-arming at its Inspector.targetReloadedAfterCrash lost that race on
   * a loaded machine; marking the worker pending at that event instead still missed a restart
   * once, in a full test run, where the script's own URL at the pause cannot).
   */
  private breakBeforeFirstScript(sessionId: string, url: string, restarts: boolean): void {
    this.workers.set(sessionId, { url, restarts });
    this.pendingWorkers.add(sessionId);
    const send = (method: string, params: object = {}) => void this.cdp.send(method, params, sessionId).catch(() => {});
    send('Debugger.enable');
    send('Debugger.setInstrumentationBreakpoint', { instrumentation: 'beforeScriptExecution' });
    send('Runtime.runIfWaitingForDebugger');
  }

  /**
   * A worker about to run its own script is a new instance (its first start, or a restart): it
   * gets the init script first. Any other pause of a service worker (its imported scripts, a
   * `debugger` statement) is resumed at once; other workers never restart, and their debugger is
   * off after their first script, as a client debugging them would expect.
   */
  private paused(params: PausedParams, sessionId: string | undefined): void {
    const own = sessionId === undefined ? undefined : this.workers.get(sessionId);
    if (!own) return;
    const send = (method: string, args: object = {}) => this.cdp.send(method, args, sessionId);
    const first = this.pendingWorkers.delete(sessionId!);
    const ownScript = params.reason === 'instrumentation' && params.data?.url === own.url;
    if (!first && !ownScript) return void send('Debugger.resume').catch(() => {});
    const done = own.restarts ? [] : [send('Debugger.disable')];
    void Promise.all([send('Runtime.evaluate', { expression: this.script }), send('Debugger.resume'), ...done]).catch((err: unknown) => {
      if (!this.cdp.closed && !GONE.test(String(err))) this.log('stealth setup of a worker failed', { error: String(err) });
    });
  }
}
