import { createWriteStream } from 'node:fs';
import { truncate } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import WebSocket from 'ws';
import type { Box, BoxProcess, ProcessExit } from '../box/box.js';
import { within } from '../lib/procs.js';

/**
 * Where a browser's DevTools protocol is: its URL as programs inside its box use it, and a way for
 * the daemon to connect, through the box's agent (nothing of a box listens where the daemon is).
 */
export interface DevToolsEndpoint {
  /** ws://127.0.0.1:PORT/devtools/browser/ID, meaningful inside the browser's box only. */
  readonly wsUrl: string;
  /** A socket connected to the DevTools port. */
  connect(): Promise<Duplex>;
}

/** A websocket to a DevTools endpoint (the browser's, or a page's path on it). */
export async function openDevTools(endpoint: DevToolsEndpoint, opts: { path?: string; maxPayload?: number } = {}): Promise<WebSocket> {
  const socket = await endpoint.connect();
  const url = new URL(endpoint.wsUrl);
  if (opts.path) url.pathname = opts.path;
  const ws = new WebSocket(url, {
    perMessageDeflate: false,
    createConnection: () => socket as never,
    ...(opts.maxPayload ? { maxPayload: opts.maxPayload } : {}),
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return ws;
}

/** A plain HTTP GET of the DevTools endpoint (/json/version), over a socket through the box. */
export async function devToolsGet(endpoint: DevToolsEndpoint, path: string): Promise<{ status: number; body: Buffer }> {
  const socket = await endpoint.connect();
  const url = new URL(endpoint.wsUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: 'GET', createConnection: () => socket as never }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Flags every browser gets: the closed network here otherwise floods refused connections. */
export const BASE_FLAGS = [
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-default-browser-check',
  '--disable-breakpad',
  '--disable-crash-reporter',
  '--password-store=basic',
  '--use-mock-keychain',
  // WebUIOmniboxPopup and WebUIOmniboxAimPopup: Chromium 156 preloads its address-bar popup as two
  // WebUI pages in a renderer of their own, even headless, where nothing can show them. That renderer
  // took ~1.8 CPU-seconds of a ~4.9 CPU-second start here; without it a start costs ~2.6.
  '--disable-features=Translate,MediaRouter,OptimizationHints,WebUIOmniboxPopup,WebUIOmniboxAimPopup',
  // As Playwright's own launches: a page restored from the back-forward cache fires no load event,
  // and page.goBack() in a Playwright test then waited for one until its timeout.
  '--disable-back-forward-cache',
  // Pages' WebMCP tools (document.modelContext) and the DevTools domain that lists and invokes them,
  // as Kernel's browsers run (the second name is the one newer Chromium releases use).
  '--enable-features=WebMCPTesting,DevToolsWebMCPSupport',
  // On the box's own loopback: only programs in the box, and the daemon through the box's agent, reach it.
  '--remote-debugging-address=127.0.0.1',
  '--remote-debugging-port=0',
];

export interface ChromiumOptions {
  executable: string;
  /** The box the browser runs in (as the box's user). */
  box: Box;
  userDataDir: string;
  env: Record<string, string>;
  headless: boolean;
  width: number;
  height: number;
  kiosk?: boolean;
  startUrl?: string;
  /** Needed while Chromium runs as root outside a namespace sandbox. */
  noSandbox?: boolean;
  readyTimeoutMs?: number;
  /** More flags (a session's features); list flags among them merge with the base ones. */
  extraArgs?: string[];
  /** Where Chromium's output (its log) is kept, for GET /browsers/{id}/logs/stream; emptied at LOG_MAX_BYTES. */
  logFile?: string;
  /** Called once the browser's process runs (before it is ready): a background launch lowers its priority then. */
  onSpawned?: () => void;
}

const LOG_MAX_BYTES = 16 * 1024 * 1024;

/** Flags Chromium reads only once (the last wins), so values from several sources must be joined. */
const LIST_FLAGS = ['--disable-features', '--enable-features', '--load-extension', '--disable-extensions-except'];

/** Joins repeated list flags into one each, keeping the first one's position. */
export function mergeListFlags(args: string[]): string[] {
  const merged = new Map<string, string[]>();
  const out: string[] = [];
  for (const arg of args) {
    const eq = arg.indexOf('=');
    const name = arg.slice(0, eq);
    if (eq < 0 || !LIST_FLAGS.includes(name)) {
      out.push(arg);
      continue;
    }
    const values = arg
      .slice(eq + 1)
      .split(',')
      .filter(Boolean);
    const seen = merged.get(name);
    if (seen) seen.push(...values.filter((v) => !seen.includes(v)));
    else {
      merged.set(name, [...new Set(values)]);
      out.push(name);
    }
  }
  return out.map((a) => (merged.has(a) ? `${a}=${merged.get(a)!.join(',')}` : a));
}

export function chromiumArgs(o: Omit<ChromiumOptions, 'box'>): string[] {
  return mergeListFlags([
    ...BASE_FLAGS,
    `--user-data-dir=${o.userDataDir}`,
    `--window-size=${o.width},${o.height}`,
    '--window-position=0,0',
    ...(o.noSandbox ? ['--no-sandbox'] : []),
    // Headless Chromium otherwise reports an 800x600 screen whatever the window size.
    ...(o.headless ? ['--headless', `--screen-info={${o.width}x${o.height}}`] : ['--ozone-platform=x11']),
    // Headless Chromium lays its page out below a tab strip and toolbar nobody sees: a 1024x768
    // window held a 1024x625 page. Kiosk has none, so the page is the viewport, as in Kernel's
    // headless browsers; headless, kiosk changes nothing else anyone sees.
    ...(o.kiosk || o.headless ? ['--kiosk'] : []),
    ...(o.extraArgs ?? []),
    o.startUrl ?? 'about:blank',
  ]);
}

/** One running Chromium in its box: its DevTools endpoint, and the only ways it should end. */
export class ChromiumProcess implements DevToolsEndpoint {
  private stopping?: Promise<boolean>;
  /**
   * A connection to the DevTools port opened ahead for the next connect(): one through the box's
   * agent is two descriptor hand-overs (agent to launcher to daemon), which took 1.4-17 ms of a
   * client's CDP connect on a busy machine. Chromium keeps an idle connection open.
   */
  private spare?: Promise<Socket | undefined>;
  private ending = false;

  constructor(
    private readonly proc: BoxProcess,
    private readonly box: Box,
    readonly wsUrl: string,
    private readonly stderrTail: () => string,
  ) {}

  /** Its pid in its box. */
  get pid(): number {
    return this.proc.pid ?? 0;
  }

  get exited(): Promise<ProcessExit> {
    return this.proc.exited;
  }

  /** Whether its process still runs (its exit not yet seen otherwise). */
  get running(): boolean {
    return this.proc.running && !this.box.isStopped;
  }

  /** The http://127.0.0.1:PORT origin of the DevTools endpoint, as pages in the box reach it. */
  get httpOrigin(): string {
    const u = new URL(this.wsUrl);
    return `http://${u.host}`;
  }

  async connect(): Promise<Duplex> {
    const spare = this.spare;
    this.spare = undefined;
    this.openSpare();
    const socket = await spare;
    return socket && !socket.destroyed && socket.readable ? socket : this.open();
  }

  /** Opens the next spare connection, unless the browser is ending. */
  openSpare(): void {
    if (this.ending || this.spare || !this.running) return;
    const spare = this.open().then(
      (socket) => {
        // Dropped if Chromium or the box closes it while it waits.
        socket.once('close', () => {
          if (this.spare === spare) this.spare = undefined;
        });
        return socket;
      },
      () => {
        if (this.spare === spare) this.spare = undefined;
        return undefined;
      },
    );
    this.spare = spare;
  }

  private open(): Promise<Socket> {
    return this.box.connect({ port: Number(new URL(this.wsUrl).port) });
  }

  get recentOutput(): string {
    return this.stderrTail();
  }

  /**
   * Browser.close first, so Chromium flushes cookies and profile state (SIGTERM loses them), then
   * whatever is left of its process group is killed. Resolves whether Chromium exited by itself.
   */
  close(graceMs = 5000): Promise<boolean> {
    // Browser.close below takes the spare connection, and none is opened after it.
    this.ending = true;
    this.stopping ??= (async () => {
      const closed = await within(
        graceMs,
        sendBrowserClose(this).then(() => this.exited),
      );
      this.proc.kill('SIGKILL');
      void this.spare?.then((socket) => socket?.destroy());
      if (!closed) await within(2000, this.exited);
      return closed;
    })();
    return this.stopping;
  }
}

/** Sends CDP commands over a short-lived browser connection, in order; resolves with their results. */
export async function cdpCommands(
  endpoint: DevToolsEndpoint,
  run: (send: (method: string, params?: object, sessionId?: string) => Promise<any>) => Promise<void>,
  opts: { timeoutMs?: number } = {},
): Promise<void> {
  const ws = await openDevTools(endpoint);
  let next = 0;
  let failed: Error | undefined;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  // No command waits forever: a browser that stops answering (or closes) fails every one still pending.
  const failAll = (err: Error) => {
    failed ??= err;
    for (const p of pending.values()) p.reject(failed);
    pending.clear();
  };
  ws.on('close', () => failAll(new Error('the browser closed the DevTools connection')));
  const timer = opts.timeoutMs
    ? setTimeout(() => failAll(new Error(`the browser did not answer within ${opts.timeoutMs} ms`)), opts.timeoutMs)
    : undefined;
  ws.on('message', (data) => {
    const msg = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
    const p = msg.id === undefined ? undefined : pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id!);
    if (msg.error) p.reject(new Error(msg.error.message));
    else p.resolve(msg.result);
  });
  // sessionId addresses a target attached with flatten: true (its page, not the browser).
  const send = (method: string, params: object = {}, sessionId?: string) =>
    new Promise<any>((resolve, reject) => {
      if (failed) return reject(failed);
      const id = ++next;
      pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  try {
    await run(send);
  } finally {
    clearTimeout(timer);
    ws.terminate();
  }
}

/** Sets every page window to width x height (the window manager, if any, may refit it to the screen). */
export async function resizeWindows(endpoint: DevToolsEndpoint, width: number, height: number): Promise<void> {
  await cdpCommands(endpoint, async (send) => {
    const { targetInfos } = await send('Target.getTargets');
    const windows = new Set<number>();
    for (const t of targetInfos as { targetId: string; type: string }[]) {
      if (t.type !== 'page') continue;
      const { windowId } = await send('Browser.getWindowForTarget', { targetId: t.targetId });
      windows.add(windowId);
    }
    for (const windowId of windows) {
      await send('Browser.setWindowBounds', { windowId, bounds: { windowState: 'normal' } }).catch(() => {});
      await send('Browser.setWindowBounds', { windowId, bounds: { left: 0, top: 0, width, height } });
    }
  });
}

async function sendBrowserClose(endpoint: DevToolsEndpoint): Promise<void> {
  const socket = await endpoint.connect().catch(() => undefined);
  if (!socket) return;
  return new Promise((resolve) => {
    const ws = new WebSocket(endpoint.wsUrl, { perMessageDeflate: false, createConnection: () => socket as never });
    const done = () => {
      ws.removeAllListeners();
      ws.terminate();
      resolve();
    };
    ws.once('open', () => ws.send(JSON.stringify({ id: 1, method: 'Browser.close' })));
    ws.once('message', done);
    ws.once('close', done);
    ws.once('error', done);
  });
}

/** Appends a stream to a file, which starts over once it holds LOG_MAX_BYTES (a follower sees it truncated). */
function keepLog(stream: Readable, file: string): void {
  const out = createWriteStream(file, { flags: 'a', mode: 0o600 });
  out.on('error', () => {});
  let bytes = 0;
  stream.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > LOG_MAX_BYTES) {
      bytes = chunk.length;
      void truncate(file, 0).catch(() => {});
    }
    out.write(chunk);
  });
  stream.once('close', () => out.end());
}

export async function launchChromium(o: ChromiumOptions): Promise<ChromiumProcess> {
  let tail = '';
  const child = o.box.spawn([o.executable, ...chromiumArgs(o)], { env: o.env, cwd: '/home/kernel', stdout: false, stderr: true, role: 'browser' });
  await child.started.catch((err: Error) => {
    throw new Error(`Chromium did not start: ${err.message}`);
  });
  o.onSpawned?.();
  if (o.logFile) keepLog(child.stderr!, o.logFile);
  const wsUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error('timed out waiting for DevTools')), o.readyTimeoutMs ?? 20_000);
    function fail(err: Error) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`Chromium did not start: ${err.message}${tail ? `\n${tail.trim()}` : ''}`));
    }
    void child.exited.then((e) => fail(new Error(`exited with ${e.signal ?? e.code}`)));
    child.stderr!.on('data', (chunk: Buffer) => {
      tail = (tail + chunk.toString()).slice(-4000);
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(tail);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
  });
  const port = Number(new URL(wsUrl).port);
  o.box.setBrowser(child, port, new URL(wsUrl).pathname);
  const browser = new ChromiumProcess(child, o.box, wsUrl, () => tail);
  browser.openSpare();
  return browser;
}
