import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** One of the daemon's JSON log lines as a person reads it: `time  message  key=value ...`. */
export function formatLogLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof entry !== 'object' || entry === null) return line;
  const { time, msg, ...rest } = entry;
  const fields = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`);
  return [String(time ?? ''), String(msg ?? ''), ...fields].filter(Boolean).join('  ');
}

function readFrom(file: string, offset: number): { text: string; size: number } {
  const size = statSync(file).size;
  if (size <= offset) return { text: '', size };
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(size - offset);
    const n = readSync(fd, buf, 0, buf.length, offset);
    return { text: buf.subarray(0, n).toString('utf8'), size: offset + n };
  } finally {
    closeSync(fd);
  }
}

/**
 * Prints the last `lines` lines of the log (all with 0), then with `follow` every line written
 * after them until the process is interrupted; a log that shrank (rotated, truncated) is read
 * again from its start.
 */
export async function printDaemonLog(file: string, opts: { lines: number; follow: boolean; json: boolean }): Promise<void> {
  const out = (line: string) => process.stdout.write(`${opts.json ? line : formatLogLine(line)}\n`);
  let { text, size } = readFrom(file, 0);
  const all = text.split('\n');
  // The last element is what follows the last newline: a line still being written.
  let partial = all.pop() ?? '';
  for (const line of opts.lines === 0 ? all : all.slice(-opts.lines)) out(line);
  if (!opts.follow) {
    if (partial) out(partial);
    return;
  }
  for (;;) {
    await sleep(250);
    let now: number;
    try {
      now = statSync(file).size;
    } catch {
      continue;
    }
    if (now < size) {
      size = 0;
      partial = '';
    }
    const next = readFrom(file, size);
    size = next.size;
    const lines = (partial + next.text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) out(line);
  }
}
