import { parseBytes } from '../lib/bytes.js';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { access, constants, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { join } from 'node:path';

/** What one box may use; every limit is configurable (RBROWSE_SESSION_* and RBROWSE_APP_*). */
export interface BoxLimits {
  /** Bytes of memory (the cgroup's), its disk's tmpfs pages included. */
  memoryBytes: number;
  /** Tasks (processes and threads) at once. */
  pids: number;
  /** Size of its /dev/shm. */
  shmBytes: number;
  /** Size of its writable directories together (home and /tmp). */
  diskBytes: number;
}

export const SESSION_LIMIT_DEFAULTS: BoxLimits = { memoryBytes: 4 * 1024 ** 3, pids: 2048, shmBytes: 1024 ** 3, diskBytes: 2 * 1024 ** 3 };
export const APP_LIMIT_DEFAULTS: BoxLimits = { memoryBytes: 2 * 1024 ** 3, pids: 512, shmBytes: 64 * 1024 ** 2, diskBytes: 1024 ** 3 };

/** The limits of sessions (prefix RBROWSE_SESSION) or apps (RBROWSE_APP) from the environment. */
export function limitsFromEnv(prefix: 'RBROWSE_SESSION' | 'RBROWSE_APP', env: NodeJS.ProcessEnv = process.env): BoxLimits {
  const defaults = prefix === 'RBROWSE_SESSION' ? SESSION_LIMIT_DEFAULTS : APP_LIMIT_DEFAULTS;
  const size = (key: string, fallback: number) => (env[`${prefix}_${key}`] ? parseBytes(env[`${prefix}_${key}`]!, `${prefix}_${key}`) : fallback);
  const pidsRaw = env[`${prefix}_PIDS`];
  const pids = pidsRaw ? Number(pidsRaw) : defaults.pids;
  if (!Number.isInteger(pids) || pids < 16) throw new Error(`${prefix}_PIDS must be an integer of at least 16: ${pidsRaw}`);
  return {
    memoryBytes: size('MEMORY', defaults.memoryBytes),
    pids,
    shmBytes: size('SHM', defaults.shmBytes),
    diskBytes: size('DISK', defaults.diskBytes),
  };
}

/** One controller this host lets the daemon use: where a box's group of it goes. */
interface Controller {
  name: 'memory' | 'pids';
  /** The directory under which the boxes' groups are made (one per daemon home). */
  parent: string;
  version: 1 | 2;
}

/** Whether each limit is enforced here, and why not where it is not (rbrowse doctor, /health). */
export interface LimitSupport {
  memory: { enforced: boolean; why?: string };
  pids: { enforced: boolean; why?: string };
  shm: { enforced: boolean; why?: string };
  disk: { enforced: boolean; why?: string };
}

/** The cgroup paths of the calling process, by controller (v1) or "" (v2's unified one). */
function ownCgroups(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n')) {
    const [, controllers, path] = line.split(':', 3) as [string, string, string];
    for (const c of controllers.split(',')) out.set(c, path);
  }
  return out;
}

/**
 * The memory and process limits of boxes, as cgroups under the daemon's own: the cgroup v1
 * controllers where the host mounts them writable (as here), else cgroup v2 where the daemon's
 * subtree is delegated to it (systemd's Delegate=yes, or root). A box's init joins its groups
 * before anything in the box runs (the launcher writes cgroup.procs while bubblewrap waits), so
 * everything the box starts is counted; the groups go when the box has ended.
 */
export class BoxCgroups {
  private constructor(
    private readonly controllers: Controller[],
    readonly support: LimitSupport,
    /** The memory limit of the boxes' parent group (all of them together), where it could be set. */
    readonly parentMemoryBytes: number,
  ) {}

