import { chmod, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Low } from 'lowdb';
import { DurableJsonFile, type Opened } from './durable-file.js';
import { changeBetween, picture, revert, type Change } from './undo.js';

/**
 * The live state document. Each module that keeps records in it declares its own collection by
 * augmenting this interface (`declare module '../lib/state/store.js' { interface State { pools: PoolRecord[] } }`)
 * and claims it with `Store.collection`, so the store knows no feature. Records that are done
 * changing leave this document for a History (daemon/lib/state/history.ts): every write costs what is
 * live, not what happened.
 */
export interface State {
  version: 1;
}

/** What opening the state found, for the log, `daemon start` and `doctor`. */
export interface StateOpening {
  source: Opened<unknown>['source'];
  unreadable?: { keptAs: string; error: string };
}

/**
 * The JSON state file (daemon/lib/state/durable-file.ts: atomic, 0600, a last good copy kept), read
 * through lowdb. Concurrent writes coalesce.
 */
export class Store {
  /** The changes waiting on each write, to undo if it fails. */
  private readonly unsaved = new Map<Promise<void>, Change[]>();

  private constructor(
    private readonly db: Low<State>,
    private readonly file: DurableJsonFile<State>,
    readonly opening: StateOpening,
  ) {}

  static async open(file: string, log: (msg: string, extra?: object) => void = () => {}): Promise<Store> {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    const adapter = new DurableJsonFile<State>(file);
    const opened = await adapter.open();
    if (opened.unreadable) {
      log(
        `STATE RECOVERED: ${file} did not parse (${opened.unreadable.error}); started from its last good copy, kept the unreadable file as ${opened.unreadable.keptAs}`,
      );
    } else if (opened.source === 'last-good') {
      log(`STATE RECOVERED: ${file} was missing; started from its last good copy`);
    }
    const db = new Low<State>({ read: async () => opened.data, write: (data) => adapter.write(data) }, { version: 1 } as State);
    await db.read();
    db.data = { ...db.data, version: 1 };
    await db.write();
    // Files from before state was kept private, and the copy linked from one.
    await Promise.all([file, adapter.lastGood].map((f) => chmod(f, 0o600).catch(() => {})));
    return new Store(db, adapter, { source: opened.source, ...(opened.unreadable ? { unreadable: opened.unreadable } : {}) });
  }

  /** Every change made so far is in both copies of the file: the last thing a stopping daemon waits for. */
  flushed(): Promise<void> {
    return this.file.flushed();
  }

  get data(): State {
    return this.db.data;
  }

  /** The collection `name` of the document, created empty the first time its owner asks. */
  collection<K extends keyof State>(name: K): State[K] {
    const data = this.db.data as unknown as Record<string, unknown>;
    data[name] ??= [];
    return data[name] as State[K];
  }

  /**
   * Moves records that are done changing from collection `name` to `history`: each is written there
   * first, so a crash in between leaves a record in both places (the history's copy wins), never in none.
   */
  async retire<R extends object>(name: keyof State, records: readonly R[], history: { put(record: R): Promise<void> }): Promise<void> {
    if (!records.length) return;
    for (const record of records) await history.put(record);
    const gone = new Set<object>(records);
    await this.update((state) => {
      const data = state as unknown as Record<string, object[]>;
      data[name] = data[name]!.filter((r) => !gone.has(r));
    });
  }

  /**
   * Applies a change to the state and persists it before resolving. A change that throws, or whose
   * write fails (a full disk), is undone in memory before the error reaches the caller: the caller
   * answers with an error, so nothing of it may stay for a later write to persist. Changes whose
   * writes coalesced fail together, and are undone together, newest first.
   */
  async update<T>(change: (state: State) => T): Promise<T> {
    const doc = this.db.data as unknown as Record<string, unknown>;
    const before = picture(doc);
    let result: T;
    try {
      result = change(this.db.data);
    } catch (err) {
      revert(doc, changeBetween(before, doc));
      throw err;
    }
    // The file's own promise, which coalesced writes share (lowdb's write() makes one per call).
    const write = this.file.write(this.db.data);
    let group = this.unsaved.get(write);
    if (!group) this.unsaved.set(write, (group = []));
    group.push(changeBetween(before, doc));
    try {
      await write;
    } catch (err) {
      const changes = this.unsaved.get(write);
      if (changes) for (const c of changes.reverse()) revert(doc, c);
      throw err;
    } finally {
      this.unsaved.delete(write);
    }
    return result;
  }
}
