// One WebDriver BiDi connection (webdriver_ws_url), in a process of its own inside the session's
// namespace: Google's chromium-bidi mapper (the one ChromeDriver and Puppeteer use) translates
// BiDi to CDP over a connection through the session's CDP gateway. The daemon relays the client's
// websocket: the first stdin line is the gateway URL, then one BiDi message a line each way.
import { createInterface } from 'node:readline';
import { BidiMapper } from 'chromium-bidi';
import { MapperCdpConnection } from 'chromium-bidi/out/Default/gen/src/cdp/CdpConnection.js';
import WebSocket from 'ws';

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
const iterator = lines[Symbol.asyncIterator]();
const { value: cdpUrl } = await iterator.next();

const cdp = new WebSocket(cdpUrl, { perMessageDeflate: false, maxPayload: 512 * 1024 * 1024 });
await new Promise((resolve, reject) => {
  cdp.once('open', resolve);
  cdp.once('error', reject);
}).catch((err) => {
  process.stderr.write(`could not connect to the session's browser: ${err.message}\n`);
  process.exit(1);
});
// The browser gone (the session ended, Chromium restarted) ends the BiDi connection too.
cdp.on('close', () => process.exit(0));

const connection = new MapperCdpConnection({
  setOnMessage: (onMessage) => cdp.on('message', (data) => onMessage(data.toString())),
  sendMessage: async (message) => cdp.send(message),
  close: () => cdp.close(),
});

class StdioTransport extends BidiMapper.EventEmitter {
  onMessage = () => {};
  setOnMessage(onMessage) {
    this.onMessage = onMessage;
  }
  async sendMessage(message) {
    process.stdout.write(`${JSON.stringify(message)}\n`);
  }
  close() {}
}

const transport = new StdioTransport();
const browserClient = await connection.createBrowserSession();
await BidiMapper.BidiServer.createAndStart(transport, connection, browserClient, /* selfTargetId= */ '');
// Ready: the daemon upgrades the client's websocket on this line.
process.stdout.write('{"rbrowse":"ready"}\n');
for await (const line of { [Symbol.asyncIterator]: () => iterator }) {
  if (!line) continue;
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    process.stdout.write(`${JSON.stringify({ type: 'error', id: null, error: 'invalid argument', message: 'not JSON' })}\n`);
    continue;
  }
  void transport.onMessage(message);
}
process.exit(0);
