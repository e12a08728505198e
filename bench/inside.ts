/**
 * The paths to a session's Chromium that only its own network has: run in the session's network
 * namespace (the bench starts it with nsenter), it times Runtime.evaluate("1+1") to the browser
 * directly, through a bare Node websocket relay and through a Node TCP splice, so the gateway's
 * round trips can be set against the same browser's. One request per line on stdin ({"calls": N}),
 * one answer per line on stdout ({direct, bareRelay, splice}: per-call ms).
 */
import { createInterface } from 'node:readline';
import { CdpClient } from './cdp.js';
import { startRelay } from './relay.js';

const directUrl = process.argv[2]!;
const clients: CdpClient[] = [];
const relays = [await startRelay(directUrl, 'ws'), await startRelay(directUrl, 'tcp')];
const timers: ((count: number) => Promise<number[]>)[] = [];
for (const url of [directUrl, relays[0]!.url, relays[1]!.url]) {
  const client = await CdpClient.connect(url);
  clients.push(client);
  const sessionId = await client.attachToPage();
  timers.push((count) => client.timeEvaluate(sessionId, count));
}
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const { calls } = JSON.parse(line) as { calls: number };
  const [direct, bareRelay, splice] = [await timers[0]!(calls), await timers[1]!(calls), await timers[2]!(calls)];
  process.stdout.write(`${JSON.stringify({ direct, bareRelay, splice })}\n`);
}
for (const c of clients) c.close();
for (const r of relays) r.stop();
