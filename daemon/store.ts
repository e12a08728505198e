import { chmod, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Low } from 'lowdb';
import { DurableJsonFile, type Opened } from './state/durable-file.js';

/**
 * The live state document. Each module that keeps records in it declares its own collection by
 * augmenting this interface (`declare module '../store.js' { interface State { pools: PoolRecord[] } }`)
 * and claims it with `Store.collection`, so the store knows no feature. Records that are done
 * changing leave this document for a History (daemon/state/history.ts): every write costs what is
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
 * The JSON state file (daemon/state/durable-file.ts: atomic, 0600, a last good copy kept), read
 * through lowdb. Concurrent writes coalesce.
 */
export class Store {
  private constructor(
    private readonly db: Low<State>,
    readonly opening: StateOpening,
  ) {}

  static async open(file: string, log: (msg: string, extra?: object) => void = () => {}): Promise<Store> {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    const adapter = new DurableJsonFile<State>(file);
    const opened = await adapter.open();
    if (opened.unreadable) {
      log(`STATE RECOVERED: ${file} did not parse (${opened.unreadable.error}); started from its last good copy, kept the unreadable file as ${opened.unreadable.keptAs}`);
    } else if (opened.source === 'last-good') {
      log(`STATE RECOVERED: ${file} was missing; started from its last good copy`);
    }
    const db = new Low<State>({ read: async () => opened.data, write: (data) => adapter.write(data) }, { version: 1 } as State);
    await db.read();
    db.data = { ...db.data, version: 1 };
    await db.write();
    // Files from before state was kept private, and the copy linked from one.
    await Promise.all([file, adapter.lastGood].map((f) => chmod(f, 0o600).catch(() => {})));
    return new Store(db, { source: opened.source, ...(opened.unreadable ? { unreadable: opened.unreadable } : {}) });
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

  /** Applies a change to the state and persists it before resolving. */
  async update<T>(change: (state: State) => T): Promise<T> {
    const result = change(this.db.data);
    await this.db.write();
    return result;
  }
}
