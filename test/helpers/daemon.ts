import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Kernel from '@onkernel/sdk';
import { execa } from 'execa';
import WebSocket from 'ws';
import { readFile } from 'node:fs/promises';
import { findMarkedProcesses, isAlive } from '../../daemon/lib/procs.js';
import { homeDiskDirs } from '../../daemon/box/boxes.js';

export const ROOT = new URL('../../', import.meta.url).pathname;
export const CLI = join(ROOT, 'bin', 'rbrowse');

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface TestDaemon {
  home: string;
  baseUrl: string;
  apiKey: string;
  env: Record<string, string>;
  /** Runs the CLI binary as a user would; never throws on a non-zero exit. */
  cli(args: string[], opts?: { env?: Record<string, string>; cwd?: string }): Promise<CliResult>;
  /** One HTTP call with the default org's key (or `key`, or none when key is null). */
  api<T = any>(method: string, path: string, body?: unknown, key?: string | null): Promise<ApiResponse<T>>;
  stop(): Promise<void>;
}

/** The environment of a CLI started for a test: its own home, a free port, no Kernel settings leaking in. */
export function cleanEnv(home: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    // Nor the settings `npm test` hands its scripts (npm_config_*, npm_lifecycle_*): a user's shell has none.
    if (v !== undefined && !k.startsWith('KERNEL_') && !k.startsWith('RBROWSE_') && !/^npm_/i.test(k)) env[k] = v;
  }
  // No standby browsers or spare boxes unless a test asks (RBROWSE_STANDBY, RBROWSE_SPARE_BOXES,
  // RBROWSE_APP_SPARE_BOXES in `env`): most tests count the processes and directories of a home,
  // and those would be among them. Nor bursts: a test that asks for standby counts exactly the browsers its set keeps.
  return {
    ...env,
    RBROWSE_HOME: home,
    RBROWSE_PORT: '0',
    RBROWSE_STANDBY: '0',
    RBROWSE_STANDBY_BURST_MB: '0',
    RBROWSE_SPARE_BOXES: '0',
    RBROWSE_APP_SPARE_BOXES: '0',
    NO_COLOR: '1',
  };
}

