// Wall-clock nanoseconds: Date gives milliseconds, hrtime the finer part. Anchored once so the
// clock is monotonic within the daemon and two events never share a timestamp by rounding.
const anchorNs = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();
let lastNs = 0n;

/** Now as RFC 3339 with nanoseconds (kernel-wire: "invocations with nanoseconds"), always in UTC. */
export function nowNano(): string {
  let ns = anchorNs + process.hrtime.bigint();
  if (ns <= lastNs) ns = lastNs + 1n;
  lastNs = ns;
  const ms = Number(ns / 1_000_000n);
  const fraction = String(ns % 1_000_000_000n).padStart(9, '0');
  return `${new Date(ms).toISOString().slice(0, 19)}.${fraction}Z`;
}
