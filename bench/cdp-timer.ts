/**
 * Times Runtime.evaluate("1+1") round trips over several paths to one browser, call by call in
 * turn, in one process of its own: every path is timed by the same client at the same moments,
 * so neither the machine's load (others share its cores, and swing it within seconds) nor a
 * warmer or colder client favours one. `cdp-timer.ts JSON`: [{name, url, netns?}], where a path
 * with `netns` is a DevTools URL inside that network namespace (bench/box-connect.ts reaches it).
 * One request per line on stdin ({"calls": N}: N calls per path), one answer per line on stdout
 * (path name -> per-call ms).
 */
import { createInterface } from 'node:readline';
import { boxConnector } from './box-connect.js';
import { CdpClient } from './cdp.js';

interface Path {
  name: string;
  url: string;
  netns?: string;
}

const paths = JSON.parse(process.argv[2]!) as Path[];
const clients: { name: string; client: CdpClient; sessionId: string }[] = [];
for (const path of paths) {
  const box = path.netns ? await boxConnector(path.netns) : undefined;
  const socket = box && (await box.connect(Number(new URL(path.url).port)));
  box?.stop();
  const client = await CdpClient.connect(path.url, socket);
  clients.push({ name: path.name, client, sessionId: await client.attachToPage() });
}
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const { calls } = JSON.parse(line) as { calls: number };
  const out: Record<string, number[]> = Object.fromEntries(clients.map((c) => [c.name, []]));
  for (let i = 0; i < calls; i++) {
    // Each call starts the turn at the next path, so none is always timed right after another.
    for (let j = 0; j < clients.length; j++) {
      const { name, client, sessionId } = clients[(i + j) % clients.length]!;
      out[name]!.push(...(await client.timeEvaluate(sessionId, 1)));
    }
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
}
for (const { client } of clients) client.close();
