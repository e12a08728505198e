import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import type { BoxSpec } from './launcher.js';
import type { BoxLimits } from './limits.js';
import type { BoxUids } from './uids.js';

/** Where rbrowse's own files (its Node, the agent, the runners and their packages) are inside every box. */
export const BOX_RUNTIME = '/opt/rbrowse';
/** rbrowse's Node (24) inside boxes: first on an app's PATH as `node`, so npm and its scripts run on it. */
export const BOX_BIN = `${BOX_RUNTIME}/bin`;
export const BOX_NODE = `${BOX_BIN}/node`;
/** Kernel's Python SDK as rbrowse provides it to Python apps (on their PYTHONPATH). */
export const BOX_PYTHON_SDK = `${BOX_RUNTIME}/python`;
/** Where an app's code is inside its boxes. */
export const BOX_APP = '/app';
/** The box's user: uid and gid 1000 inside, named as on Kernel's machines. */
export const BOX_USER = { name: 'kernel', uid: 1000, gid: 1000, home: '/home/kernel' } as const;
/**
 * Capabilities the agent keeps, in the box's user namespace only (see agent.mjs): to start
 * programs as the box's user (SETUID, SETGID; libuv changes a child's directory before its uid,
 * so DAC_READ_SEARCH to enter the user's home), to signal them (KILL), and to listen on the
 * host's low ports inside (NET_BIND_SERVICE). A program it starts as the user has none of them.
 */
const AGENT_CAPS = ['CAP_SETUID', 'CAP_SETGID', 'CAP_KILL', 'CAP_NET_BIND_SERVICE', 'CAP_DAC_READ_SEARCH'];

/**
 * What of the host's /etc a box sees: what programs, libraries, fonts and TLS need, read-only.
 * Users, groups, hosts and the resolver are the box's own (written below); nothing else of the
 * host's configuration (its users, keys, services) is there.
 */
const ETC_ALLOWED = [
  'alternatives',
  'ca-certificates',
  'ca-certificates.conf',
  'chromium.d',
  'fonts',
  'gai.conf',
  'host.conf',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'mime.types',
  'magic',
  'magic.mime',
  'os-release',
  'debian_version',
  'protocols',
  'services',
  'ssl',
  'pki',
  'xdg',
  'X11',
  'gtk-3.0',
  'dconf',
  'locale.alias',
  'inputrc',
  'bash.bashrc',
  'profile',
  'python3',
  'java-17-openjdk',
  'ImageMagick-6',
];
/**
 * Chromium's configuration: the host's, read-only, except its managed policies, which are the
 * session's own directory (on its disk), where a create's `chrome_policy` is written; the host's
 * managed policy files are bound into it.
 */
const CHROMIUM_ETC = '/etc/chromium';
export const MANAGED_POLICIES = `${CHROMIUM_ETC}/policies/managed`;

/** The host's /etc/chromium entries a box sees: all but its policies, of which only the recommended ones. */
function hostChromiumEtc(): string[] {
  const entries = readdirOr(CHROMIUM_ETC).filter((e) => e !== 'policies');
  return existsSync(`${CHROMIUM_ETC}/policies/recommended`) ? [...entries, 'policies/recommended'] : entries;
}

function hostManagedPolicies(): string[] {
  return readdirOr(MANAGED_POLICIES).filter((f) => f.endsWith('.json') && f !== SESSION_POLICY_FILE && f !== PROXY_CA_POLICY_FILE);
}

/** The file a session's chrome_policy is written to, in MANAGED_POLICIES. */
export const SESSION_POLICY_FILE = 'rbrowse.json';
/** The file holding the CA certificates of a session's proxy (its CACertificates policy), in MANAGED_POLICIES. */
export const PROXY_CA_POLICY_FILE = 'rbrowse-proxy-ca.json';

