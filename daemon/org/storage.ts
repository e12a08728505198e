import { lstat, readdir, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiError, ServiceUnavailableError } from '../../src/errors.js';
import { parseBytes } from '../lib/bytes.js';
import type { Store } from '../lib/state/store.js';
import { ownersOfOrg, type Scope } from './projects.js';

/** What an organization stores, of one kind: its files' bytes and how many of them. */
export interface StoredKind {
  /** The directories (or files) the owners' records of this kind keep on disk. */
  paths(owners: ReadonlySet<string>): string[];
  /** How many the owners have (profiles, extensions, deployments). */
  count?(owners: ReadonlySet<string>): number;
}

export type StoredKindName = 'profiles' | 'extensions' | 'deployments' | 'replays';

export interface StorageLimits {
  /** Bytes an organization may store in all (RBROWSE_ORG_STORAGE). */
  orgBytes: number;
  /** Free space of RBROWSE_HOME's filesystem kept for the daemon's own writes (RBROWSE_DISK_RESERVE). */
  reserveBytes: number;
  /** How many of each kind an organization may keep (RBROWSE_ORG_MAX_PROFILES, _EXTENSIONS, _DEPLOYMENTS). */
  maxCount: Partial<Record<StoredKindName, number>>;
}

export function storageLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): StorageLimits {
  const size = (name: string, fallback: number) => (env[name] ? parseBytes(env[name]!, name) : fallback);
  const count = (name: string, fallback: number) => {
    const n = Number(env[name]);
    return Number.isInteger(n) && n > 0 ? n : fallback;
  };
  return {
    orgBytes: size('RBROWSE_ORG_STORAGE', 20 * 1024 ** 3),
    reserveBytes: size('RBROWSE_DISK_RESERVE', 512 * 1024 ** 2),
    maxCount: {
      profiles: count('RBROWSE_ORG_MAX_PROFILES', 1000),
      extensions: count('RBROWSE_ORG_MAX_EXTENSIONS', 200),
      deployments: count('RBROWSE_ORG_MAX_DEPLOYMENTS', 200),
    },
  };
}

/** An organization is over what it may store: deterministic, so not to be retried as it is. */
export class QuotaExceededError extends ApiError {
  override readonly retryable = false;
  constructor(message: string) {
    super(403, 'forbidden', message);
  }
}

const mib = (n: number) => `${Math.max(0, Math.round(n / 1024 ** 2))} MiB`;

/** Bytes below a path (a directory's files, a file's own), as the disk holds them. */
async function bytesOf(path: string): Promise<number> {
  const info = await lstat(path).catch(() => undefined);
  if (!info) return 0;
  if (!info.isDirectory()) return info.blocks * 512;
  let total = info.blocks * 512;
  for (const entry of await readdir(path).catch(() => [] as string[])) total += await bytesOf(join(path, entry));
  return total;
}

/**
 * What each organization may keep on the daemon's disk, and the reserve the daemon keeps for
 * itself: every write an organization asks for (a profile save, an upload, a deployment, a
 * recording) is admitted here first, and refused while the organization is over its bytes or
 * counts (403, its own doing) or the filesystem is down to the reserve (503, the machine's). So one
 * organization can never fill the disk for the others, and the state file always has room.
 */
export class StorageQuotas {
  private readonly kinds = new Map<StoredKindName, StoredKind>();
  /** Bytes admitted and still being written, per organization: concurrent writes cannot all slip under. */
  private readonly inFlight = new Map<string, number>();

  constructor(
    private readonly deps: { home: string; store: Store },
    readonly limits: StorageLimits,
  ) {}

  /** The organization a record's owner (an organization, or one of its projects) belongs to. */
  orgOf(owner: string): { org_id: string } {
    return { org_id: this.deps.store.data.projects.find((p) => p.id === owner)?.org_id ?? owner };
  }

  /** A module that stores an organization's files says where they are (built in the composition root). */
  register(name: StoredKindName, kind: StoredKind): void {
    this.kinds.set(name, kind);
  }

