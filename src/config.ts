import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 7331;

/** Every file rbrowse keeps lives below one directory, so two daemons with different homes never meet. */
export function resolveHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.RBROWSE_HOME || join(homedir(), '.rbrowse'));
}

export function homePaths(home: string) {
  const credentials = join(home, 'credentials');
  return {
    home,
    stateFile: join(home, 'state.json'),
    daemonFile: join(home, 'daemon.json'),
    lockFile: join(home, 'daemon.lock'),
    logsDir: join(home, 'logs'),
    daemonLog: join(home, 'logs', 'daemon.log'),
    sessionsDir: join(home, 'sessions'),
    /** Ended sessions and finished invocations, one JSON-lines file each (daemon/lib/state/history.ts). */
    historyDir: join(home, 'history'),
    profilesDir: join(home, 'profiles'),
    extensionsDir: join(home, 'extensions'),
    /** Deployed app code, one directory per deployment. */
    appsDir: join(home, 'apps'),
    /** Replays (mp4 and a JSON record each), one directory per session; they outlive it. */
    replaysDir: join(home, 'replays'),
    telemetryDir: join(home, 'telemetry'),
    credentialsDir: credentials,
    apiKeyFile: join(credentials, 'api-key'),
    adminTokenFile: join(credentials, 'admin-token'),
    jwtSecretFile: join(credentials, 'jwt-secret'),
  };
}
export type HomePaths = ReturnType<typeof homePaths>;

export function defaultPort(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.RBROWSE_PORT;
  if (raw === undefined || raw === '') return DEFAULT_PORT;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`RBROWSE_PORT is not a port: ${raw}`);
  return port;
}

/** What `daemon.json` says about a running daemon; written once it listens. */
export interface DaemonInfo {
  pid: number;
  host: string;
  port: number;
  base_url: string;
  started_at: string;
  version: string;
  /** What an operator must hear of this start (state recovered from its last good copy). */
  notices?: string[];
}

export function baseUrlFor(host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}
