import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { after, before } from 'node:test';
import type Kernel from '@onkernel/sdk';
import { ROOT, startSdkDaemon, type TestDaemon } from './daemon.js';

const PAGES = join(ROOT, 'fixtures', 'pages');
const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css' };

/** A request the fixtures server received: its path and headers (what the browser really sent). */
export interface SeenRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The body of a POST /report. */
  body?: string;
}

/**
 * Serves fixtures/pages on a loopback port, as the page a session's browser loads. GET /echo
 * answers the request's headers as JSON, /echo-request its method, headers and body, POST /report
 * keeps its body (204); /set-cookie sets one, /redirect redirects to /hello.html, /slow never
 * answers and /big is 17 MiB; `requests` lists every request received.
 */
export async function startFixtureServer(): Promise<{ url: string; requests: SeenRequest[]; close: () => Promise<void> }> {
  const requests: SeenRequest[] = [];
  const server: Server = createServer(async (req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
    if (req.method === 'POST' && path === '/report') {
      let body = '';
      for await (const chunk of req) body += chunk;
      requests.push({ path, headers: req.headers, body });
      res.writeHead(204).end();
      return;
    }
    if (path === '/echo-request') {
      let body = '';
      for await (const chunk of req) body += chunk;
      requests.push({ path, headers: req.headers, body });
      res
        .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        .end(JSON.stringify({ method: req.method, headers: req.headers, body }));
      return;
    }
    requests.push({ path, headers: req.headers });
    if (path === '/set-cookie') {
      res
        .writeHead(200, { 'set-cookie': 'from_response=set-by-curl; Path=/', 'content-type': 'text/plain', 'x-multi': ['one', 'two'] })
        .end('cookie set');
      return;
    }
    if (path === '/redirect') {
      res.writeHead(302, { location: '/hello.html' }).end();
      return;
    }
    if (path === '/slow') return; // never answers; closeAllConnections ends it
    if (path === '/no-content') {
      res.writeHead(204).end();
      return;
    }
    if (path === '/big') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(Buffer.alloc(17 * 1024 * 1024, 1));
      return;
    }
    if (path === '/echo') {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(req.headers));
      return;
    }
    const file = join(PAGES, path);
    try {
      if (!file.startsWith(PAGES) || !(await stat(file)).isFile()) throw new Error('not found');
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
      createReadStream(file).pipe(res);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export type FixtureServer = Awaited<ReturnType<typeof startFixtureServer>>;

/**
 * For a test file (or a describe): an official SDK client of a test daemon and a fixture page
 * server, started before its tests and stopped after them. Read the fields inside the tests.
 */
export function sdkDaemonWithFixtures(opts: { env?: Record<string, string> } = {}): { d: TestDaemon; kernel: Kernel; fixtures: FixtureServer } {
  const env = {} as { d: TestDaemon; kernel: Kernel; fixtures: FixtureServer };
  before(async () => {
    Object.assign(env, await startSdkDaemon(opts));
    env.fixtures = await startFixtureServer();
  });
  after(async () => {
    await env.fixtures?.close();
    await env.d?.stop();
  });
  return env;
}
