import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { removeTree } from '../lib/fs-util.js';
import { markedEnv } from '../lib/procs.js';
import { sleep } from '../lib/procs.js';
import { Box, type BoxHost } from './box.js';
import { BOX_APP, boxResolvConf, boxSpec, DISK_LAYOUT, type BoxRuntime } from './box-spec.js';
import { boxRuntime } from './box-runtime.js';
import { HostPorts } from './host-ports.js';
import type { BoxCgroups, BoxLimits } from './limits.js';
import { detectBoxSupport, type BoxSupport } from './support.js';
import { anyProcessOf, UidSlots, type BoxUids } from './uids.js';
import { RateLimitError } from '../../src/errors.js';
import { memoryGrantsFromEnv, type MemoryGrants } from './limits.js';

/** The address a box's resolver is pointed at when the host's own is on loopback (pasta forwards it). */
const DNS_FORWARD = '169.254.1.53';
/**
 * Where a root daemon mounts boxes' disks and makes its runtime reachable: /run/rbrowse is 0711,
 * its entries named after the home and the box. Each disk is its box user's alone (0700): the
 * launcher opens what a box binds and hands bubblewrap the descriptors, so nobody else looks a
 * disk up by its path, and no other local user reaches a session's files or an app's code,
 * whatever ids it knows.
 */
const RUN_DIR = '/run/rbrowse';

export interface BoxesDeps {
  home: string;
  /** Where boxes' disks are when the daemon is not root: <dir>/<box id>/ (plain directories). */
  dir: string;
  host: BoxHost;
  log: (msg: string, extra?: object) => void;
  env?: NodeJS.ProcessEnv;
}

/** What one box is for: a session (with a browser) or an app (its install and actions). */
export interface BoxRequest {
  kind: 'session' | 'app';
  /** The box's id: its session's or invocation's, also its disk's and cgroups' name. */
  id: string;
  /** Host directories it sees besides its own (an app's code). */
  binds?: { host: string; inside: string; writable?: boolean }[];
  /** An existing disk to use instead of a fresh one (a crashed daemon's session, for its profile's save). */
  reuseDisk?: boolean;
  /** The uid slot to take (the one whose uids own a reused disk's files). */
  slot?: number;
  /** An app's code at /app: its own disk's (writable, a build), or another box's kept disk (read-only, an invocation's image). */
  app?: { writable: true } | { image: string };
  /** More files for its /etc (a build's npm settings). */
  etcFiles?: [string, string][];
}

/** Whether any user may look a path up (every directory above it searchable by others). */
function traversable(path: string): boolean {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if (!(statSync(dir).mode & 0o001)) return false;
    if (dir === '/') return true;
  }
}

/**
 * The runtime as boxes can bind it: where the package lies below a directory others cannot search
 * (an install in /root), each of its parts is bind-mounted read-only under /run/rbrowse once.
 */
async function reachableRuntime(runtime: BoxRuntime, tag: string): Promise<{ runtime: BoxRuntime; mounts: string[] }> {
  const hostPaths = [runtime.node, runtime.daemonDir, ...(runtime.pythonSdk ? [runtime.pythonSdk] : []), ...runtime.packages.map(([host]) => host)];
  if (hostPaths.every(traversable)) return { runtime, mounts: [] };
  const dir = join(RUN_DIR, 'runtime', tag);
  const mounts: string[] = [];
  const reachable = async (source: string, name: string): Promise<string> => {
    const target = join(dir, name);
    const isFile = statSync(source).isFile();
    await mkdir(isFile ? dir : target, { recursive: true, mode: 0o755 });
    if (isFile) await execa('touch', [target]);
    await execa('mount', ['--bind', source, target]);
    await execa('mount', ['-o', 'remount,bind,ro', target]);
    mounts.push(target);
    return target;
  };
  const out: BoxRuntime = {
    node: await reachable(runtime.node, 'node'),
    daemonDir: await reachable(runtime.daemonDir, 'daemonDir'),
    packages: [],
  };
  if (runtime.pythonSdk) out.pythonSdk = await reachable(runtime.pythonSdk, 'pythonSdk');
  for (const [i, [host, inside]] of runtime.packages.entries()) out.packages.push([await reachable(host, `package-${i}`), inside]);
  await execa('chmod', ['0711', RUN_DIR, join(RUN_DIR, 'runtime'), dir]);
  return { runtime: out, mounts };
}