  static async detect(home: string, opts: { root: boolean }): Promise<BoxCgroups> {
    const tag = `rbrowse-${hashOf(home)}`;
    const own = ownCgroups();
    const controllers: Controller[] = [];
    const why: Partial<Record<'memory' | 'pids', string>> = {};
    for (const name of ['memory', 'pids'] as const) {
      const v1 = `/sys/fs/cgroup/${name}`;
      if (own.has(name) && existsSync(`${v1}/cgroup.procs`)) {
        const parent = join(v1, own.get(name)!, tag);
        if (
          await mkdir(parent, { recursive: true }).then(
            () => true,
            () => false,
          )
        ) {
          controllers.push({ name, parent, version: 1 });
          continue;
        }
        why[name] = `cgroup v1 ${name} controller at ${v1} is not writable by the daemon`;
        continue;
      }
      const v2 = await unifiedParent(own.get('') ?? '', tag, name);
      if (v2.parent) controllers.push({ name, parent: v2.parent, version: 2 });
      else why[name] = v2.why;
    }
    const has = (n: string) => controllers.some((c) => c.name === n);
    const support: LimitSupport = {
      memory: has('memory') ? { enforced: true } : { enforced: false, why: why.memory ?? 'no memory controller' },
      pids: has('pids') ? { enforced: true } : { enforced: false, why: why.pids ?? 'no pids controller' },
      // bubblewrap sizes a box's /dev/shm itself.
      shm: { enforced: true },
      disk: opts.root
        ? { enforced: true }
        : { enforced: false, why: 'a size-capped disk is a tmpfs the daemon mounts, which needs root; sessions write to a plain directory' },
    };
    // The boxes' parent group holds them all to what the machine has, less what the host keeps.
    const parentMemoryBytes = boxesMemoryBytes();
    for (const c of controllers) {
      if (c.name !== 'memory') continue;
      const file = c.version === 1 ? 'memory.limit_in_bytes' : 'memory.max';
      await writeFile(join(c.parent, file), String(parentMemoryBytes)).catch(() => {});
    }
    return new BoxCgroups(controllers, support, parentMemoryBytes);
  }

  /** Makes a box's groups with their limits; the cgroup.procs files its init joins. */
  async create(id: string, limits: BoxLimits): Promise<string[]> {
    const procs: string[] = [];
    for (const c of this.controllers) {
      const dir = join(c.parent, id);
      await mkdir(dir, { recursive: true });
      if (c.name === 'memory') {
        if (c.version === 1) {
          await writeFile(join(dir, 'memory.limit_in_bytes'), String(limits.memoryBytes));
          // With swap accounting, swap counts too: a box cannot escape its limit into swap.
          await writeFile(join(dir, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes)).catch(() => {});
        } else {
          await writeFile(join(dir, 'memory.max'), String(limits.memoryBytes));
          await writeFile(join(dir, 'memory.swap.max'), '0').catch(() => {});
        }
      } else {
        await writeFile(join(dir, 'pids.max'), String(limits.pids));
      }
      procs.push(join(dir, 'cgroup.procs'));
    }
    return procs;
  }

