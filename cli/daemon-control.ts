import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { exchange } from '../src/http-exchange.js';
import { DEFAULT_HOST, defaultPort, homePaths, resolveHome, type DaemonInfo } from '../src/config.js';
import { isAlive, sleep } from '../src/pids.js';

export const paths = () => homePaths(resolveHome());

export function readDaemonInfo(): DaemonInfo | null {
  try {
    const info = JSON.parse(readFileSync(paths().daemonFile, 'utf8')) as DaemonInfo;
    return isAlive(info.pid) ? info : null;
  } catch {
    return null;
  }
}

/**
 * How long a daemon whose pid is alive gets to answer /health. On a crowded machine an answer
 * can take seconds; taken for a daemon gone, a slow one made the next command start a second
 * daemon, which finds the first holding the home, and `daemon status` say it was not running.
 */
const HEALTH_TIMEOUT_MS = 15_000;

export async function healthy(baseUrl: string, timeoutMs = HEALTH_TIMEOUT_MS): Promise<boolean> {
  try {
    return (await exchange(new URL('/health', baseUrl), { method: 'GET', headers: {}, timeoutMs })).status === 200;
  } catch {
    return false;
  }
}

/** The running daemon of this RBROWSE_HOME, when it answers /health. */
export async function runningDaemon(): Promise<DaemonInfo | null> {
  const info = readDaemonInfo();
  return info && (await healthy(info.base_url)) ? info : null;
}

function logTail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/**
 * V8 settings of the background daemon. A young generation of 1 MiB semi-spaces (V8's default is
 * 16) keeps about 25 MiB of mostly empty nursery out of an idle daemon's RSS. The daemon's work is
 * many small short-lived objects, which smaller, more frequent scavenges suit; with it the CDP
 * gateway still measures at the TCP-splice floor in `npm run bench`.
 */
const DAEMON_NODE_FLAGS = ['--max-semi-space-size=1'];

/**
 * glibc malloc settings of the background daemon (a user's own values win). With glibc's defaults
 * the daemon's RSS grew by ~2.5 MiB every 20-odd sessions created and deleted, with a flat
 * JavaScript heap: the 64 KiB socket read buffers and other freed blocks stayed in fragmented
 * heaps. Blocks of 64 KiB and more mapped on their own (and so returned when freed), two arenas
 * and trimming above 128 KiB keep it flat over repeated load rounds (npm run bench); measured CDP
 * round trips were unchanged.
 */
const DAEMON_MALLOC_ENV: Record<string, string> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '65536',
  MALLOC_TRIM_THRESHOLD_: '131072',
};

export interface DaemonStartOptions {
  host?: string;
  port?: number;
  /** The standby set, as `--standby` takes it (src/standby.ts). */
  standby?: string;
}

/**
 * Why a start failed, in one line where the log says (its JSON lines are the daemon's, not a
 * person's): a taken port names the port and what to do; else the log's tail.
 */
export function startFailure(log: string, exitCode: number | null, sinceMs: number): string {
  let error: string | undefined;
  for (const line of log.split('\n')) {
    try {
      const entry = JSON.parse(line) as { time?: string; msg?: string; error?: string };
      // The log is appended to across starts: only this start's own lines count.
      if (entry.msg === 'daemon failed to start' && Date.parse(entry.time ?? '') >= sinceMs) error = entry.error;
    } catch {
      // Not one of the daemon's JSON lines (Node's own output): kept in the tail below.
    }
  }
  const taken = error && /EADDRINUSE.*?:(\d+)\s*$/.exec(error);
  if (taken) return `port ${taken[1]} is taken by another program: set RBROWSE_PORT to a free port (0: any), or stop what listens there`;
  if (error) return `the daemon could not start: ${error}`;
  return `the daemon exited during start (code ${exitCode}):\n${log}`;
}

/** How long a background start may take before the command gives up on it. */
const START_TIMEOUT_MS = 90_000;

/**
 * Starts the daemon in the background (or finds it running) and waits until it answers /health.
 * Its output goes to logs/daemon.log, whose tail explains a failed start.
 */
export async function startDaemon(opts: DaemonStartOptions = {}): Promise<DaemonInfo> {
  const running = await runningDaemon();
  if (running) return running;
  const p = paths();
  mkdirSync(p.logsDir, { recursive: true, mode: 0o700 });
  const logFd = openSync(p.daemonLog, 'a', 0o600);
  // Whole milliseconds, as the log's times are.
  const startedAt = Math.floor(Date.now());
  const entry = fileURLToPath(new URL('./daemon.js', import.meta.url));
  const child = spawn(
    process.execPath,
    [
      ...DAEMON_NODE_FLAGS,
      entry,
      '--host',
      opts.host ?? DEFAULT_HOST,
      '--port',
      String(opts.port ?? defaultPort()),
      ...(opts.standby !== undefined ? ['--standby', opts.standby] : []),
    ],
    { detached: true, stdio: ['ignore', logFd, logFd], env: { ...DAEMON_MALLOC_ENV, ...process.env, RBROWSE_HOME: p.home } },
  );
  closeSync(logFd);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  child.unref();
  // A start reaps what a crashed daemon left first (its launcher may take 20 s to close its
  // browsers), and a crowded machine slows all of it: a start that has not failed is waited for.
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exited !== undefined) {
      throw new Error(startFailure(logTail(p.daemonLog), exited, startedAt));
    }
    const info = readDaemonInfo();
    if (info && info.pid === child.pid && (await healthy(info.base_url))) return info;
    await sleep(40);
  }
  throw new Error(`the daemon did not answer within ${START_TIMEOUT_MS / 1000} s:\n${logTail(p.daemonLog)}`);
}

/** Asks the daemon to stop (SIGTERM: it ends every session gracefully) and waits until it is gone. */
export async function stopDaemon(timeoutMs = 60_000): Promise<{ wasRunning: boolean; pid?: number }> {
  const lock = Number(readFileSafe(paths().lockFile).trim());
  const info = readDaemonInfo();
  const pid = info?.pid ?? (lock && isAlive(lock) ? lock : undefined);
  if (!pid) return { wasRunning: false };
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) throw new Error(`daemon pid ${pid} did not stop within ${timeoutMs / 1000} s`);
    await sleep(50);
  }
  return { wasRunning: true, pid };
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
