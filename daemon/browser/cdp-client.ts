import type WebSocket from 'ws';
import { openDevTools, type DevToolsEndpoint } from './chromium.js';

type Handler = (params: any, sessionId: string | undefined) => void;

interface Pending {
  method: string;
  sessionId?: string;
  resolve: (value: any) => void;
  reject: (err: Error) => void;
}

/**
 * A long-lived CDP connection to a browser's own endpoint, flattened sessions included: commands
 * carry an optional sessionId, events reach handlers with the sessionId they came from.
 */
export class CdpClient {
  private next = 0;
  private readonly pending = new Map<number, Pending>();
  private readonly handlers = new Map<string, Handler[]>();
  private closedError?: Error;
  private readonly closeListeners: (() => void)[] = [];

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => this.receive(String(data)));
    ws.on('close', () => this.fail(new Error('CDP connection closed')));
    ws.on('error', (err) => this.fail(err));
  }

  static async connect(browser: DevToolsEndpoint): Promise<CdpClient> {
    return new CdpClient(await openDevTools(browser, { maxPayload: 256 * 1024 * 1024 }));
  }

  get closed(): boolean {
    return this.closedError !== undefined;
  }

  send<T = any>(method: string, params: object = {}, sessionId?: string): Promise<T> {
    if (this.closedError) return Promise.reject(this.closedError);
    const id = ++this.next;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { method, sessionId, resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  }

  on(event: string, handler: Handler): void {
    this.handlers.set(event, [...(this.handlers.get(event) ?? []), handler]);
  }

  /** The next `event` of a session (or of the browser, when sessionId is undefined). */
  once(event: string, sessionId?: string): Promise<any> {
    return new Promise((resolve) => {
      const handler: Handler = (params, from) => {
        if (from !== sessionId) return;
        this.off(event, handler);
        resolve(params);
      };
      this.on(event, handler);
    });
  }

  off(event: string, handler: Handler): void {
    this.handlers.set(
      event,
      (this.handlers.get(event) ?? []).filter((h) => h !== handler),
    );
  }

  close(): void {
    this.fail(new Error('CDP connection closed'));
    this.ws.terminate();
  }

  /** Called once, when the connection ends for whatever reason (the browser closed or restarted, close()). */
  onClose(listener: () => void): void {
    if (this.closedError) listener();
    else this.closeListeners.push(listener);
  }

  private receive(text: string): void {
    const msg = JSON.parse(text) as {
      id?: number;
      method?: string;
      params?: unknown;
      sessionId?: string;
      result?: unknown;
      error?: { message: string };
    };
    if (msg.id === undefined) {
      // A detached session answers nothing more: what it was asked fails instead of hanging.
      if (msg.method === 'Target.detachedFromTarget') this.failSession((msg.params as { sessionId: string }).sessionId);
      for (const handler of this.handlers.get(msg.method ?? '') ?? []) handler(msg.params, msg.sessionId);
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
    else p.resolve(msg.result);
  }

  private failSession(sessionId: string): void {
    for (const [id, p] of this.pending) {
      if (p.sessionId !== sessionId) continue;
      this.pending.delete(id);
      p.reject(new Error(`${p.method}: session detached`));
    }
  }

  private fail(err: Error): void {
    if (!this.closedError) for (const listener of this.closeListeners.splice(0)) queueMicrotask(listener);
    this.closedError ??= err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
}
