import { createServer } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { Server, type PrepareRequestFunction } from 'proxy-chain';
import { WebSocketServer } from 'ws';

/** A name no resolver knows: only a proxy that answers it itself can serve it (and loopback is never proxied). */
export const TEST_HOST = 'rbrowse-proxy-test.invalid';

export interface FixtureProxy {
  label: string;
  port: number;
  /** Every request it served (any host), in order: `GET http://host/path` or `CONNECT host:port` (tunnels). */
  seen: string[];
  /** Requests it answered 407 (missing or wrong credentials). */
  challenges: number;
  /** Websockets to TEST_HOST open through it now. */
  openSockets(): number;
  close(): Promise<void>;
}

export interface FixtureProxyOptions {
  label: string;
  /** Required credentials; without them any request is served. */
  username?: string;
  password?: string;
  /** Serve the proxy itself over TLS (a proxy of protocol `https`). */
  tls?: { key: string; cert: string };
}

/**
 * An upstream proxy on 127.0.0.1 (proxy-chain's Server) that answers TEST_HOST itself: a page
 * naming the proxy for plain HTTP, and a websocket server (saying the label) behind CONNECT
 * tunnels. Any other host is really forwarded. It counts what it serves and the 407s it sends.
 */
export async function startFixtureProxy(opts: FixtureProxyOptions): Promise<FixtureProxy> {
  const seen: string[] = [];
  let challenges = 0;
  // Tunnels to TEST_HOST end here: an HTTP server that is never listening, fed sockets by proxy-chain.
  const tunnelEnd = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(opts.label));
  const wss = new WebSocketServer({ server: tunnelEnd });
  wss.on('connection', (ws) => ws.send(opts.label));
  const prepareRequestFunction: PrepareRequestFunction = ({ request, username, password, hostname, isHttp }) => {
    const required = opts.username !== undefined || opts.password !== undefined;
    if (required && (username !== (opts.username ?? '') || password !== (opts.password ?? ''))) {
      challenges++;
      return { requestAuthentication: true, failMsg: 'proxy credentials required' };
    }
    seen.push(`${request.method} ${request.url}`);
    if (hostname !== TEST_HOST) return {};
    if (!isHttp) return { customConnectServer: tunnelEnd };
    const body = `<!doctype html><title>${opts.label}</title><p id="via">${opts.label}</p>`;
    return {
      customResponseFunction: () => ({ statusCode: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body }),
    };
  };
  const base = { host: '127.0.0.1', port: 0, authRealm: opts.label, prepareRequestFunction };
  const server = new Server(opts.tls ? { ...base, serverType: 'https', httpsOptions: opts.tls } : base);
  await server.listen();
  return {
    label: opts.label,
    port: server.port,
    seen,
    get challenges() {
      return challenges;
    },
    openSockets: () => wss.clients.size,
    async close() {
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      await server.close(true);
    },
  };
}

/** A self-signed certificate for 127.0.0.1 (openssl), for a TLS proxy the daemon trusts via NODE_EXTRA_CA_CERTS. */
export async function selfSignedCert(): Promise<{ key: string; cert: string; certFile: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'rbrowse-cert-'));
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  await execa('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    keyFile,
    '-out',
    certFile,
    '-days',
    '2',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
  ]);
  return {
    key: await readFile(keyFile, 'utf8'),
    cert: await readFile(certFile, 'utf8'),
    certFile,
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
