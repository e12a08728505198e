import { mkdirSync } from 'node:fs';
import { open, readFile, readdir, rm } from 'node:fs/promises';
import { isAlive, statFields } from '../lib/procs.js';

/** Two host uids of one box: its agent's (root inside) and its user's (uid 1000 inside). */
export interface BoxUids {
  agent: number;
  user: number;
  /**
   * The group every box's agent (and bubblewrap, as it sets the box up) carries beside its own:
   * the roots of the boxes' disks are their user's and this group's (0710), so bubblewrap reaches
   * what it binds and no other local user reaches a disk at all. The agent's children drop it.
   */
  group: number;
  /** The slot both came from; free() gives it back. */
  slot: number;
}

/**
 * Default first uid of rbrowse's range: 0x70000000, above the ranges systemd hands out to
 * containers (up to 0x6FFFFFFF) and below its foreign-uid range; nothing in /etc/passwd or
 * /etc/subuid lives there on an ordinary machine. RBROWSE_UID_BASE moves it.
 */
export const DEFAULT_UID_BASE = 0x70000000;
/** Boxes at once on one machine (two uids each), across every daemon. */
const SLOTS = 32768;
/** Where slots are claimed, machine-wide: every daemon on the machine (one per RBROWSE_HOME) shares the range. */
const CLAIMS_DIR = '/run/rbrowse/uid-slots';

/** This process's start time (clock ticks since boot), so a reused pid never keeps a dead daemon's claims. */
async function startTime(pid: number): Promise<string> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1').catch(() => '');
  return stat ? statFields(stat)[19]! : '';
}

/**
 * Hands out a pair of host uids per box from a range the daemon owns, so no two boxes (sessions,
 * apps, of this daemon or another on the machine) share a uid, and none shares one with a real
 * user or service: one box cannot signal, trace or read another's processes or files. A slot is a
 * file created exclusively under /run; a claim whose daemon is gone is taken over, but only once
 * no process runs as either of its uids.
 */
export class UidSlots {
  private readonly mine = new Set<number>();
  private me?: string;
  private next: number;
  private readonly group: number;

  constructor(private readonly base = uidBaseFromEnv()) {
    if (!Number.isInteger(base) || base < 65536 || base + 2 * SLOTS + 1 > 0xfffffffe) {
      throw new Error(`RBROWSE_UID_BASE must be an integer from 65536 to ${0xfffffffe - 2 * SLOTS - 1}`);
    }
    // Just past the slots' uids: a gid as unused as they are.
    this.group = base + 2 * SLOTS;
    mkdirSync(CLAIMS_DIR, { recursive: true, mode: 0o700 });
    // Daemons start looking in different places, so they rarely race for one slot.
    this.next = Math.floor(Math.random() * SLOTS);
  }

  /** A free slot: `preferred` first when given (a crashed daemon's session, whose files are that slot's). */
  async take(preferred?: number): Promise<BoxUids> {
    this.me ??= `${process.pid} ${await startTime(process.pid)}`;
    if (preferred !== undefined && Number.isInteger(preferred) && preferred >= 0 && preferred < SLOTS && !this.mine.has(preferred)) {
      if (await this.claim(preferred)) {
        this.mine.add(preferred);
        return { agent: this.base + 2 * preferred, user: this.base + 2 * preferred + 1, group: this.group, slot: preferred };
      }
    }
    for (let tried = 0; tried < SLOTS; tried++) {
      const slot = this.next;
      this.next = (this.next + 1) % SLOTS;
      if (this.mine.has(slot)) continue;
      if (await this.claim(slot)) {
        this.mine.add(slot);
        return { agent: this.base + 2 * slot, user: this.base + 2 * slot + 1, group: this.group, slot };
      }
    }
    throw new Error(`all ${SLOTS} uid slots of the range from ${this.base} are taken`);
  }

  async free(uids: BoxUids): Promise<void> {
    if (!this.mine.delete(uids.slot)) return;
    await rm(`${CLAIMS_DIR}/${uids.slot}`, { force: true });
  }

  /** Daemon stop: every claim of this daemon goes. */
  async freeAll(): Promise<void> {
    await Promise.all([...this.mine].map((slot) => rm(`${CLAIMS_DIR}/${slot}`, { force: true })));
    this.mine.clear();
  }

  private async claim(slot: number): Promise<boolean> {
    const file = `${CLAIMS_DIR}/${slot}`;
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fh = await open(file, 'wx', 0o600);
        await fh.writeFile(this.me!);
        await fh.close();
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        if (!(await this.stale(file, slot))) return false;
        await rm(file, { force: true });
      }
    }
    return false;
  }

  /** A claim of a daemon that no longer runs, whose uids no process uses any more. */
  private async stale(file: string, slot: number): Promise<boolean> {
    const [pid, started] = (await readFile(file, 'utf8').catch(() => '')).split(' ');
    if (pid && isAlive(Number(pid)) && (await startTime(Number(pid))) === started) return false;
    const uids = new Set([this.base + 2 * slot, this.base + 2 * slot + 1].map(String));
    return !(await anyProcessOf(uids));
  }
}

/**
 * Whether a live process runs as one of `uids` (a zombie does not count: it runs nothing, and on
 * a machine whose init does not reap, an ended box's zombies stay).
 */
export async function anyProcessOf(uids: Set<string>): Promise<boolean> {
  for (const name of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const status = await readFile(`/proc/${name}/status`, 'latin1').catch(() => '');
    const uid = /^Uid:\s+(\d+)/m.exec(status)?.[1];
    if (uid && uids.has(uid) && !/^State:\s+Z/m.test(status)) return true;
  }
  return false;
}

export function uidBaseFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.RBROWSE_UID_BASE;
  return raw === undefined || raw === '' ? DEFAULT_UID_BASE : Number(raw);
}
