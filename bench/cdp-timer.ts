/**
 * Times Runtime.evaluate("1+1") round trips to one browser, in a process of its own, so every
 * path of the CDP comparison is timed by the same lean client process and none by the bench's
 * busier one (it measured 35-70 µs more CPU per call there). `cdp-timer.ts URL`: the URL as
 * `gateway`. `cdp-timer.ts URL --relays`: the URL as `direct`, and through a bare Node websocket
 * relay and a Node TCP splice to it (run in the session's network namespace, entered with nsenter,
 * where its DevTools port is). One request per line on stdin ({"calls": N}), one answer per line
 * on stdout (path name -> per-call ms).
 */
import { createInterface } from 'node:readline';
import { CdpClient } from './cdp.js';
import { startRelay } from './relay.js';

const url = process.argv[2]!;
const relayed = process.argv[3] === '--relays';
const relays = relayed ? [await startRelay(url, 'ws'), await startRelay(url, 'tcp')] : [];
const paths: [string, string][] = relayed
  ? [
      ['direct', url],
      ['bareRelay', relays[0]!.url],
      ['splice', relays[1]!.url],
    ]
  : [['gateway', url]];
const clients: CdpClient[] = [];
const timers: [string, (count: number) => Promise<number[]>][] = [];
for (const [name, target] of paths) {
  const client = await CdpClient.connect(target);
  clients.push(client);
  const sessionId = await client.attachToPage();
  timers.push([name, (count) => client.timeEvaluate(sessionId, count)]);
}
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const { calls } = JSON.parse(line) as { calls: number };
  const out: Record<string, number[]> = {};
  for (const [name, time] of timers) out[name] = await time(calls);
  process.stdout.write(`${JSON.stringify(out)}\n`);
}
for (const c of clients) c.close();
for (const r of relays) r.stop();
