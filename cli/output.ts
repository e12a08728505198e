import { ApiCallError } from '../src/client.js';

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** key  value lines, keys aligned; undefined values are left out. */
export function printFields(fields: [string, unknown][]): void {
  const shown = fields.filter(([, v]) => v !== undefined && v !== null && v !== '');
  const width = Math.max(...shown.map(([k]) => k.length));
  for (const [k, v] of shown) {
    process.stdout.write(`${k.padEnd(width)}  ${typeof v === 'object' ? JSON.stringify(v) : String(v)}\n`);
  }
}

/** What list commands print: the API objects (--json), ids only (-q), or a table. */
export function printList<T>(
  items: T[],
  o: { json?: boolean; quiet?: boolean },
  table: { id: (item: T) => string; headers: string[]; row: (item: T) => string[] },
): void {
  if (o.json) return printJson(items);
  if (o.quiet) return items.forEach((item) => process.stdout.write(`${table.id(item)}\n`));
  printTable(table.headers, items.map(table.row));
}

export function printTable(headers: string[], rows: string[][]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  process.stdout.write(`${line(headers)}\n`);
  for (const r of rows) process.stdout.write(`${line(r)}\n`);
}

/** Prints the server's code and message (and each invalid field) on stderr; the caller exits non-zero. */
export function printError(err: unknown): void {
  if (err instanceof ApiCallError) {
    process.stderr.write(`error: ${err.body.code}: ${err.body.message}\n`);
    const inner = err.body.inner_error;
    if (inner) process.stderr.write(`  caused by ${inner.code}: ${inner.message}\n`);
  } else {
    process.stderr.write(`error: ${(err as Error).message ?? String(err)}\n`);
  }
}

export function age(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}
