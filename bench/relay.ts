/**
 * The least a relay in Node can do, as its own process (like the daemon), listening on the host's
 * loopback and reaching a box's DevTools port through sockets connected inside the box and handed
 * over (bench/box-connect.ts), as the daemon's are: `ws` relays frames with the ws library and
 * the gateway's ws settings, `tcp` splices bytes (the floor of any relay in Node: no websocket
 * work at all). It shows what one extra Node hop costs on this machine, so the gateway's ratio
 * can be told apart from the price of relaying at all.
 *
 * Prints its ws:// URL on stdout; exits when its stdin closes, so it never outlives the bench.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import WebSocket, { WebSocketServer, type RawData } from 'ws';
import { boxConnector, type BoxConnector } from './box-connect.js';

export interface Relay {
  url: string;
  stop(): void;
}

/** Starts this file as a child process relaying to `target`, a DevTools URL inside the box whose network namespace is `netns`. */
export async function startRelay(target: string, mode: 'ws' | 'tcp', netns: string): Promise<Relay> {
  // execArgv carries tsx's loader, which the child needs to run a .ts file.
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), target, mode, netns], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`relay exited with ${code}`)));
    child.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
  });
  return { url, stop: () => void child.kill('SIGKILL') };
}

function serve(target: URL, box: BoxConnector): void {
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  const server = createServer();
  server.on('upgrade', async (req, socket, head) => {
    const connected = await box.connect(Number(target.port)).catch(() => undefined);
    if (!connected) return void socket.destroy();
    const upstream = new WebSocket(target, { perMessageDeflate: false, createConnection: () => connected as never });
    upstream.once('error', () => socket.destroy());
    upstream.once('open', () =>
      wss.handleUpgrade(req, socket, head, (client) => {
        client.on('message', (data: RawData, isBinary: boolean) => upstream.send(data, { binary: isBinary }));
        upstream.on('message', (data: RawData, isBinary: boolean) => client.send(data, { binary: isBinary }));
        client.on('close', () => upstream.terminate());
        upstream.on('close', () => client.terminate());
      }),
    );
  });
  listen(server, target.pathname);
}

/** Every connection gets its own connection to the target's port, and bytes flow both ways untouched. */
function splice(target: URL, box: BoxConnector): void {
  const server = createNetServer({ pauseOnConnect: true }, async (client) => {
    const upstream = await box.connect(Number(target.port)).catch(() => undefined);
    if (!upstream) return void client.destroy();
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.pipe(upstream).pipe(client);
    client.resume();
    const end = () => (client.destroy(), upstream.destroy());
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  listen(server, target.pathname);
}

function listen(server: ReturnType<typeof createNetServer> | ReturnType<typeof createServer>, path: string): void {
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    process.stdout.write(`ws://127.0.0.1:${port}${path}\n`);
  });
  process.stdin.on('close', () => process.exit(0));
  process.stdin.resume();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [target, mode, netns] = process.argv.slice(2) as [string, string, string];
  const box = await boxConnector(netns);
  (mode === 'tcp' ? splice : serve)(new URL(target), box);
}
