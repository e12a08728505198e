import type { Readable } from 'node:stream';
import { newId } from '../../../src/ids.js';
import { ForbiddenError, NotFoundError, RateLimitError, ServiceUnavailableError } from '../../../src/errors.js';
import type { BoxProcess } from '../../box/box.js';
import { outputOf } from '../../box/box-process.js';
import type { EventStream } from '../../lib/sse.js';
import type { LiveSession, ServiceKind } from '../../sessions/live-session.js';
import { processesOf } from '../process/session-processes.js';

/** Watches at once per session. */
const WATCHES_MAX = 32;
/** Events kept for a watch nobody reads yet; beyond, the oldest go. */
const QUEUE_MAX = 10_000;
/** How long a recursive watch of a large tree may take to be set up. */
const SETUP_MS = 30_000;

export type FsEventType = 'CREATE' | 'WRITE' | 'DELETE' | 'RENAME';
export interface FsEvent {
  type: FsEventType;
  path: string;
  name: string;
  is_dir: boolean;
}

/**
 * inotify's events as Kernel names them (fsnotify's): a move's old name is RENAME and its new
 * name CREATE; MODIFY is WRITE. The rest (attributes, opens) is not reported.
 */
function typeOf(flags: string[]): FsEventType | undefined {
  if (flags.includes('CREATE') || flags.includes('MOVED_TO')) return 'CREATE';
  if (flags.includes('MODIFY')) return 'WRITE';
  if (flags.includes('DELETE')) return 'DELETE';
  if (flags.includes('MOVED_FROM')) return 'RENAME';
  return undefined;
}

/** inotifywait's records: `FLAGS\0PATH\0` (NUL-separated, so any file name comes through whole). */
async function* records(stdout: Readable): AsyncGenerator<FsEvent> {
  let pending = Buffer.alloc(0);
  for await (const chunk of stdout as AsyncIterable<Buffer>) {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      const a = pending.indexOf(0);
      const b = a < 0 ? -1 : pending.indexOf(0, a + 1);
      if (b < 0) break;
      const flags = pending.subarray(0, a).toString().split(',');
      const path = pending.subarray(a + 1, b).toString();
      pending = pending.subarray(b + 1);
      const type = typeOf(flags);
      if (type) yield { type, path, name: path.slice(path.lastIndexOf('/') + 1), is_dir: flags.includes('ISDIR') };
    }
  }
}

/** How long a CREATE is remembered, so the scan of a new directory and inotify do not both report one entry. */
const DEDUP_MS = 5000;

class Watch {
  private readonly queue: FsEvent[] = [];
  private readonly readers = new Set<EventStream>();
  private readonly created = new Map<string, number>();
  private ended = false;

  constructor(
    readonly id: string,
    readonly child: BoxProcess,
    private readonly scan?: (dir: string) => Promise<FsEvent[]>,
  ) {
    void (async () => {
      for await (const event of records(child.stdout as Readable)) {
        this.emit(event);
        // inotify watches a new directory only once it is told of it: what was made in it before
        // that (mkdir -p a/b && echo > a/b/c) is found by listing it.
        if (this.scan && event.type === 'CREATE' && event.is_dir)
          void this.scan(event.path).then(
            (found) => {
              for (const e of found) this.emit(e);
            },
            () => {},
          );
      }
    })().catch(() => {});
    void child.exited.then(() => this.end());
  }

  private emit(event: FsEvent): void {
    // A path removed or moved away may be made again: that CREATE is a new one.
    if (event.type === 'DELETE' || event.type === 'RENAME') this.created.delete(event.path);
    if (event.type === 'CREATE') {
      const now = Date.now();
      for (const [path, at] of this.created) if (now - at > DEDUP_MS) this.created.delete(path);
      if (this.created.has(event.path)) return;
      this.created.set(event.path, now);
    }
    if (this.readers.size === 0) {
      this.queue.push(event);
      if (this.queue.length > QUEUE_MAX) this.queue.shift();
      return;
    }
    for (const r of this.readers) r.send({ event: 'fs_event', ...event });
  }

