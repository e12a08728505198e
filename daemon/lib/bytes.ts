const UNITS: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** 512m, 2g, 1073741824 (bytes): a size as operators write it. */
export function parseBytes(raw: string, name: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(raw);
  if (!m) throw new Error(`${name} is not a size (for example 512m or 2g): ${raw}`);
  const bytes = Math.floor(Number(m[1]) * UNITS[m[2]!.toLowerCase()]!);
  if (bytes < 1024 * 1024) throw new Error(`${name} must be at least 1m: ${raw}`);
  return bytes;
}