/**
 * Makes boxes: the one place that knows how (uids, cgroups, disk, network, the view of the host)
 * and the only one that frees what a box held once it has ended. Built once in the composition root.
 */
export class Boxes {
  private readonly sessionLimits: BoxLimits;
  private readonly appLimits: BoxLimits;
  private readonly root = process.getuid?.() === 0;
  readonly hostPorts: HostPorts;
  /** A short name for this home in the machine-wide /run/rbrowse. */
  private readonly tag: string;
  private readonly live = new Map<string, { box: Box; uids?: BoxUids }>();
  /** The memory each box is granted (its limit), starting or running: what admission adds up. */
  private readonly granted = new Map<string, number>();
  /** What the boxes may be granted in all (see grants). */
  readonly grants: MemoryGrants;
  /** What ended boxes still give back (groups, uids, disks): close() waits for it. */
  private readonly releasing = new Set<Promise<void>>();
  /** Boxes being started: close() waits for them, so none outlives a stopped daemon. */
  private readonly starting = new Set<Promise<unknown>>();
  private closing = false;
  /** Set by a stop past its grace: boxes ending now leave the kernel's leftovers to the next start. */
  private leaving = false;

  private constructor(
    private readonly deps: BoxesDeps,
    private readonly uids: UidSlots | undefined,
    private readonly cgroups: BoxCgroups,
    readonly support: BoxSupport,
    private readonly runtime: BoxRuntime,
    private readonly runtimeMounts: string[],
  ) {
    this.tag = homeTag(deps.home);
    this.sessionLimits = support.sessionLimits;
    this.appLimits = support.appLimits;
    this.grants = memoryGrantsFromEnv(cgroups.parentMemoryBytes);
    this.hostPorts = new HostPorts(support.hostLoopback);
  }

  static async create(deps: BoxesDeps): Promise<Boxes> {
    const env = deps.env ?? process.env;
    const root = process.getuid?.() === 0;
    await mkdir(deps.dir, { recursive: true, mode: 0o700 });
    const { support, cgroups } = await detectBoxSupport(deps.home, env);
    const reachable = root ? await reachableRuntime(boxRuntime(), homeTag(deps.home)) : { runtime: boxRuntime(), mounts: [] };
    if (root) {
      await mkdir(join(RUN_DIR, 'disks'), { recursive: true });
      await execa('chmod', ['0711', RUN_DIR, join(RUN_DIR, 'disks')]);
    }
    return new Boxes(deps, root ? new UidSlots() : undefined, cgroups, support, reachable.runtime, reachable.mounts);
  }

  /** Boxes of this home a crashed daemon left: their processes (a leftover launcher's) and cgroups. */
  async reap(): Promise<void> {
    await this.cgroups.removeAll();
  }

  /** The disk directory of a box (home/ and tmp/ below it). */
  diskDir(id: string): string {
    return this.root ? join(RUN_DIR, 'disks', `${this.tag}-${id}`) : join(this.deps.dir, id);
  }

  start(req: BoxRequest): Promise<Box> {
    if (this.closing) return Promise.reject(new Error('the daemon is stopping'));
    const started = this.startBox(req);
    const tracked = started.catch(() => {});
    this.starting.add(tracked);
    void tracked.finally(() => this.starting.delete(tracked));
    return started;
  }

