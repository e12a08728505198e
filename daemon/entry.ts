import { beginStartUp } from './lib/start-up-tiering.js';

// Before the daemon's modules load: see start-up-tiering.ts.
beginStartUp();
const { log, runDaemon } = await import('./main.js');

// The background form that `rbrowse daemon start` spawns: node dist/daemon.js [--port N] [--host H]
const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const port = arg('--port');
runDaemon({ host: arg('--host'), port: port === undefined ? undefined : Number(port), standby: arg('--standby') }).catch((err) => {
  log('daemon failed to start', { error: (err as Error).message });
  process.exit(1);
});
