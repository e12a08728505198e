/**
 * TCP connections made inside a box's network namespace and handed to this process, as the
 * daemon gets its own from a box's agent: a bench process that stays in the host's namespace can
 * then reach a session's DevTools port directly, and so time every path to it side by side.
 * `boxConnector(netns)` starts this file under nsenter; the child connects and sends each
 * connected socket back over its IPC channel.
 */
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

export interface BoxConnector {
  /** A socket connected to 127.0.0.1:port inside the box. */
  connect(port: number): Promise<Socket>;
  stop(): void;
}

interface Reply {
  id: number;
  error?: string;
}

export async function boxConnector(netns: string): Promise<BoxConnector> {
  // execArgv carries tsx's loader, which the child needs to run a .ts file.
  const child = spawn('nsenter', [`--net=${netns}`, '--', process.execPath, ...process.execArgv, fileURLToPath(import.meta.url)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting = new Map<number, { resolve: (s: Socket) => void; reject: (e: Error) => void }>();
  child.on('message', (reply: Reply, socket?: Socket) => {
    const w = waiting.get(reply.id);
    waiting.delete(reply.id);
    if (reply.error || !socket) w?.reject(new Error(`connect inside the box: ${reply.error ?? 'no socket'}`));
    else w?.resolve(socket);
  });
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the box connector exited with ${code} (nsenter needs root)`)));
    child.once('message', () => resolve());
  });
  let next = 0;
  return {
    connect: (port) =>
      new Promise((resolve, reject) => {
        const id = ++next;
        waiting.set(id, { resolve, reject });
        child.send({ id, port });
      }),
    stop: () => void child.kill('SIGKILL'),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.on('message', ({ id, port }: { id: number; port: number }) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('error', (err) => process.send!({ id, error: err.message }));
    socket.once('connect', () => process.send!({ id }, socket, {}, () => socket.destroy()));
  });
  process.on('disconnect', () => process.exit(0));
  process.send!({ ready: true });
}
