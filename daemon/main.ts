import { mkdirSync } from 'node:fs';
import { open, readFile, rm, writeFile } from 'node:fs/promises';
import { DEFAULT_HOST, defaultPort, homePaths, resolveHome, type DaemonInfo } from '../src/config.js';
import { VERSION } from '../src/version.js';
import { createDaemon } from './app.js';
import { parseBytes } from './lib/bytes.js';
import { closeInheritedFds } from './lib/inherited-fds.js';
import { rotateLogWhenLarge } from './lib/log-rotation.js';
import { isAlive } from './lib/procs.js';
import { resolveChromium, resolveHeadlessShell } from '../src/system-deps.js';
import { parseStandby } from '../src/standby.js';
import { endStartUp } from './lib/start-up-tiering.js';

export interface RunOptions {
  host?: string;
  port?: number;
  /** The standby set; RBROWSE_STANDBY, else src/standby.ts's default. */
  standby?: string;
}

/** One JSON line per event on stderr: the foreground log, or logs/daemon.log when started in the background. */
export function log(msg: string, extra?: object): void {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), msg, ...extra })}\n`);
}

/** One daemon per home: the lock file names the holder, and a stale lock (dead pid) is taken over. */
async function takeLock(lockFile: string): Promise<void> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fh = await open(lockFile, 'wx', 0o600);
      await fh.writeFile(String(process.pid));
      await fh.close();
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number((await readFile(lockFile, 'utf8').catch(() => '')).trim());
      if (holder && holder !== process.pid && isAlive(holder)) {
        throw new Error(`another rbrowse daemon (pid ${holder}) is running for this RBROWSE_HOME`);
      }
      await rm(lockFile, { force: true });
    }
  }
  throw new Error('could not take the daemon lock');
}

export async function runDaemon(opts: RunOptions = {}): Promise<void> {
  // Before anything is started: what the daemon's starter left open must reach no box.
  closeInheritedFds(log);
  const home = resolveHome();
  const paths = homePaths(home);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  await takeLock(paths.lockFile);
  const host = opts.host ?? DEFAULT_HOST;
  const port = opts.port ?? defaultPort();
  let daemon: Awaited<ReturnType<typeof createDaemon>>;
  try {
    const standby = parseStandby(opts.standby ?? process.env.RBROWSE_STANDBY);
    const headlessShellPath = resolveHeadlessShell();
    daemon = await createDaemon({
      home,
      host,
      port,
      chromiumPath: resolveChromium(),
      ...(headlessShellPath ? { headlessShellPath } : {}),
      standby,
      log,
    });
    await daemon.listen();
  } catch (err) {
    await rm(paths.lockFile, { force: true });
    throw err;
  }
  const info: DaemonInfo = {
    pid: process.pid,
    host,
    port: Number(new URL(daemon.baseUrl).port),
    base_url: daemon.baseUrl,
    started_at: new Date().toISOString(),
    version: VERSION,
    ...(daemon.notices.length ? { notices: daemon.notices } : {}),
  };
  await writeFile(paths.daemonFile, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
  log('daemon listening', { base_url: daemon.baseUrl, home, pid: process.pid });
  endStartUp();
  rotateLogWhenLarge(paths.daemonLog, process.env.RBROWSE_LOG_MAX ? parseBytes(process.env.RBROWSE_LOG_MAX, 'RBROWSE_LOG_MAX') : 64 * 1024 ** 2, log);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log('daemon stopping', { signal });
    try {
      await daemon.close();
    } finally {
      await rm(paths.daemonFile, { force: true });
      await rm(paths.lockFile, { force: true });
      log('daemon stopped');
      process.exit(0);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => void stop('SIGHUP'));
  process.on('uncaughtException', (err) => {
    // A bug in one request must not take every session down with it.
    log('uncaught exception', { error: String(err), stack: err.stack });
  });
  process.on('unhandledRejection', (err) => log('unhandled rejection', { error: String(err) }));
}
