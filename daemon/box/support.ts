import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { which } from '../../src/system-deps.js';
import { BoxCgroups, limitsFromEnv, type BoxLimits, type LimitSupport } from './limits.js';
import { uidBaseFromEnv } from './uids.js';

/** What this host lets boxes have (rbrowse doctor, /health, the daemon's start notices). */
export interface BoxSupport {
  /** bubblewrap can make a box's namespaces here (it needs unprivileged user namespaces). */
  namespaces: { ok: boolean; why?: string };
  /** Per-box host uids (a root daemon) or the daemon's own uid for every box. */
  uids: 'per-box' | 'shared';
  network: { pasta: boolean; why?: string };
  hostLoopback: boolean;
  limits: LimitSupport;
  sessionLimits: BoxLimits;
  appLimits: BoxLimits;
}

/** Whether the host has a route out (pasta needs an interface with a default route to copy). */
export function hasDefaultRoute(): boolean {
  const v4 = existsSync('/proc/net/route') ? readFileSync('/proc/net/route', 'utf8') : '';
  const v6 = existsSync('/proc/net/ipv6_route') ? readFileSync('/proc/net/ipv6_route', 'utf8') : '';
  // IPv4: destination 00000000; IPv6: destination ::/0.
  return /^\S+\s+00000000\s/m.test(v4) || /^0{32} 00 /m.test(v6);
}

/**
 * Whether bubblewrap can make a box here: as the uid a box would run as (a root daemon's first
 * box uid), new user, network, IPC and PID namespaces, and Chromium's own nested one inside.
 */
function probeNamespaces(env: NodeJS.ProcessEnv): { ok: boolean; why?: string } {
  const bwrap = which('bwrap', env);
  if (!bwrap) return { ok: false, why: 'bubblewrap is not installed (apt-get install bubblewrap)' };
  const uid = uidBaseFromEnv(env);
  const asBox = process.getuid?.() === 0 ? ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--'] : [];
  const argv = [
    ...asBox,
    bwrap,
    '--unshare-user',
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-pid',
    '--ro-bind',
    '/',
    '/',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--',
    'unshare',
    '--user',
    '--pid',
    '--net',
    '--fork',
    'true',
  ];
  try {
    execFileSync(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
    return { ok: true };
  } catch (err) {
    const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim();
    return {
      ok: false,
      why: `an unprivileged user cannot create user namespaces here (${stderr || (err as Error).message}): allow them with sysctl -w kernel.unprivileged_userns_clone=1 (Debian) or kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04+)`,
    };
  }
}

export async function detectBoxSupport(home: string, env: NodeJS.ProcessEnv = process.env): Promise<{ support: BoxSupport; cgroups: BoxCgroups }> {
  const root = process.getuid?.() === 0;
  const cgroups = await BoxCgroups.detect(home, { root });
  const network =
    env.RBROWSE_BOX_NETWORK === 'off'
      ? { pasta: false, why: 'RBROWSE_BOX_NETWORK=off' }
      : !which('pasta', env)
        ? { pasta: false, why: "pasta is not installed (apt-get install passt): boxes reach only the host's loopback" }
        : !hasDefaultRoute()
          ? { pasta: false, why: "the host has no default route (offline): boxes reach only the host's loopback" }
          : { pasta: true };
  const support: BoxSupport = {
    namespaces: probeNamespaces(env),
    uids: root ? 'per-box' : 'shared',
    network,
    hostLoopback: env.RBROWSE_HOST_LOOPBACK !== 'off',
    limits: cgroups.support,
    sessionLimits: limitsFromEnv('RBROWSE_SESSION', env),
    appLimits: limitsFromEnv('RBROWSE_APP', env),
  };
  return { support, cgroups };
}
