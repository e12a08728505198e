import { readFile, rename, unlink } from 'node:fs/promises';
import { replaceFile } from './replace-file.js';

/** Where an opened document came from: the file itself, its last good copy, or nowhere (a new home). */
export type Source = 'file' | 'last-good' | 'none';

export interface Opened<T> {
  data: T | null;
  source: Source;
  /** Set when the file did not parse: where the unreadable file was moved, and why it failed. */
  unreadable?: { keptAs: string; error: string };
}

/** Nothing good is left to start from: the daemon refuses to start rather than start empty. */
export class StateUnreadableError extends Error {
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(
      `${file} does not parse (${reason}) and no good copy of it is left (${file}.last-good).\n` +
        `The daemon will not start empty over it: fix the file, or move it aside to start with no state.`,
    );
  }
}

/**
 * A JSON document that survives anything but the loss of both its copies. Each write replaces the
 * file atomically (temp file, fsync, rename, mode 0600), then its copy `<file>.last-good` the same
 * way, so the copy is as current as the file. A file that does not
 * parse (a disk fault, a hand edit) is moved aside and the last good copy is read instead; with
 * none left, opening fails. Writes coalesce: at most one runs, and one more waits for the newest data.
 */
export class DurableJsonFile<T> {
  readonly lastGood: string;
  private chain: Promise<void> = Promise.resolve();
  private queued?: Promise<void>;
  private latest?: T;

  constructor(readonly file: string) {
    this.lastGood = `${file}.last-good`;
  }

  async open(): Promise<Opened<T>> {
    const main = await parseFile<T>(this.file);
    if (main.ok) return { data: main.data, source: 'file' };
    const backup = await parseFile<T>(this.lastGood);
    if (main.missing) return backup.ok ? { data: backup.data, source: 'last-good' } : { data: null, source: 'none' };
    if (!backup.ok) throw new StateUnreadableError(this.file, main.error);
    const keptAs = `${this.file}.unreadable-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    await rename(this.file, keptAs);
    return { data: backup.data, source: 'last-good', unreadable: { keptAs, error: main.error } };
  }

  /**
   * Resolves once the file holds data (or newer): the change is durable then. The last good copy
   * follows in the background (flushed() waits for it): a crash in between leaves the file new and
   * the copy one change behind, as a crash between the two renames always could, and the file is
   * read first. Answering after the file alone halves what a create waits for the disk.
   */
  write(data: T): Promise<void> {
    this.latest = data;
    if (!this.queued) {
      const main = this.chain
        .catch(() => {})
        .then(() => {
          this.queued = undefined;
          return this.replaceMain(JSON.stringify(this.latest));
        });
      this.queued = main.then(() => {});
      // A copy that fails to land (a full disk) is made again by the next write; the file holds the change.
      this.chain = main.then((text) => this.replaceCopy(text)).catch(() => {});
    }
    return this.queued;
  }

  /** Every write begun so far has landed in both copies (or failed). */
  flushed(): Promise<void> {
    return this.chain;
  }

  private async replaceMain(text: string): Promise<string> {
    await replaceFile(this.file, `${text}\n`);
    return text;
  }

  private async replaceCopy(text: string): Promise<void> {
    await replaceFile(this.lastGood, `${text}\n`);
    // A hard link left by an earlier version's write that failed half-way.
    await unlink(`${this.lastGood}.${process.pid}`).catch(() => {});
  }
}

type Parsed<T> = { ok: true; data: T } | { ok: false; missing: boolean; error: string };

async function parseFile<T>(file: string): Promise<Parsed<T>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    return { ok: false, missing, error: (err as Error).message };
  }
  try {
    const data = JSON.parse(text) as unknown;
    if (typeof data !== 'object' || data === null || Array.isArray(data)) return { ok: false, missing: false, error: 'not a JSON object' };
    return { ok: true, data: data as T };
  } catch (err) {
    return { ok: false, missing: false, error: (err as Error).message };
  }
}