  /**
   * Removes a box's groups: empty once its processes are gone, so tried for a second while they
   * drain; `once`, tried once (a group left, the next start's removeAll() removes).
   */
  async remove(id: string, opts: { once?: boolean } = {}): Promise<void> {
    for (const c of this.controllers) {
      const dir = join(c.parent, id);
      for (let i = 0; i < (opts.once ? 1 : 20); i++) {
        const gone = await rmdir(dir).then(
          () => true,
          (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
        );
        if (gone) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /** The groups a crashed daemon left (their processes are gone by now): removed at start. */
  async removeAll(): Promise<void> {
    for (const c of this.controllers) {
      for (const entry of await readdir(c.parent, { withFileTypes: true }).catch(() => [])) {
        if (entry.isDirectory()) await this.killAndRemove(join(c.parent, entry.name));
      }
    }
  }

  /** A running box's memory limit, changed (a session that asked for more than the default). */
  async setMemory(id: string, bytes: number): Promise<void> {
    const c = this.controllers.find((x) => x.name === 'memory');
    if (!c) return;
    const dir = join(c.parent, id);
    if (c.version === 2) return void (await writeFile(join(dir, 'memory.max'), String(bytes)));
    // v1 keeps memory.limit_in_bytes <= memory.memsw.limit_in_bytes: raise the pair in the order that holds it.
    const memsw = join(dir, 'memory.memsw.limit_in_bytes');
    const current = Number((await readFile(join(dir, 'memory.limit_in_bytes'), 'utf8').catch(() => '0')).trim());
    if (bytes > current) await writeFile(memsw, String(bytes)).catch(() => {});
    await writeFile(join(dir, 'memory.limit_in_bytes'), String(bytes));
    if (bytes <= current) await writeFile(memsw, String(bytes)).catch(() => {});
  }

  /** At the daemon's stop, once its boxes' groups are gone: their parents too (one per home, else they pile up in the machine's tree). */
  async close(): Promise<void> {
    for (const c of this.controllers) await rmdir(c.parent).catch(() => {});
  }

  /** How much memory a box's group uses now (bytes), where the memory controller is on. */
  async memoryUsage(id: string): Promise<number | undefined> {
    const c = this.controllers.find((x) => x.name === 'memory');
    if (!c) return undefined;
    const file = join(c.parent, id, c.version === 1 ? 'memory.usage_in_bytes' : 'memory.current');
    const raw = await readFile(file, 'utf8').catch(() => '');
    return raw ? Number(raw.trim()) : undefined;
  }

  private async killAndRemove(dir: string): Promise<void> {
    const pids = (await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '')).split('\n').filter(Boolean).map(Number);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone.
      }
    }
    for (let i = 0; i < 40; i++) {
      if (
        await rmdir(dir).then(
          () => true,
          () => false,
        )
      )
        return;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/**
 * A parent for boxes' groups in cgroup v2: below the daemon's own group, which must have the
 * controller available and be writable. The daemon cannot enable a controller for children of a
 * group it is itself in (no internal processes), so it moves itself into a leaf first.
 */
async function unifiedParent(own: string, tag: string, name: string): Promise<{ parent?: string; why?: string }> {
  const root = '/sys/fs/cgroup';
  if (!existsSync(join(root, 'cgroup.controllers'))) return { why: 'neither a cgroup v1 controller nor cgroup v2 is mounted at /sys/fs/cgroup' };
  const mine = join(root, own);
  const available = (await readFile(join(mine, 'cgroup.controllers'), 'utf8').catch(() => '')).split(/\s+/);
  if (!available.includes(name))
    return { why: `cgroup v2: the ${name} controller is not delegated to the daemon's group ${own || '/'} (run it under systemd with Delegate=yes)` };
  try {
    await access(join(mine, 'cgroup.subtree_control'), constants.W_OK);
    const leaf = join(mine, `${tag}-daemon`);
    const boxes = join(mine, tag);
    await mkdir(leaf, { recursive: true });
    await mkdir(boxes, { recursive: true });
    // The daemon (and its launcher, later) live in the leaf; the boxes' groups under `boxes`.
    await writeFile(join(leaf, 'cgroup.procs'), String(process.pid));
    await writeFile(join(mine, 'cgroup.subtree_control'), `+${name}`);
    await writeFile(join(boxes, 'cgroup.subtree_control'), `+${name}`);
    return { parent: boxes };
  } catch (err) {
    return { why: `cgroup v2: the daemon's group ${own || '/'} is not delegated to it (${(err as Error).message})` };
  }
}

/** A short name for a daemon home in the machine-wide cgroup tree. */
const hashOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

/** The boxes' share of the machine's memory: all of it less what the host keeps for itself (RBROWSE_HOST_MEMORY_RESERVE, default 1 GiB). */
export function boxesMemoryBytes(env: NodeJS.ProcessEnv = process.env): number {
  const reserve = env.RBROWSE_HOST_MEMORY_RESERVE ? parseBytes(env.RBROWSE_HOST_MEMORY_RESERVE, 'RBROWSE_HOST_MEMORY_RESERVE') : 1024 ** 3;
  return Math.max(512 * 1024 ** 2, totalmem() - reserve);
}

/**
 * What the daemon may grant its boxes in memory limits: the boxes' share of the machine (its
 * memory less the host's reserve, also the limit of their parent group, which holds their real
 * use to it) times RBROWSE_MEMORY_OVERCOMMIT (default 4: a browser rarely uses its limit; 1 grants
 * no more than the machine has). A box past it is refused with 429.
 */
export interface MemoryGrants {
  machineBytes: number;
  overcommit: number;
  maxBytes: number;
}

export function memoryGrantsFromEnv(machineBytes: number, env: NodeJS.ProcessEnv = process.env): MemoryGrants {
  const raw = Number(env.RBROWSE_MEMORY_OVERCOMMIT);
  const overcommit = Number.isFinite(raw) && raw >= 1 ? raw : 4;
  return { machineBytes, overcommit, maxBytes: Math.floor(machineBytes * overcommit) };
}
