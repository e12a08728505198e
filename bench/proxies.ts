/**
 * What the local forwarding proxy every session routes through costs: page loads and a
 * 10 MB fetch from a page server on this machine's non-loopback address (proxied: it goes through
 * the session's forwarder, direct as no upstream is set) against the same loads on 127.0.0.1
 * (Chromium's implicit loopback bypass: never proxied), in the same session; a raw Chromium
 * without any proxy loads both as the control, and against the session's proxied loads.
 * Run: npx tsx bench/proxies.ts   (BENCH_PROXY_ROUNDS, default 30)
 */
import { createServer } from 'node:http';
import { networkInterfaces } from 'node:os';
import { chromium, type Page } from 'playwright';
import { resolveChromium } from '../src/system-deps.js';
import { startTestDaemon } from '../test/helpers/daemon.js';
import { RawChromiums } from './raw.js';
import { alternate, createSession, deleteSession, timed } from './scenarios.js';
import { renderTable, summarize, type Comparison } from './stats.js';

const ROUNDS = Number(process.env.BENCH_PROXY_ROUNDS ?? 30);
const ASSETS = 30;
const ASSET = Buffer.alloc(16 * 1024, 'x');
const BLOB = Buffer.alloc(10 * 1024 * 1024, 'y');

const lanAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
if (!lanAddress) {
  console.error('no non-loopback IPv4 address: nothing would go through the forwarder');
  process.exit(1);
}

/** A page of ASSETS scripts and a 10 MB blob, never cached, on every address of the machine. */
const server = createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  // Readable from a page of the other origin (the blob fetches run from a loopback page).
  const headers = { 'cache-control': 'no-store', 'access-control-allow-origin': '*' };
  if (path === '/page') {
    const scripts = Array.from({ length: ASSETS }, (_, i) => `<script src="/asset/${i}.js"></script>`).join('');
    res.writeHead(200, { ...headers, 'content-type': 'text/html' }).end(`<!doctype html><title>bench</title>${scripts}`);
  } else if (path.startsWith('/asset/')) {
    res.writeHead(200, { ...headers, 'content-type': 'text/javascript' }).end(ASSET);
  } else if (path === '/blob') {
    res.writeHead(200, { ...headers, 'content-type': 'application/octet-stream' }).end(BLOB);
  } else res.writeHead(404).end();
});
await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
const { port } = server.address() as { port: number };
const proxied = `http://${lanAddress}:${port}`;
const loopback = `http://127.0.0.1:${port}`;

let round = 0;
const load = (page: Page, origin: string) => () =>
  timed(async () => {
    const res = await page.goto(`${origin}/page?r=${++round}`, { waitUntil: 'load' });
    if (res?.status() !== 200) throw new Error(`page answered ${res?.status()}`);
  });
const fetchBlob = (page: Page, origin: string) => () =>
  timed(async () => {
    const size = await page.evaluate(async (url) => (await (await fetch(url)).arrayBuffer()).byteLength, `${origin}/blob?r=${++round}`);
    if (size !== BLOB.length) throw new Error(`blob of ${size} bytes`);
  });

const daemon = await startTestDaemon();
const raws = await RawChromiums.create(resolveChromium());
try {
  const session = await createSession(daemon, { headless: true, timeout_seconds: 600 });
  const rawProfile = await raws.prepare();
  const raw = await raws.launch(rawProfile);
  const viaSession = await chromium.connectOverCDP(session.cdp_ws_url);
  const viaRaw = await chromium.connectOverCDP(raw.wsUrl);
  const sPage = await viaSession.contexts()[0]!.newPage();
  const rPage = await viaRaw.contexts()[0]!.newPage();

  const [hop, bypass] = await alternate(3, ROUNDS, load(sPage, proxied), load(sPage, loopback));
  const [rawLan, rawLoop] = await alternate(3, ROUNDS, load(rPage, proxied), load(rPage, loopback));
  const [sessionLan, rawLan2] = await alternate(3, ROUNDS, load(sPage, proxied), load(rPage, proxied));

  // Fetched from a loopback page: a public page may not fetch loopback (Private Network Access).
  await sPage.goto(`${loopback}/page`);
  await rPage.goto(`${loopback}/page`);
  const blobRounds = Math.ceil(ROUNDS / 3);
  const [sBlobHop, sBlobBypass] = await alternate(2, blobRounds, fetchBlob(sPage, proxied), fetchBlob(sPage, loopback));
  const [sBlobHop2, rBlob] = await alternate(2, blobRounds, fetchBlob(sPage, proxied), fetchBlob(rPage, proxied));

  const rows: Comparison[] = [
    { metric: `page + ${ASSETS} scripts: session, proxied vs loopback (the hop)`, unit: 'ms', rbrowse: summarize(hop), raw: summarize(bypass) },
    { metric: `page + ${ASSETS} scripts: raw Chromium, LAN vs loopback (control)`, unit: 'ms', rbrowse: summarize(rawLan), raw: summarize(rawLoop) },
    { metric: `page + ${ASSETS} scripts: session proxied vs raw Chromium`, unit: 'ms', rbrowse: summarize(sessionLan), raw: summarize(rawLan2) },
    { metric: 'fetch 10 MB: session, proxied vs loopback', unit: 'ms', rbrowse: summarize(sBlobHop), raw: summarize(sBlobBypass) },
    { metric: 'fetch 10 MB: session proxied vs raw Chromium', unit: 'ms', rbrowse: summarize(sBlobHop2), raw: summarize(rBlob) },
  ];
  console.log(`\nforwarding-proxy bench (${ROUNDS} rounds; "proxied" loads ${lanAddress}, which goes through the session's forwarder)\n`);
  console.log(renderTable(rows));
  await viaSession.close();
  await viaRaw.close();
  await deleteSession(daemon, session.session_id);
} finally {
  const strays = await raws.disposeAll();
  if (strays.length) console.error(`raw Chromium processes killed at the end: ${strays.join(', ')}`);
  await daemon.stop();
  server.closeAllConnections();
  server.close();
}
