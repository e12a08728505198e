import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';

/** How often the host's socket counts are read while boxes run. */
const POLL_MS = 1000;
/** The longest the ports go unread while boxes run, whatever the counts say. */
const RESCAN_MS = 10_000;
/** Loopback and wildcard addresses in /proc/net/tcp{,6}'s hex form: what a box's localhost should reach. */
const LOCAL_V4 = new Set(['0100007F', '00000000']);
const LOCAL_V6 = new Set(['00000000000000000000000001000000', '00000000000000000000000000000000']);

/** TCP ports something listens on on the host's loopback (or on every address), from /proc. */
export async function hostLoopbackPorts(): Promise<number[]> {
  const ports = new Set<number>();
  for (const [file, local] of [
    ['/proc/self/net/tcp', LOCAL_V4],
    ['/proc/self/net/tcp6', LOCAL_V6],
  ] as const) {
    const text = await readFile(file, 'latin1').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // f[1]: address:port, f[3]: state (0A: LISTEN).
      if (f[3] !== '0A' || !f[1]) continue;
      const [addr, port] = f[1].split(':');
      if (local.has(addr!)) ports.add(parseInt(port!, 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/**
 * How many TCP sockets the host's network namespace has, listening ones included: a port that
 * opens or closes changes it. It reads in microseconds, where the tables above cost ~4 ms of
 * system time (the kernel walks every bucket of its TCP hash for them, empty or not: 24 GiB here).
 */
export function hostSocketCounts(): string {
  // Read in place: ~20 µs a file, where an asynchronous read is five thread-pool round trips,
  // each waking the daemon, every second.
  const read = (file: string) => {
    try {
      return readFileSync(file, 'latin1');
    } catch {
      return '';
    }
  };
  return ['/proc/self/net/sockstat', '/proc/self/net/sockstat6'].map((file) => /^TCP6?: inuse (\d+)/m.exec(read(file))?.[1] ?? '').join(' ');
}

/**
 * The host's loopback services as every box sees them: a page in a session opens
 * http://localhost:3000 and reaches the developer's server on the host, though the box has a
 * network namespace of its own. The ports listening on the host's loopback are read from /proc
 * (at once when one asks: a create, a hand-over; while boxes run, whenever the host's socket
 * counts changed since, checked every second, and every RESCAN_MS at the latest), each box's
 * agent listens on the same ports inside, and the connections it accepts come here, to be
 * connected to the host. `RBROWSE_HOST_LOOPBACK=off` keeps the host's loopback out of boxes.
 */
export class HostPorts {
  private current: number[] = [];
  /** Forwarded whatever the setting and the scan say: the daemon's own port. */
  private pinned: number[] = [];
  private readonly boxes = new Set<{ forward(ports: number[]): void }>();
  private timer?: NodeJS.Timeout;
  private reading?: Promise<void>;
  /** The socket counts when the ports were last read, and when that was. */
  private scanned = { counts: '', at: 0 };

  /** Connections to the host open now, per box and in all: each holds two of the daemon's descriptors. */
  private readonly open = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly enabled: boolean,
    private readonly caps: HostConnectionCaps = hostConnectionCapsFromEnv(),
  ) {}

  /** Ports every box reaches on the host whatever the scan finds (the daemon's API). */
  always(ports: number[]): void {
    this.pinned = ports;
    for (const box of this.boxes) box.forward(this.wanted());
  }

  private wanted(): number[] {
    return [...new Set([...this.pinned, ...(this.enabled ? this.current : [])])];
  }

  /** A box to keep in step; it gets the current set at once. */
  add(box: { forward(ports: number[]): void }): () => void {
    this.boxes.add(box);
    box.forward(this.wanted());
    this.schedule();
    return () => {
      this.boxes.delete(box);
      if (!this.boxes.size) this.stopPolling();
    };
  }

  /** Resolves once the host's ports have been read at least once (at once after that). */
  async primed(): Promise<void> {
    if (this.enabled && this.scanned.at === 0) await this.refresh();
  }

  /** Reads the host's ports now and tells every box (before a session is handed out). */
  async refresh(): Promise<void> {
    if (!this.enabled) return;
    this.reading ??= (async () => {
      const counts = hostSocketCounts();
      const ports = await hostLoopbackPorts();
      this.scanned = { counts, at: Date.now() };
      if (ports.join() !== this.current.join()) {
        this.current = ports;
        for (const box of this.boxes) box.forward(this.wanted());
      }
    })().finally(() => (this.reading = undefined));
    await this.reading;
  }

  /**
   * A connection a box accepted on a forwarded port: connected to the same port on the host, over
   * the same address family first, the other one if nothing listens there (a server on 127.0.0.1
   * only, reached as localhost over ::1 inside: the box accepted it, so the fallback is ours).
   */
  readonly connect = (inside: Socket, port: number, family: 4 | 6, boxId = ''): void => {
    // Past a cap the connection is refused (closed at once): one session's flood takes its own
    // share of the daemon's descriptors, never the reserve its other work needs.
    const mine = this.open.get(boxId) ?? 0;
    if (mine >= this.caps.perBox || this.total >= this.caps.total) {
      inside.destroy();
      this.refused++;
      return;
    }
    this.open.set(boxId, mine + 1);
    this.total++;
    inside.once('close', () => {
      this.total--;
      const left = (this.open.get(boxId) ?? 1) - 1;
      if (left > 0) this.open.set(boxId, left);
      else this.open.delete(boxId);
    });
    const hosts = family === 6 ? ['::1', '127.0.0.1'] : ['127.0.0.1', '::1'];
    let outside: Socket | undefined;
    inside.on('error', () => outside?.destroy());
    inside.once('close', () => outside?.destroy());
    const attempt = (i: number) => {
      const socket = connect({ port, host: hosts[i]! });
      socket.once('connect', () => {
        outside = socket;
        socket.setNoDelay(true);
        inside.setNoDelay(true);
        inside.pipe(socket).pipe(inside);
        socket.on('error', () => inside.destroy());
        socket.once('close', () => inside.destroy());
      });
      socket.once('error', (err: NodeJS.ErrnoException) => {
        if (outside === socket) return;
        if (i + 1 < hosts.length && err.code === 'ECONNREFUSED' && !inside.destroyed) attempt(i + 1);
        else inside.destroy();
      });
    };
    attempt(0);
  };

  /** Connections refused at a cap since the start (for /admin/resources). */
  refused = 0;

  /** Connections to the host open now, in all. */
  get connections(): number {
    return this.total;
  }

  close(): void {
    this.stopPolling();
    this.boxes.clear();
  }

  private schedule(): void {
    if (!this.enabled || this.timer || !this.boxes.size) return;
    void this.refresh().catch(() => {});
    this.timer = setInterval(() => void this.poll().catch(() => {}), POLL_MS);
    this.timer.unref();
  }

  /** A rescan when a socket came or went since the last one (or it is RESCAN_MS old). */
  private async poll(): Promise<void> {
    if (Date.now() - this.scanned.at < RESCAN_MS && hostSocketCounts() === this.scanned.counts) return;
    await this.refresh();
  }

  private stopPolling(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

export interface HostConnectionCaps {
  /** Connections one box may have open to the host at once (RBROWSE_SESSION_HOST_CONNECTIONS). */
  perBox: number;
  /** Connections all boxes may have open at once (RBROWSE_HOST_CONNECTIONS), within what the daemon's descriptor limit leaves above its reserve. */
  total: number;
}

/** Descriptors the daemon keeps for its own work (the API's sockets, the state file, its children's pipes). */
const DESCRIPTOR_RESERVE = 2048;

/** The daemon's limit of open descriptors (its soft RLIMIT_NOFILE), as /proc says. */
function openFileLimit(): number {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m?.[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(m?.[1] ?? 1024);
  } catch {
    return 1024;
  }
}

export function hostConnectionCapsFromEnv(env: NodeJS.ProcessEnv = process.env): HostConnectionCaps {
  const n = (name: string, fallback: number) => {
    const v = Number(env[name]);
    return Number.isInteger(v) && v > 0 ? v : fallback;
  };
  // Two descriptors each (the box's side and the host's), below the reserve.
  const room = Math.max(64, Math.floor((openFileLimit() - DESCRIPTOR_RESERVE) / 2));
  return { perBox: n('RBROWSE_SESSION_HOST_CONNECTIONS', 256), total: Math.min(n('RBROWSE_HOST_CONNECTIONS', 4096), room) };
}
