/**
 * The least a websocket relay in Node can do: every client connection gets its own upstream
 * connection to argv[2], and frames are passed through untouched, with the gateway's ws settings.
 * Run as its own process (like the daemon), it shows what one extra Node hop costs on this
 * machine, so the gateway's ratio can be told apart from the price of relaying at all.
 *
 * Prints its ws:// URL on stdout; exits when its stdin closes, so it never outlives the bench.
 */
import { createServer } from 'node:http';
import { spawn } from 'node:child_process';
import { connect, createServer as createNetServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import WebSocket, { WebSocketServer, type RawData } from 'ws';

export interface Relay {
  url: string;
  stop(): void;
}

/**
 * Starts this file as a child process relaying to `target`: `ws` relays frames with the ws
 * library, `tcp` splices bytes (the floor of any relay in Node: no websocket work at all).
 * `wrap` prefixes the command (nsenter, to run it in a box's network namespace).
 */
export async function startRelay(target: string, mode: 'ws' | 'tcp' = 'ws', wrap: string[] = []): Promise<Relay> {
  // execArgv carries tsx's loader, which the child needs to run a .ts file.
  const command = [...wrap, process.execPath, ...process.execArgv, fileURLToPath(import.meta.url), target, mode];
  const child = spawn(command[0]!, command.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`relay exited with ${code}`)));
    child.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
  });
  return { url, stop: () => void child.kill('SIGKILL') };
}

function serve(target: string): void {
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  const server = createServer();
  server.on('upgrade', (req, socket, head) => {
    const upstream = new WebSocket(target, { perMessageDeflate: false });
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
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    process.stdout.write(`ws://127.0.0.1:${port}/\n`);
  });
  process.stdin.on('close', () => process.exit(0));
  process.stdin.resume();
}

/** Every connection gets its own TCP connection to the target's port, and bytes flow both ways untouched. */
function splice(target: string): void {
  const url = new URL(target);
  const server = createNetServer((client) => {
    const upstream = connect(Number(url.port), url.hostname);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.pipe(upstream).pipe(client);
    const end = () => (client.destroy(), upstream.destroy());
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    process.stdout.write(`ws://127.0.0.1:${port}${url.pathname}\n`);
  });
  process.stdin.on('close', () => process.exit(0));
  process.stdin.resume();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) (process.argv[3] === 'tcp' ? splice : serve)(process.argv[2]!);
