/** Percentiles of a sample set and the comparison table the bench prints. */

export interface Summary {
  n: number;
  p50: number;
  p95: number;
  p99: number;
}

/** Nearest-rank percentile: always a value that was actually observed, which suits small samples. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new Error('percentile of an empty sample');
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return sorted[rank - 1]!;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  return { n: sorted.length, p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), p99: percentile(sorted, 0.99) };
}

export type Unit = 'ms' | 'us';

/** One line of the result table: rbrowse against raw Chromium, in the unit samples were taken (ms). */
export interface Comparison {
  metric: string;
  unit: Unit;
  rbrowse: Summary;
  raw: Summary;
  /** Highest acceptable rbrowse/raw p50 ratio; undefined when the line is informational. */
  goal?: number;
  /** Highest acceptable rbrowse p50, in the samples' milliseconds (an absolute goal beside the ratio). */
  maxP50?: number;
}

export const ratio = (c: Comparison): number => c.rbrowse.p50 / c.raw.p50;

export function verdict(c: Comparison): string {
  if (c.goal === undefined && c.maxP50 === undefined) return 'info';
  const ok = (c.goal === undefined || ratio(c) <= c.goal) && (c.maxP50 === undefined || c.rbrowse.p50 <= c.maxP50);
  return ok ? 'PASS' : 'MISS';
}

function goalText(c: Comparison): string {
  const parts = [...(c.goal !== undefined ? [`<= ${c.goal}x`] : []), ...(c.maxP50 !== undefined ? [`p50 <= ${fmt(c.maxP50, c.unit)}`] : [])];
  return parts.length ? parts.join(', ') : '-';
}

/** Samples are kept in milliseconds; sub-millisecond metrics read better in microseconds. */
function fmt(ms: number, unit: Unit): string {
  return unit === 'us' ? `${Math.round(ms * 1000)}` : ms.toFixed(1);
}

const pair = (s: Summary, unit: Unit) => `${fmt(s.p50, unit)} / ${fmt(s.p95, unit)}`;

/** Columns padded to their widest cell, under a header and a rule. */
export function textTable(header: readonly string[], rows: readonly string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function renderTable(rows: readonly Comparison[]): string {
  const header = ['metric', 'n', 'rbrowse p50 / p95', 'raw p50 / p95', 'ratio p50 (p95)', 'goal', 'result'];
  const body = rows.map((c) => [
    `${c.metric} [${c.unit === 'us' ? 'µs' : 'ms'}]`,
    `${c.rbrowse.n}/${c.raw.n}`,
    pair(c.rbrowse, c.unit),
    pair(c.raw, c.unit),
    `${ratio(c).toFixed(2)}x (${(c.rbrowse.p95 / c.raw.p95).toFixed(2)}x)`,
    goalText(c),
    verdict(c),
  ]);
  return textTable(header, body);
}