export async function callApi<T = any>(baseUrl: string, method: string, path: string, body?: unknown, key?: string | null): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  let payload: string | undefined;
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body: payload });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/** Starts a real daemon through the CLI in a fresh temporary RBROWSE_HOME (`env`: extra settings). */
export async function startTestDaemon(opts: { env?: Record<string, string> } = {}): Promise<TestDaemon> {
  const home = await mkdtemp(join(tmpdir(), 'rbrowse-test-'));
  const env = { ...cleanEnv(home), ...opts.env };
  const cli = async (args: string[], opts: { env?: Record<string, string>; cwd?: string } = {}): Promise<CliResult> => {
    const r = await execa(CLI, args, {
      env: { ...env, ...opts.env },
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
      extendEnv: false,
      reject: false,
      stdin: 'ignore',
      timeout: 120_000,
    });
    return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
  };
  const started = await cli(['daemon', 'start']);
  if (started.exitCode !== 0) {
    // A daemon that never started leaves only its log, whose tail the error below quotes.
    await rm(home, { recursive: true, force: true });
    throw new Error(`daemon start failed: ${started.stderr}`);
  }
  const baseUrl = started.stdout.trim();
  const apiKey = (await cli(['auth', 'token'])).stdout.trim();
  const daemon: TestDaemon = {
    home,
    baseUrl,
    apiKey,
    env,
    cli,
    // Reads daemon.baseUrl on each call: a test that restarts the daemon updates it.
    api: (method, path, body, key) => callApi(daemon.baseUrl, method, path, body, key === undefined ? apiKey : key),
    async stop() {
      await cli(['daemon', 'stop']);
      // A process already ending as the stop returns is not left behind: one that is still
      // there after a few seconds is.
      await waitFor(async () => (await findMarkedProcesses(home)).length === 0, 5000, "the daemon's processes to end").catch(() => {});
      const left = await findMarkedProcesses(home);
      if (left.length) {
        for (const pid of left) process.kill(pid, 'SIGKILL');
        throw new Error(`processes left behind by the daemon of ${home}: ${left.join(', ')}`);
      }
      // RBROWSE_TEST_KEEP=1 keeps a test daemon's home (its log) for a look after the run.
      if (process.env.RBROWSE_TEST_KEEP !== '1') {
        // The disks the daemon keeps across its restarts (apps' images) go with the home.
        for (const dir of await homeDiskDirs(home)) {
          await execa('umount', ['--lazy', dir], { reject: false });
          await rm(dir, { recursive: true, force: true });
        }
        await rm(home, { recursive: true, force: true });
      }
    },
  };
  return daemon;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The pid of a test daemon, as `rbrowse daemon status --json` reports it. */
export async function daemonPid(d: TestDaemon): Promise<number> {
  const status = JSON.parse((await d.cli(['daemon', 'status', '--json'])).stdout);
  if (!status.running) throw new Error(`the daemon of ${d.home} is not running`);
  return status.pid;
}

/** kill -9 of a test daemon (its browsers outlive it); resolves once it is gone. */
export async function killDaemonHard(d: TestDaemon): Promise<void> {
  const pid = await daemonPid(d);
  process.kill(pid, 'SIGKILL');
  await waitFor(() => !isAlive(pid), 10_000, 'the daemon to die');
}

/**
 * How long a test waits for a browser or box started ahead of demand (a standby browser, a pool's
 * fill, a spare box): those start at the lowest CPU priority so that they never slow a live session,
 * and on a machine kept busy by other test files that can take minutes (over 60 s has been seen).
 */
export const BACKGROUND_START_MS = 240_000;

/** Polls until check() is truthy; fails after timeoutMs. */
export async function waitFor<T>(check: () => Promise<T> | T, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(200);
  }
}

/** Opens a raw websocket; resolves with the HTTP status of a refused upgrade, or 101 once open. */
export function upgradeStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.once('error', () => resolve(-1));
  });
}

/** Waits until no process of a session (or of the whole home) runs: an ended session stops them in the background. */
export async function processesGone(home: string, marker?: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(async () => (await findMarkedProcesses(home, marker)).length === 0, timeoutMs, `the processes of ${marker ?? home} to be gone`);
}

/** Waits until an ended session's background teardown is over: its directory (removed last) is gone. */
export async function tornDown(d: TestDaemon, id: string, timeoutMs = 30_000): Promise<void> {
  await waitFor(() => !existsSync(join(d.home, 'sessions', id)), timeoutMs, `session ${id} to be torn down`);
}

/** A test daemon and an official SDK client of its default organization (no retries: a test sees each answer). */
export async function startSdkDaemon(opts: { env?: Record<string, string> } = {}): Promise<{ d: TestDaemon; kernel: Kernel }> {
  const d = await startTestDaemon(opts);
  return { d, kernel: new Kernel({ apiKey: d.apiKey, baseURL: d.baseUrl, maxRetries: 0, timeout: 120_000 }) };
}

/** The processes of a session (found by its marker) whose command name is `comm`. */
export async function sessionProcessesNamed(home: string, sessionId: string, comm: string): Promise<number[]> {
  const pids = await findMarkedProcesses(home, sessionId);
  const names = await Promise.all(pids.map((pid) => readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')));
  return pids.filter((_, i) => names[i]!.trim() === comm);
}

/** A session object (or a list of them) without `usage`, whose uptime grows between two reads of one session. */
export function sansUsage<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v) => sansUsage(v)) as T;
  if (!value || typeof value !== 'object') return value;
  const { usage: _usage, ...rest } = value as Record<string, unknown>;
  return rest as T;
}
