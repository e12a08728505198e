import { readFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import WebSocket, { type RawData } from 'ws';
import { findMarkedProcesses, sleep } from '../daemon/lib/procs.js';
import type { TestDaemon } from '../test/helpers/daemon.js';

interface Pending {
  resolve: (result: unknown) => void;
  reject: (err: Error) => void;
}

interface CdpMessage {
  id?: number;
  result?: unknown;
  error?: { message: string };
}

/**
 * A bare CDP client over one websocket: no library in between, so a round trip measures the
 * websocket path (and the gateway, when it is in it) rather than a client's bookkeeping.
 */
export class CdpClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data: RawData) => this.onMessage(data));
    ws.on('close', () => this.failAll(new Error('CDP websocket closed')));
  }

  /** `socket`: a connection to the URL's port made elsewhere (inside a box), used instead of dialling it. */
  static async connect(url: string, socket?: Socket): Promise<CdpClient> {
    const ws = new WebSocket(url, { perMessageDeflate: false, ...(socket ? { createConnection: () => socket as never } : {}) });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new CdpClient(ws);
  }

  send<T = unknown>(method: string, params: object = {}, sessionId?: string): Promise<T> {
    const id = this.nextId++;
    const done = new Promise<T>((resolve, reject) => this.pending.set(id, { resolve: resolve as (r: unknown) => void, reject }));
    this.ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    return done;
  }

  /** Attaches (flattened) to the first page target and returns the CDP sessionId for it. */
  async attachToPage(): Promise<string> {
    const { targetInfos } = await this.send<{ targetInfos: { targetId: string; type: string }[] }>('Target.getTargets');
    const page = targetInfos.find((t) => t.type === 'page');
    if (!page) throw new Error('the browser has no page target');
    const { sessionId } = await this.send<{ sessionId: string }>('Target.attachToTarget', {
      targetId: page.targetId,
      flatten: true,
    });
    return sessionId;
  }

  /** `count` sequential Runtime.evaluate("1+1") calls; each sample is one call in milliseconds. */
  async timeEvaluate(sessionId: string, count: number): Promise<number[]> {
    const samples: number[] = [];
    for (let i = 0; i < count; i++) {
      const start = performance.now();
      const res = await this.send<{ result: { value?: unknown } }>('Runtime.evaluate', { expression: '1+1' }, sessionId);
      samples.push(performance.now() - start);
      if (res.result.value !== 2) throw new Error(`Runtime.evaluate returned ${JSON.stringify(res.result)}`);
    }
    return samples;
  }

  close(): void {
    this.ws.terminate();
  }

  private onMessage(data: RawData): void {
    const msg = JSON.parse(data.toString()) as CdpMessage;
    // Events (no id) are not waited for.
    if (msg.id === undefined) return;
    const waiter = this.pending.get(msg.id);
    if (!waiter) return;
    this.pending.delete(msg.id);
    if (msg.error) waiter.reject(new Error(`CDP error: ${msg.error.message}`));
    else waiter.resolve(msg.result);
  }

  private failAll(err: Error): void {
    for (const waiter of this.pending.values()) waiter.reject(err);
    this.pending.clear();
  }
}

/** Browser.close over a short-lived connection (a raw browser's end, as a session's). */
export async function cdpClose(wsUrl: string): Promise<void> {
  const client = await CdpClient.connect(wsUrl).catch(() => undefined);
  if (!client) return;
  await client.send('Browser.close').catch(() => {});
  client.close();
}

/** "PORT\n/devtools/browser/GUID": both lines, the GUID complete. */
const ACTIVE_PORT = /^(\d+)\n(\/devtools\/browser\/[0-9a-f-]{36})\s*$/;

/**
 * The DevTools websocket of a session's own Chromium, which the API deliberately never reveals,
 * and which only its box's network reaches: read from the DevToolsActivePort file Chromium writes
 * into its profile, through the filesystem API.
 */
export async function directWsUrl(d: TestDaemon, sessionId: string, timeoutMs = 5000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // Chromium prints "DevTools listening" (which is when a create returns) before it writes this
    // file, and writes it in place: it can be missing or half-written for a few milliseconds.
    const res = await fetch(
      `${d.baseUrl}/browsers/${sessionId}/fs/read_file?path=${encodeURIComponent('/home/kernel/user-data/DevToolsActivePort')}`,
      {
        headers: { authorization: `Bearer ${d.apiKey}` },
      },
    );
    const m = ACTIVE_PORT.exec(res.ok ? await res.text() : '');
    if (m) return `ws://127.0.0.1:${m[1]}${m[2]}`;
    if (Date.now() > deadline) throw new Error(`no complete DevToolsActivePort of ${sessionId} after ${timeoutMs} ms`);
    await sleep(20);
  }
}

/** A process in a session's box (its agent), whose network namespace the bench can enter. */
export async function boxProcess(home: string, sessionId: string): Promise<number> {
  for (const pid of await findMarkedProcesses(home, sessionId)) {
    const args = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (args.some((a) => a.endsWith('/agent.mjs')) && !args[0]?.endsWith('bwrap')) return pid;
  }
  throw new Error(`no box found for session ${sessionId}`);
}
