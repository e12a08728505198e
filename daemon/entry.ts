/**
 * The daemon's one way in from outside it: the background process (daemon/start.ts), the CLI's
 * `daemon start --foreground` and `doctor`. Everything behind it loads on call, so a command that
 * imports this module carries none of the daemon.
 */
import type { RunOptions } from './main.js';
import type { BoxSupport } from './box/support.js';
import type { MemoryGrants } from './box/limits.js';
import { beginStartUp } from './lib/start-up-tiering.js';

export type { RunOptions, BoxSupport };

/** Runs the daemon in this process until it is stopped. */
export async function runDaemon(opts: RunOptions): Promise<void> {
  // Before the daemon's modules load: see start-up-tiering.ts.
  beginStartUp();
  const main = await import('./main.js');
  await main.runDaemon(opts);
}

/** The background form that `rbrowse daemon start` spawns: node dist/daemon.js [--port N] [--host H] [--standby S]. */
export async function runDaemonFromArgv(argv: string[]): Promise<void> {
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i > 0 ? argv[i + 1] : undefined;
  };
  const port = arg('--port');
  try {
    await runDaemon({ host: arg('--host'), port: port === undefined ? undefined : Number(port), standby: arg('--standby') });
  } catch (err) {
    (await import('./main.js')).log('daemon failed to start', { error: (err as Error).message });
    process.exit(1);
  }
}

/** What this host lets a daemon give its boxes, as `rbrowse doctor` reports it. */
export async function hostSupport(home: string): Promise<{ support: BoxSupport; machineBytes: number; grants: MemoryGrants }> {
  const [{ detectBoxSupport }, { boxesMemoryBytes, memoryGrantsFromEnv }] = await Promise.all([
    import('./box/support.js'),
    import('./box/limits.js'),
  ]);
  const { support } = await detectBoxSupport(home);
  const machineBytes = boxesMemoryBytes();
  return { support, machineBytes, grants: memoryGrantsFromEnv(machineBytes) };
}
