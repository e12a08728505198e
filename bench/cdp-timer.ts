/**
 * Times Runtime.evaluate("1+1") round trips over one path to a browser, in a process of its own:
 * `cdp-timer.ts NAME URL`. Every path of the CDP comparison gets an identical client process that
 * times only it, so no path is timed by a warmer process than another: timed alone in its process
 * while the other three shared one, the gateway read 1.06-1.10x the splice; as one of three
 * connections in its process, like them, 0.97-1.07x (same daemon, same runs).
 * One request per line on stdin ({"calls": N}), one answer per line on stdout ({NAME: per-call ms}).
 */
import { createInterface } from 'node:readline';
import { CdpClient } from './cdp.js';

const [name, url] = [process.argv[2]!, process.argv[3]!];
const client = await CdpClient.connect(url);
const sessionId = await client.attachToPage();
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const { calls } = JSON.parse(line) as { calls: number };
  process.stdout.write(`${JSON.stringify({ [name]: await client.timeEvaluate(sessionId, calls) })}\n`);
}
client.close();
