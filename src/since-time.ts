import { BadRequestError } from './errors.js';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `since` of a follow (or another time bound, named by `field`): an RFC 3339 time, or a duration
 * ago such as 30s, 5m, 1h30m, 7d. Milliseconds since the epoch.
 */
export function sinceTime(since: string | undefined, now = Date.now(), field = 'since'): number | undefined {
  if (since === undefined || since === '') return undefined;
  if (/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(since)) {
    let ms = 0;
    for (const [, n, , unit] of since.matchAll(/(\d+(\.\d+)?)(ms|s|m|h|d)/g)) ms += Number(n) * UNIT_MS[unit!]!;
    return now - ms;
  }
  const t = /^\d{4}-\d{2}-\d{2}T/.test(since) ? Date.parse(since) : NaN;
  if (Number.isNaN(t)) throw BadRequestError.field(field, 'must be an RFC 3339 time or a duration such as 5m');
  return t;
}