  private async startBox(req: BoxRequest): Promise<Box> {
    const limits = req.kind === 'session' ? this.sessionLimits : this.appLimits;
    // Refused (429) before anything is made when the machine's memory is all granted already.
    this.grant(req.id, limits.memoryBytes);
    let uids: BoxUids | undefined;
    try {
      uids = await this.uids?.take(req.slot);
    } catch (err) {
      this.granted.delete(req.id);
      throw err;
    }
    const diskDir = this.diskDir(req.id);
    let box: Box | undefined;
    try {
      const procs = await this.cgroups.create(req.id, limits);
      const mount = this.root && !req.reuseDisk;
      if (!this.root && !req.reuseDisk) {
        for (const { path, mode } of DISK_LAYOUT) await mkdir(join(diskDir, path), { recursive: true, mode });
      }
      const resolv = boxResolvConf(DNS_FORWARD);
      const spec = boxSpec({
        id: req.id,
        uids,
        limits,
        disk: { dir: diskDir, mount },
        binds: [
          ...(req.binds ?? []),
          ...(req.app
            ? [
                {
                  host: 'writable' in req.app ? `${diskDir}/app` : `${this.diskDir(req.app.image)}/app`,
                  inside: BOX_APP,
                  writable: 'writable' in req.app,
                },
              ]
            : []),
        ],
        etcFiles: req.etcFiles,
        network: { pasta: this.support.network.pasta, ...(resolv.forward ? { dnsForward: resolv.forward } : {}) },
        markers: markedEnv(this.deps.home, req.id),
        resolvConf: resolv.text,
        runtime: this.runtime,
        cgroupProcs: procs,
      });
      box = await Box.start(this.deps.host, spec, { id: req.id, onForwarded: this.hostPorts.connect, log: this.deps.log });
    } catch (err) {
      await this.release(req.id, uids, false);
      throw err;
    }
    const started = box;
    started.uidSlot = uids?.slot;
    this.live.set(req.id, { box: started, uids });
    const unfollow = this.hostPorts.add(started);
    void started.exited.then((exit) => {
      unfollow();
      // A box stopped with its disk kept (a profile to save, an app's image) frees it later, in dropDisk().
      const releasing = this.release(req.id, uids, exit.stopped && this.keptDisks.has(req.id)).catch((err: unknown) =>
        this.deps.log('box release failed', { box: req.id, error: String(err) }),
      );
      this.releasing.add(releasing);
      void releasing.finally(() => this.releasing.delete(releasing));
    });
    // The host's ports are read once boxes run: the first box after a start must not run its
    // program (an app build's git fetch, say) before it can reach them.
    await this.hostPorts.primed();
    return started;
  }

  /**
   * Counts `bytes` of memory granted to box `id`, or refuses with 429 when the boxes would hold
   * more than the machine may give them (see MemoryGrants).
   */
  private grant(id: string, bytes: number): void {
    let total = bytes;
    for (const [other, n] of this.granted) if (other !== id) total += n;
    if (total > this.grants.maxBytes) {
      const gib = (n: number) => `${(n / 1024 ** 3).toFixed(1)} GiB`;
      throw new RateLimitError(
        `this machine's memory is granted: the sessions and apps running (and the browsers kept ready) hold ${gib(total - bytes)} of memory limits of the ${gib(this.grants.maxBytes)} the daemon may grant (${gib(this.grants.machineBytes)} for boxes x RBROWSE_MEMORY_OVERCOMMIT ${this.grants.overcommit}); end a session, or lower RBROWSE_SESSION_MEMORY`,
        5,
      );
    }
    this.granted.set(id, bytes);
  }

  /** Memory granted to boxes now, and how much they may be granted. */
  grantedMemory(): { grantedBytes: number } & MemoryGrants {
    let grantedBytes = 0;
    for (const n of this.granted.values()) grantedBytes += n;
    return { grantedBytes, ...this.grants };
  }

  private readonly keptDisks = new Set<string>();

  /** Stops a box but keeps its disk mounted (its profile is saved from it next, in another box). */
  async stopKeepingDisk(box: Box): Promise<void> {
    this.keptDisks.add(box.id);
    await box.stop({ keepDisk: true });
  }

  /** Removes a kept disk (and a crashed daemon's) once nothing needs it. */
  async dropDisk(id: string): Promise<void> {
    this.keptDisks.delete(id);
    if (this.root) await unmount(this.diskDir(id));
    await removeTree(this.diskDir(id), this.deps.log);
  }

