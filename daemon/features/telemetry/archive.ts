import { mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { TelemetryEnvelope } from '../../../src/api/telemetry.js';
import { replaceFile } from '../../lib/state/replace-file.js';

/**
 * Ended sessions' telemetry, as Kernel keeps it readable after the session (its events endpoint
 * is a historical read): one JSON-lines file per session, written whole when the session ends,
 * kept as long as the history keeps the session.
 */
export class TelemetryArchive {
  private readonly writing = new Map<string, Promise<void>>();

  constructor(
    private readonly dir: string,
    private readonly log: (msg: string, extra?: object) => void,
  ) {}

  /** Writes a session's events in the background (the session's end must not wait for its disk). */
  keep(sessionId: string, events: readonly TelemetryEnvelope[]): void {
    if (!events.length) return;
    const text = `${events.map((e) => JSON.stringify(e)).join('\n')}\n`;
    const write = (async () => {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      await replaceFile(this.file(sessionId), text);
    })()
      .catch((err: unknown) => this.log('telemetry not archived', { session: sessionId, error: String(err) }))
      .finally(() => this.writing.delete(sessionId));
    this.writing.set(sessionId, write);
  }

  /** An ended session's events, oldest first; none if it had none (or they were pruned). */
  async read(sessionId: string): Promise<TelemetryEnvelope[]> {
    await this.writing.get(sessionId);
    const text = await readFile(this.file(sessionId), 'utf8').catch(() => '');
    return text
      ? text
          .trimEnd()
          .split('\n')
          .map((line) => JSON.parse(line) as TelemetryEnvelope)
      : [];
  }

  /** Removes the files older than maxAgeMs (the history's retention). */
  async prune(maxAgeMs: number): Promise<void> {
    for (const name of await readdir(this.dir).catch(() => [] as string[])) {
      const file = join(this.dir, name);
      const { mtimeMs } = await stat(file).catch(() => ({ mtimeMs: Date.now() }));
      if (mtimeMs < Date.now() - maxAgeMs) await rm(file, { force: true });
    }
  }

  /** Daemon stop: every write begun is finished. */
  async settled(): Promise<void> {
    await Promise.all(this.writing.values());
  }

  private file(sessionId: string): string {
    return join(this.dir, `${sessionId}.jsonl`);
  }
}
