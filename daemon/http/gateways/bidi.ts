import type { IncomingMessage } from 'node:http';
import type { Duplex, Readable, Writable } from 'node:stream';
import WebSocket, { WebSocketServer, type RawData } from 'ws';
import { ServiceUnavailableError } from '../../../src/errors.js';
import { BOX_NODE, BOX_RUNTIME } from '../../box/box-spec.js';
import { LineSplitter } from '../../lib/line-splitter.js';

import type { SessionManager } from '../../sessions/manager.js';
import { MAX_CLIENT_MESSAGE, RECEIVER_CAPS, TOO_BIG, type OriginCheck, type WebsocketLimits } from '../websocket-limits.js';
import { processesOf } from '../../in-session/process/session-processes.js';

/** The mapper's runner as the session's box sees it. */
const RUNNER_PATH = `${BOX_RUNTIME}/daemon/http/gateways/bidi-runner.mjs`;
/** The mapper's start: a Node process and chromium-bidi's import, then its CDP attach (about 0.3 s idle). */
const READY_TIMEOUT_MS = 20_000;
/** A BiDi message never spans lines: the largest line is the largest message (the mapper's answers included). */
const MAX_LINE = 512 * 1024 * 1024;
const HIGH_WATER = 8 * 1024 * 1024;

export interface BidiGatewayDeps {
  sessions: SessionManager;
  limits: WebsocketLimits;
  origins: OriginCheck;
  log: (msg: string, extra?: object) => void;
}

/**
 * webdriver_ws_url: a WebDriver BiDi endpoint for the session (Selenium, WebdriverIO, Puppeteer's
 * BiDi mode). Each connection gets its own chromium-bidi mapper, a Node process in the session's
 * namespace that reaches the browser through the CDP gateway (so it holds the session active and
 * a BiDi browser.close ends only it); the daemon only relays lines to frames. The jwt is the
 * cdp_ws_url's: the same key opens the same browser.
 */
export class BidiGateway {
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: MAX_CLIENT_MESSAGE, ...RECEIVER_CAPS });

  constructor(private readonly deps: BidiGatewayDeps) {}

  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> {
    this.deps.origins.check(req.headers.origin);
    const session = await this.deps.sessions.sessionForToken(url.searchParams.get('jwt'), 'cdp');
    const admitted = this.deps.limits.admit(session.id);
    socket.once('close', admitted);
    const mapper = processesOf(session).helper([BOX_NODE, RUNNER_PATH], { stdin: true });
    const stdin = mapper.stdin as Writable;
    stdin.on('error', () => {});
    stdin.write(`${this.deps.sessions.view.cdpUrlInBox(session.record)}\n`);
    // Its last words, for the error when it cannot start.
    let stderr = '';
    (mapper.stderr as Readable).on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
    let onLine: (line: string) => void = () => {};
    const lines = new LineSplitter((line) => onLine(line), MAX_LINE);
    (mapper.stdout as Readable).on('data', (chunk: Buffer) => lines.write(chunk));
    const kill = () => mapper.kill('SIGKILL');
    socket.once('close', kill);
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new ServiceUnavailableError('the WebDriver BiDi mapper did not start in time')), READY_TIMEOUT_MS);
        onLine = () => {
          clearTimeout(timer);
          resolve();
        };
        void mapper.exited.then(() => {
          clearTimeout(timer);
          reject(new ServiceUnavailableError(`the WebDriver BiDi mapper could not start: ${stderr.trim().slice(-500) || 'it exited'}`));
        });
      });
    } catch (err) {
      kill();
      throw err;
    }
    socket.off('close', kill);
    if (socket.destroyed) {
      kill();
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (client) => {
      // What ws holds of the client's unfinished message counts in the daemon's budget (ws reads
      // the socket first: its listener was added before this one).
      const held = this.deps.limits.tracker((client as unknown as { _receiver: unknown })._receiver);
      let refused = false;
      socket.on('data', () => {
        if (refused || held.update()) return;
        refused = true;
        client.close(TOO_BIG, 'the daemon holds too many unfinished websocket messages; send smaller ones');
        setTimeout(() => client.terminate(), 2000).unref();
      });
      socket.once('close', () => held.release());
      // A client that does not read must not make the daemon buffer the mapper's output without bound.
      const out = mapper.stdout as Readable;
      onLine = (line) => {
        client.send(line, () => {
          if (out.isPaused() && client.bufferedAmount < HIGH_WATER / 2) out.resume();
        });
        if (client.bufferedAmount > HIGH_WATER) out.pause();
      };
      // A frame is one message; JSON has no raw newline outside its strings, so this keeps it one
      // line. A mapper that does not keep up stops the client's reading, not the daemon's memory.
      client.on('message', (data: RawData, binary: boolean) => {
        const line = `${(binary ? Buffer.from(data as Buffer).toString() : data.toString()).replace(/[\r\n]/g, ' ')}\n`;
        if (!stdin.write(line)) {
          client.pause();
          stdin.once('drain', () => client.resume());
        }
      });
      const close = () => {
        kill();
        if (client.readyState !== WebSocket.CLOSED) client.close(1001, 'browser connection ended');
      };
      client.on('close', kill);
      client.on('error', kill);
      void mapper.exited.then(close);
    });
  }
}
