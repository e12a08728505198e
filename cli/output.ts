import type { WatchSession } from '../src/api/watch.js';
import { styleText } from 'node:util';
import { CommanderError } from 'commander';
import { ApiCallError } from '../src/client.js';

/**
 * Exit statuses: scripts can tell a refused request from a mistyped command line. 3 stays with
 * the commands that document it (daemon status: not running; pools acquire: none in time).
 */
export const EXIT = {
  /** The server answered with an error, or the request could not be made. */
  api: 1,
  /** The command line was wrong: unknown command or option, bad or missing argument. */
  usage: 2,
} as const;

type Style = Parameters<typeof styleText>[0];

/**
 * Colours text for a stream: only when it is a terminal and neither NO_COLOR nor a dumb TERM
 * say otherwise (FORCE_COLOR forces it); node:util's styleText makes that decision.
 */
export function paint(style: Style, text: string, stream: NodeJS.WriteStream = process.stdout): string {
  return styleText(style, text, { stream });
}

/** Whether `paint` colours on this stream (for renderers such as Ink whose own detection ignores NO_COLOR). */
export const colorEnabled = (stream: NodeJS.WriteStream = process.stdout) => paint('red', 'x', stream) !== 'x';

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

const cell = (v: unknown) => (typeof v === 'object' ? JSON.stringify(v) : String(v));

/** key  value lines, keys aligned; undefined values are left out. */
export function printFields(fields: [string, unknown][]): void {
  const shown = fields.filter(([, v]) => v !== undefined && v !== null && v !== '');
  const width = Math.max(...shown.map(([k]) => k.length));
  for (const [k, v] of shown) process.stdout.write(`${paint('dim', k.padEnd(width))}  ${cell(v)}\n`);
}

/** What list commands print: the API objects (--json), ids only (-q), or a table. */
export function printList<T>(
  items: T[],
  o: { json?: boolean; quiet?: boolean },
  table: { id: (item: T) => string; headers: string[]; row: (item: T) => string[] },
): void {
  if (o.json) return printJson(items);
  if (o.quiet) return void process.stdout.write(items.map((item) => `${table.id(item)}\n`).join(''));
  printTable(table.headers, items.map(table.row));
}

/** The header and rows as lines, columns aligned to their widest cell. */
export function tableLines(headers: string[], rows: string[][]): string[] {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)];
}

/** An aligned table, its header bold on a terminal (padded before colouring, so escapes never shift columns). */
export function printTable(headers: string[], rows: string[][]): void {
  const [head, ...body] = tableLines(headers, rows);
  process.stdout.write(`${paint('bold', head!)}\n`);
  for (const line of body) process.stdout.write(`${line}\n`);
}

/** One ✓ / ✗ / ! line of a checklist (doctor), with what to do about it. */
export function printCheck(state: 'ok' | 'missing' | 'warning', name: string, text: string, width = 11): void {
  const mark = { ok: paint('green', '✓'), missing: paint('red', '✗'), warning: paint('yellow', '!') }[state];
  process.stdout.write(`${mark} ${name.padEnd(width)} ${state === 'ok' ? paint('dim', text) : text}\n`);
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);

/** Prints the server's code and message (and each invalid field) on stderr; the caller exits non-zero. */
export function printError(err: unknown): void {
  const label = paint('red', 'error:', process.stderr);
  if (err instanceof ApiCallError) {
    process.stderr.write(`${label} ${err.body.code}: ${err.body.message}\n`);
    for (const d of err.body.details ?? []) {
      if (!err.body.message.includes(d.message)) process.stderr.write(`  ${d.code}: ${d.message}\n`);
    }
    const inner = err.body.inner_error;
    if (inner) process.stderr.write(`  caused by ${inner.code}: ${inner.message}\n`);
    return;
  }
  const e = err as Error & { code?: string; cause?: { code?: string; message?: string } };
  const code = e?.code ?? e?.cause?.code;
  if (code && NETWORK_CODES.has(code)) {
    process.stderr.write(`${label} cannot reach the server: ${e.cause?.message ?? e.message}\n`);
    const url = process.env.KERNEL_BASE_URL;
    if (url) process.stderr.write(`  (KERNEL_BASE_URL is ${url}; unset it to use the local daemon, which starts by itself)\n`);
    return;
  }
  process.stderr.write(`${label} ${e?.message ?? String(err)}\n`);
}

/** The exit status for an error a command threw (commander has already printed its own). */
export function exitCodeFor(err: unknown): number {
  if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : EXIT.usage;
  return EXIT.api;
}

export function age(iso: string, now = Date.now()): string {
  return duration(now - Date.parse(iso));
}

/** A compact duration: 42s, 5m, 3h, 2d (negative counts as 0). */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** Time left as m:ss (or 1h05m), for the inactivity countdown. */
export function countdown(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** What the TIMEOUT column says: the countdown, or why there is none. */
export function timeLeft(w: WatchSession, now: number): string {
  if (w.timeout_at) return countdown(Date.parse(w.timeout_at) - now);
  if (w.cdp_clients + w.viewers > 0) return 'in use';
  return w.session.pool ? 'pool idle' : '—';
}