  /** The filesystem's free bytes (for an unprivileged user, as the daemon's writes see them). */
  async freeBytes(): Promise<number> {
    const s = await statfs(this.deps.home);
    return s.bavail * s.bsize;
  }

  /** What the organization of `scope` stores now, in all its projects. */
  async usedBytes(scope: Pick<Scope, 'org_id'>): Promise<number> {
    const owners = ownersOfOrg(this.deps.store, scope.org_id);
    let total = 0;
    for (const kind of this.kinds.values()) for (const path of kind.paths(owners)) total += await bytesOf(path);
    return total;
  }

  /** One more of `kind` for the organization, or 403 past its count. */
  assertRoomFor(scope: Pick<Scope, 'org_id'>, name: StoredKindName): void {
    const max = this.limits.maxCount[name];
    const kind = this.kinds.get(name);
    if (max === undefined || !kind?.count) return;
    const n = kind.count(ownersOfOrg(this.deps.store, scope.org_id));
    if (n >= max) {
      throw new QuotaExceededError(`the organization keeps ${n} ${name}, its limit (RBROWSE_ORG_MAX_${name.toUpperCase()}): delete some first`);
    }
  }

  /**
   * Admits `bytes` more for the organization (what a write will add, known or bounded), or
   * refuses: 503 when the disk is down to the reserve, 403 when the organization would be over
   * its bytes. Call the answer once the write is done (or failed): then its bytes count on disk.
   */
  async admit(scope: Pick<Scope, 'org_id'>, bytes: number, what: string): Promise<() => void> {
    const free = await this.freeBytes();
    if (free - bytes < this.limits.reserveBytes) {
      throw new ServiceUnavailableError(
        `no room for ${what}: the disk of RBROWSE_HOME has ${mib(free)} free, and the daemon keeps ${mib(this.limits.reserveBytes)} for its own work (RBROWSE_DISK_RESERVE)`,
      );
    }
    const org = scope.org_id;
    const used = (await this.usedBytes(scope)) + (this.inFlight.get(org) ?? 0);
    if (used + bytes > this.limits.orgBytes) {
      throw new QuotaExceededError(
        `no room for ${what} (${mib(bytes)}): the organization stores ${mib(used)} of its ${mib(this.limits.orgBytes)} (RBROWSE_ORG_STORAGE); delete profiles, extensions, deployments or replays first`,
      );
    }
    this.inFlight.set(org, (this.inFlight.get(org) ?? 0) + bytes);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inFlight.get(org) ?? 0) - bytes;
      if (left > 0) this.inFlight.set(org, left);
      else this.inFlight.delete(org);
    };
  }

  /**
   * What the organization may still write for `what`, and the refusal to give past it: the smaller
   * of its quota's room (403) and the disk's above the reserve (503), as a write that streams is
   * bounded while its bytes come (an upload, its unpacking).
   */
  async roomFor(scope: Pick<Scope, 'org_id'>, what: string): Promise<{ bytes: number; refusal: () => ApiError }> {
    const free = await this.freeBytes();
    const used = (await this.usedBytes(scope)) + (this.inFlight.get(scope.org_id) ?? 0);
    const disk = free - this.limits.reserveBytes;
    const quota = this.limits.orgBytes - used;
    if (disk <= quota) {
      return {
        bytes: Math.max(0, disk),
        refusal: () =>
          new ServiceUnavailableError(
            `no room for ${what}: the disk of RBROWSE_HOME had ${mib(free)} free, and the daemon keeps ${mib(this.limits.reserveBytes)} for its own work (RBROWSE_DISK_RESERVE)`,
          ),
      };
    }
    return {
      bytes: Math.max(0, quota),
      refusal: () =>
        new QuotaExceededError(
          `no room for ${what}: the organization stores ${mib(used)} of its ${mib(this.limits.orgBytes)} (RBROWSE_ORG_STORAGE); delete profiles, extensions, deployments or replays first`,
        ),
    };
  }
}