function readdirOr(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Read-only outside /usr and /etc: caches that make fonts and programs start fast. */
const OTHER_ALLOWED = ['/var/cache/fontconfig', '/var/lib/dbus/machine-id'];
/** The merged-/usr links of a Debian root (real directories on older systems, bound as they are then). */
const ROOT_LINKS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** The directories above the packages' mount points, below /opt (/opt/node_modules, a scope's), parents first. */
function packageParents(packages: [string, string][]): string[] {
  const dirs = new Set<string>();
  for (const [, inside] of packages) {
    const parts = inside.split('/').slice(0, -1);
    for (let i = 3; i <= parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  return [...dirs].filter((d) => d !== BOX_RUNTIME).sort((a, b) => a.length - b.length);
}

/** rbrowse's files a box needs, by their host paths. */
export interface BoxRuntime {
  /** The daemon's Node binary (the project's Node 24). */
  node: string;
  /** The package's daemon/ directory (the agent and the runners, .mjs). */
  daemonDir: string;
  /** The packages the runners import (Playwright, chromium-bidi, tsx, the Kernel SDK for apps): [host directory, directory inside]. */
  packages: [string, string][];
  /** Kernel's Python SDK for Python apps (its src/ and the shim/ that makes it import on Debian's packages), if the package has it. */
  pythonSdk?: string;
}

export interface BoxSpecInput {
  id: string;
  /** Per-box host uids when the daemon is root; else the box is the daemon's own uid (see agent.mjs SINGLE_UID). */
  uids?: BoxUids;
  limits: BoxLimits;
  /**
   * The box's writable directories on the host: `dir` holds home/ and tmp/, a size-capped tmpfs the
   * launcher mounts when `mount` (root), else plain directories the daemon made.
   */
  disk: { dir: string; mount: boolean };
  /** More host directories the box sees: read-only unless `writable` (an app's code, for its install). */
  binds?: { host: string; inside: string; writable?: boolean }[];
  /** More of the host's configuration to show, as data (an app build's npm settings, without credentials). */
  etcFiles?: [string, string][];
  /** Start pasta for outbound traffic (off where the host has no route out). */
  network: { pasta: boolean; dnsForward?: string };
  /** Environment of the outer processes (bubblewrap's), with the home's markers: never seen inside. */
  markers: Record<string, string>;
  /** The resolver lines of the host's /etc/resolv.conf, or a forwarding address for pasta. */
  resolvConf: string;
  runtime: BoxRuntime;
  cgroupProcs: string[];
}

/** The directories of a box's disk: what its home starts with, its /tmp, and (an app's) its code. */
export const DISK_LAYOUT = [
  { path: 'home', mode: 0o700 },
  { path: 'home/user-data', mode: 0o700 },
  // The browser's managed Chrome policies (/etc/chromium/policies/managed): a session's `chrome_policy`.
  { path: 'policies', mode: 0o755 },
  { path: 'home/Downloads', mode: 0o755 },
  { path: 'home/.config', mode: 0o700 },
  { path: 'home/.cache', mode: 0o700 },
  { path: 'home/.local', mode: 0o700 },
  { path: 'home/.local/share', mode: 0o700 },
  // Its user's alone, not sticky and open to all: nobody else is in the box.
  { path: 'tmp', mode: 0o700 },
  { path: 'tmp/.xdg-runtime', mode: 0o700 },
  // An app's code (bound at /app by its build; readable by its invocations, which are other
  // users of the box, and by no one else on the host: each disk is 0700).
  { path: 'app', mode: 0o755 },
];

function rootLinkArgs(): string[] {
  const out: string[] = [];
  for (const p of ROOT_LINKS) {
    const st = lstatSync(p, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isSymbolicLink()) out.push('--symlink', readlinkSync(p), p);
    else out.push('--ro-bind', p, p);
  }
  return out;
}

/** The host's resolver as the box should use it; a loopback resolver (systemd-resolved's) is reached through pasta. */
export function boxResolvConf(dnsForward: string): { text: string; forward?: string } {
  const host = existsSync('/etc/resolv.conf') ? readFileSync('/etc/resolv.conf', 'utf8') : '';
  const servers = [...host.matchAll(/^\s*nameserver\s+(\S+)/gm)].map((m) => m[1]!);
  const usable = servers.filter((s) => !/^(127\.|::1$)/.test(s));
  if (usable.length) return { text: usable.map((s) => `nameserver ${s}\n`).join('') + (/^\s*search .*$/m.exec(host)?.[0] ?? '') };
  return { text: `nameserver ${dnsForward}\n`, forward: dnsForward };
}

/**
 * Everything the launcher needs to start one box: a user namespace whose maps the launcher writes
 * (two host uids: the agent's as root inside, the user's as 1000), new network, IPC, PID, UTS and
 * mount namespaces, and an allow-list view of the host: /usr and a few of /etc read-only, rbrowse's
 * runtime at /opt/rbrowse, the box's own disk at /home/kernel and /tmp, a sized /dev/shm. bubblewrap
 * reads its arguments from a pipe, so the box's init (whose command line any process in the box can
 * read) shows no host path.
 */
export function boxSpec(input: BoxSpecInput): BoxSpec {
  const { uids, limits } = input;
  const files: string[] = [];
  const bindFds: string[] = [];
  // fds: 7.. the data files, then the bind descriptors (see launcher.mjs).
  const dataFile = (content: string) => {
    files.push(content);
    return String(6 + files.length);
  };
  const single = !uids;
  const passwd = `root:x:0:0:root:/root:/usr/sbin/nologin\n${BOX_USER.name}:x:${BOX_USER.uid}:${BOX_USER.gid}:${BOX_USER.name}:${BOX_USER.home}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`;
  const group = `root:x:0:\ntty:x:5:\n${BOX_USER.name}:x:${BOX_USER.gid}:\nnogroup:x:65534:\n`;
  const hosts = '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tkernel\n';
  const nsswitch = 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n';
  const etcFiles: [string, string][] = [
    ['/etc/passwd', passwd],
    ['/etc/group', group],
    ['/etc/hosts', hosts],
    ['/etc/hostname', 'kernel\n'],
    ['/etc/resolv.conf', input.resolvConf],
    ['/etc/nsswitch.conf', nsswitch],
    ...(input.etcFiles ?? []),
  ];
  const bwrapArgs: string[] = [
    '--unshare-user',
    '--userns-block-fd',
    '4',
    '--info-fd',
    '5',
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-pid',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    'kernel',
    '--die-with-parent',
    ...AGENT_CAPS.flatMap((c) => ['--cap-add', c]),
    '--ro-bind',
    '/usr',
    '/usr',
    ...rootLinkArgs(),
    // bubblewrap makes directories and data files 0700 and 0600 unless told otherwise.
    ...[
      '/etc',
      CHROMIUM_ETC,
      `${CHROMIUM_ETC}/policies`,
      '/opt',
      BOX_RUNTIME,
      BOX_BIN,
      ...packageParents(input.runtime.packages),
      '/home',
      '/var',
      '/var/cache',
      '/var/lib',
      '/var/lib/dbus',
    ].flatMap((d) => ['--perms', '0755', '--dir', d]),
    ...ETC_ALLOWED.flatMap((e) => ['--ro-bind-try', `/etc/${e}`, `/etc/${e}`]),
    ...hostChromiumEtc().flatMap((e) => ['--ro-bind-try', `${CHROMIUM_ETC}/${e}`, `${CHROMIUM_ETC}/${e}`]),
    // Directories of their own for data files below /etc (an app build's npm settings in /etc/npm).
    ...[...new Set(etcFiles.map(([dest]) => dest.slice(0, dest.lastIndexOf('/'))))]
      .filter((d) => d !== '/etc')
      .flatMap((d) => ['--perms', '0755', '--dir', d]),
    ...etcFiles.flatMap(([dest, content]) => ['--perms', '0644', '--ro-bind-data', dataFile(content), dest]),
    ...OTHER_ALLOWED.flatMap((p) => ['--ro-bind-try', p, p]),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(limits.shmBytes),
    '--tmpfs',
    '/dev/shm',
    '--chmod',
    '1777',
    '/dev/shm',
    '--tmpfs',
    '/run',
    '--symlink',
    '/tmp',
    '/var/tmp',
  ];
  const bindFd = (host: string, inside: string, writable: boolean) => {
    bindFds.push(host);
    bwrapArgs.push(writable ? '--bind-fd' : '--ro-bind-fd', String(6 + files.length + bindFds.length), inside);
  };
  // Data files take fds first: their count is known only once all are listed.
  const pendingBinds: [string, string, boolean][] = [
    [`${input.disk.dir}/home`, BOX_USER.home, true],
    [`${input.disk.dir}/tmp`, '/tmp', true],
    // A disk left by an older daemon (reused to save a crashed session's profile) may have no such directory.
    ...(input.disk.mount || existsSync(`${input.disk.dir}/policies`)
      ? [[`${input.disk.dir}/policies`, MANAGED_POLICIES, true] as [string, string, boolean]]
      : []),
    [realpathSync(input.runtime.node), BOX_NODE, false],
    [input.runtime.daemonDir, `${BOX_RUNTIME}/daemon`, false],
    ...input.runtime.packages.map(([host, inside]): [string, string, boolean] => [host, inside, false]),
    ...(input.runtime.pythonSdk ? [[input.runtime.pythonSdk, BOX_PYTHON_SDK, false] as [string, string, boolean]] : []),
    ...(input.binds ?? []).map((b): [string, string, boolean] => [b.host, b.inside, Boolean(b.writable)]),
  ];
  for (const [host, inside, writable] of pendingBinds) bindFd(host, inside, writable);
  // The host's own managed policies still apply, beside the session's (bound over its directory above).
  for (const f of hostManagedPolicies()) bwrapArgs.push('--ro-bind-try', `${MANAGED_POLICIES}/${f}`, `${MANAGED_POLICIES}/${f}`);
  bwrapArgs.push(
    '--clearenv',
    '--setenv',
    'NODE_CHANNEL_FD',
    '3',
    '--setenv',
    'NODE_CHANNEL_SERIALIZATION_MODE',
    'advanced',
    '--setenv',
    'PATH',
    `${BOX_BIN}:/usr/local/bin:/usr/bin:/bin`,
    '--setenv',
    'RBROWSE_BOX_UID',
    String(BOX_USER.uid),
    '--setenv',
    'RBROWSE_BOX_GID',
    String(BOX_USER.gid),
    ...(single ? ['--setenv', 'RBROWSE_BOX_SINGLE_UID', '1'] : []),
    '--chdir',
    '/',
  );
  const self = { uid: process.getuid!(), gid: process.getgid!() };
  const argv = [
    ...(uids ? ['setpriv', `--reuid=${uids.agent}`, `--regid=${uids.agent}`, `--groups=${uids.group}`, '--'] : []),
    'bwrap',
    '--args',
    '6',
    '--',
    BOX_NODE,
    '--max-semi-space-size=1',
    `${BOX_RUNTIME}/daemon/box/agent.mjs`,
  ];
  const dnsForward = /^nameserver (\S+)$/m.exec(input.resolvConf)?.[1];
  const forwardDns = input.network.dnsForward && dnsForward === input.network.dnsForward;
  return {
    argv,
    bwrapArgs,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...input.markers },
    files,
    bindFds,
    // root inside is the agent, 1000 the box's user; a daemon that is not root maps only itself, as 1000.
    uidMap: uids ? `0 ${uids.agent} 1\n${BOX_USER.uid} ${uids.user} 1\n` : `${BOX_USER.uid} ${self.uid} 1\n`,
    gidMap: uids ? `0 ${uids.agent} 1\n${BOX_USER.gid} ${uids.user} 1\n` : `${BOX_USER.gid} ${self.gid} 1\n`,
    denySetgroups: single,
    cgroupProcs: input.cgroupProcs,
    ...(input.disk.mount && uids
      ? {
          disk: {
            mount: true,
            dir: input.disk.dir,
            bytes: limits.diskBytes,
            uid: uids.user,
            gid: uids.user,
            rootGid: uids.group,
            layout: DISK_LAYOUT,
          },
        }
      : {}),
    ...(input.network.pasta
      ? {
          pasta: {
            command: 'pasta',
            args: [
              ...(uids ? ['--runas', String(uids.agent)] : []),
              '--foreground',
              '--quiet',
              '--config-net',
              // Nothing of the box is reachable from the host, and nothing of the host's loopback
              // through pasta's own port scan: the agent forwards the host's services itself.
              '-t',
              'none',
              '-u',
              'none',
              '-T',
              'none',
              '-U',
              'none',
              ...(forwardDns ? ['--dns-forward', input.network.dnsForward!] : []),
            ],
          },
        }
      : {}),
  };
}