  /** The disks a crashed daemon left (mounted or not), by box id. */
  async leftoverDisks(): Promise<string[]> {
    if (!this.root) return readdir(this.deps.dir).catch(() => [] as string[]);
    const prefix = `${this.tag}-`;
    return (await readdir(join(RUN_DIR, 'disks')).catch(() => [] as string[])).filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length));
  }

  /** A box's memory use now, as its cgroup counts it (its disk's pages included). */
  /** Changes a running box's memory limit, where the host enforces one. */
  async setMemoryLimit(id: string, bytes: number): Promise<void> {
    const before = this.granted.get(id) ?? 0;
    this.granted.delete(id);
    try {
      this.grant(id, bytes);
    } catch (err) {
      this.granted.set(id, before);
      throw err;
    }
    return this.cgroups.setMemory(id, bytes);
  }

  /** The memory limit boxes of a kind start with. */
  memoryLimitOf(kind: 'session' | 'app'): number {
    return (kind === 'session' ? this.sessionLimits : this.appLimits).memoryBytes;
  }

  memoryUsage(id: string): Promise<number | undefined> {
    return this.cgroups.memoryUsage(id);
  }

  async close(): Promise<void> {
    this.closing = true;
    // A box still starting (a refill's) is counted among the live ones once it has: wait for it.
    while (this.starting.size) await Promise.allSettled([...this.starting]);
    await Promise.all([...this.live.values()].map(({ box }) => box.stop()));
    while (this.releasing.size) await Promise.allSettled([...this.releasing]);
    this.hostPorts.close();
    await this.cgroups.close();
    await this.uids?.freeAll();
    for (const target of this.runtimeMounts) await execa('umount', ['--lazy', target], { reject: false });
  }

  /**
   * A stop past its grace kills every box: from then on, what their end leaves that only time or
   * the kernel clears (a group whose killed processes are not all reaped yet, a disk still
   * mounted, which a remove retries on for seconds) is left to the next start's reaper, as a
   * crashed daemon's is, and the stop completes. A session's disk left so still holds its
   * profile's changes for that start to save.
   */
  leaveLeftovers(): void {
    this.leaving = true;
  }

  /** Once a box has ended: its groups go, then (no process of them left) its uids, then its disk. */
  private async release(id: string, uids: BoxUids | undefined, keepDisk: boolean): Promise<void> {
    this.live.delete(id);
    this.granted.delete(id);
    await this.cgroups.remove(id, { once: this.leaving });
    if (uids) {
      await waitUidsGone(uids);
      await this.uids!.free(uids);
    }
    if (keepDisk || (this.leaving && this.root && (await isMountPoint(this.diskDir(id))))) return;
    await removeTree(this.diskDir(id), this.deps.log);
  }
}

/** Waits (briefly) until no process runs as either uid of a box: the kernel empties a PID namespace asynchronously. */
async function waitUidsGone(uids: BoxUids, timeoutMs = 5000): Promise<void> {
  const wanted = new Set([String(uids.agent), String(uids.user)]);
  const deadline = Date.now() + timeoutMs;
  while ((await anyProcessOf(wanted)) && Date.now() < deadline) await sleep(20);
}

/** Whether dir is where a file system is mounted (its device differs from its parent's). */
async function isMountPoint(dir: string): Promise<boolean> {
  const [own, parent] = await Promise.all([stat(dir).catch(() => undefined), stat(dirname(dir)).catch(() => undefined)]);
  return Boolean(own && parent && own.dev !== parent.dev);
}

async function unmount(dir: string): Promise<void> {
  await execa('umount', ['--lazy', dir], { reject: false });
}

const homeTag = (home: string) => createHash('sha256').update(home).digest('hex').slice(0, 12);

/**
 * The box disks of a home on this machine (a root daemon's, under /run/rbrowse/disks), mounted or
 * not: what a stopped daemon keeps (apps' images, a crashed session's disk for its profile) until
 * its next start. Removing a home for good means unmounting these too.
 */
export async function homeDiskDirs(home: string): Promise<string[]> {
  const prefix = `${homeTag(home)}-`;
  const names = await readdir(join(RUN_DIR, 'disks')).catch(() => [] as string[]);
  return names.filter((n) => n.startsWith(prefix)).map((n) => join(RUN_DIR, 'disks', n));
}