  /** What happened since the last reader left (or since the start), then live. */
  read(stream: EventStream): void {
    for (const event of this.queue.splice(0)) stream.send({ event: 'fs_event', ...event });
    if (this.ended) return stream.end();
    this.readers.add(stream);
    stream.onClose(() => this.readers.delete(stream));
  }

  stop(): void {
    this.child.kill('SIGKILL');
  }

  private end(): void {
    this.ended = true;
    for (const r of this.readers) r.end();
    this.readers.clear();
  }
}

/**
 * A session's filesystem watches (Kernel's fs.watch): each is an inotifywait inside the session's
 * namespace (paths mean what they mean to the browser, and a symlink cannot point it at the host),
 * run as a helper of the session's processes, so it ends with the session.
 */
export class SessionWatches {
  private readonly watches = new Map<string, Watch>();

  constructor(private readonly helper: (argv: string[]) => BoxProcess) {}

  async start(path: string, recursive: boolean): Promise<string> {
    if (this.watches.size >= WATCHES_MAX) throw new RateLimitError(`this session already has ${this.watches.size} watches`, 5);
    const child = this.helper([
      'inotifywait',
      '--monitor',
      '--no-newline',
      '--format',
      '%e%0%w%f%0',
      '--event',
      'create',
      '--event',
      'modify',
      '--event',
      'delete',
      '--event',
      'moved_from',
      '--event',
      'moved_to',
      ...(recursive ? ['--recursive'] : []),
      '--',
      path,
    ]);
    await this.established(child, path);
    const watch = new Watch(newId(), child, recursive ? (dir) => this.list(dir) : undefined);
    this.watches.set(watch.id, watch);
    void child.exited.then(() => this.watches.delete(watch.id));
    return watch.id;
  }

  get(id: string): Watch {
    const watch = this.watches.get(id);
    if (!watch) throw new NotFoundError(`watch ${id} not found in this session`);
    return watch;
  }

  end(id: string): void {
    this.get(id).stop();
    this.watches.delete(id);
  }

  /** The session ends: every watch goes. */
  stop(): void {
    for (const watch of this.watches.values()) watch.stop();
    this.watches.clear();
  }

  /** The entries below a directory, as CREATE events, listed in the namespace like the watch itself. */
  private async list(dir: string): Promise<FsEvent[]> {
    const { stdout } = await outputOf(this.helper(['find', dir, '-mindepth', '1', '-printf', '%y\\0%p\\0']));
    const parts = stdout.toString().split('\0');
    const events: FsEvent[] = [];
    for (let i = 0; i + 1 < parts.length; i += 2) {
      const path = parts[i + 1]!;
      events.push({ type: 'CREATE', path, name: path.slice(path.lastIndexOf('/') + 1), is_dir: parts[i] === 'd' });
    }
    return events;
  }

  /** Resolves once inotifywait says its watches are in place; its failure (a missing path) is the request's. */
  private async established(child: BoxProcess, path: string): Promise<void> {
    let stderr = '';
    const ready = new Promise<boolean>((resolve) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('Watches established')) resolve(true);
      });
      void child.exited.then(() => resolve(false));
      setTimeout(() => resolve(false), SETUP_MS).unref();
    });
    if (await ready) return;
    child.kill('SIGKILL');
    if (/No such file or directory|Not a directory/.test(stderr)) throw new NotFoundError(`${path}: no such file or directory`);
    if (/Permission denied/.test(stderr)) throw new ForbiddenError(`${path}: not readable in this session`);
    if (/upper limit on inotify watches|Too many open files/.test(stderr))
      throw new ServiceUnavailableError(`${path}: the machine's inotify limits are reached`);
    throw new ServiceUnavailableError(`${path}: the watch could not be set up (${stderr.trim().split('\n').pop() ?? 'no reason given'})`);
  }
}

const newWatches: ServiceKind<SessionWatches> = (session) => new SessionWatches((argv) => processesOf(session).helper(argv));

/** Filesystem watches inside this session; they end with it (their inotifywait is one of its processes). */
export const watchesOf = (session: LiveSession): SessionWatches => session.service(newWatches);
